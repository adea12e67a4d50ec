// LogGPS parameter files: `perfsift calibrate` writes them, the whatif stage reads them
// (whatif.loggps), and writes the parameters it replayed with as /whatif attributes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "io/results_store.h"
#include "kernels/loggps.h"

namespace perfsift::pipeline {

// Reads a LogGPS parameter file (`perfsift calibrate` writes it). Throws config::ConfigError.
kernels::LogGPS read_loggps(const std::string &path);
void write_loggps(const std::string &path, const kernels::LogGPS &p, const std::string &comment);
// The parameters as /whatif attributes: loggps_source, loggps_L_ns, ...
std::vector<std::pair<std::string, io::AttrValue>> loggps_attributes(const kernels::LogGPS &p);

}  // namespace perfsift::pipeline
