// The collector's configuration (collect.toml): the key table and a typed view.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"

namespace perfsift::config {

const std::vector<KeyDef> &collect_keys();

struct CollectConfig {
  std::string output;                    // trace store path
  std::string spill_dir;                 // per-rank spill files; default OUTPUT.spill
  int64_t buffer_mb = 64;                // per-rank event buffer before spilling
  int64_t aggregate_mb = 256;            // records per store writer (collect/store_writers.h)
  std::vector<std::string> papi_events;  // read at region boundaries
  std::vector<std::string> mpi_groups;   // traced function groups
  bool function_regions = false;         // -finstrument-functions hooks become regions
  std::vector<std::string> function_include;
  std::vector<std::string> function_exclude;
  int64_t clock_sync_rounds = 20;
  bool python_sites = true;                // mpi4py's calls placed at their Python line (collect/python_frames.h)
  std::vector<std::string> site_wrappers;  // the program's own MPI wrapper functions (glob patterns)
  int64_t site_depth = 4;                  // most frames in a call path through them
  std::string node_name;                   // empty: MPI_Get_processor_name
  bool network_probe = true;               // collect/network_probe.h at MPI_Finalize
  std::string source_text;
};

// Reads PERFSIFT_CONFIG (if set) and the PERFSIFT_* overrides. Throws ConfigError.
CollectConfig load_collect_config(const std::string &path, const EnvLookup &env);

}  // namespace perfsift::config
