// The hardware counters the configuration asks for (PAPI): one event set, started at
// MPI_Init, read at thread 0's region boundaries, stopped at MPI_Finalize.
#pragma once

#include <string>
#include <vector>

#include "io/trace_model.h"
#include "warnings.h"

namespace perfsift::collect {

class PapiCounters {
 public:
  // Starts those of `wanted` this machine has; the others are said once and named in
  // the run's facts (`run.counters_unavailable`, beside `run.counters_recorded`).
  void start(const std::vector<std::string> &wanted, Warnings &warnings, io::RunInfo &run);
  // The counters now, one per name (none when no counter runs).
  void read(std::vector<long long> &out) const;
  void stop();
  const std::vector<std::string> &names() const { return m_names; }

 private:
  int m_set = -1;
  std::vector<std::string> m_names;
};

}  // namespace perfsift::collect
