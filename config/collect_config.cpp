#include "config/collect_config.h"

namespace perfsift::config {

const std::vector<KeyDef> &collect_keys() {
  static const std::vector<KeyDef> keys = {
      {"output", Type::String, std::string(""), "PERFSIFT_OUTPUT",
       "trace store to write (one HDF5 file per run); the collector is inert when empty"},
      {"spill_dir", Type::String, std::string(""), "PERFSIFT_SPILL_DIR",
       "directory of per-rank spill files; default OUTPUT.spill"},
      {"buffer_mb", Type::Int, int64_t{64}, "PERFSIFT_BUFFER_MB",
       "per-rank event buffer in MiB; when full, events are appended to the rank's spill file"},
      {"papi.events", Type::StringList,
       std::vector<std::string>{"PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L1_DCM", "PAPI_L1_DCA", "PAPI_L2_DCM",
                                "PAPI_L2_DCA"},
       "PERFSIFT_PAPI_EVENTS",
       "PAPI events read at region boundaries (comma list in the environment); events the "
       "machine lacks are recorded as unavailable"},
      {"mpi.groups", Type::StringList, std::vector<std::string>{"p2p", "coll", "wait", "probe", "comm", "io", "env"},
       "PERFSIFT_MPI_GROUPS", "MPI function groups to trace: p2p coll wait probe comm io env"},
      {"regions.functions", Type::Bool, false, "PERFSIFT_FUNCTION_REGIONS",
       "turn -finstrument-functions hooks into regions (coarse functions only; use include/exclude)"},
      {"regions.include", Type::StringList, std::vector<std::string>{"*"}, "PERFSIFT_FUNCTION_INCLUDE",
       "glob patterns of function names that become regions"},
      {"regions.exclude", Type::StringList, std::vector<std::string>{}, "PERFSIFT_FUNCTION_EXCLUDE",
       "glob patterns of function names never made regions (applied after include)"},
      {"python.sites", Type::Bool, true, "PERFSIFT_PYTHON_SITES",
       "in a Python program, an MPI call's site is the Python line that made it (mpi4py's calls); false: the "
       "extension module's address"},
      {"store.aggregate_mb", Type::Int, int64_t{256}, "PERFSIFT_AGGREGATE_MB",
       "consecutive ranks of a node whose records fit in this many MiB together are written to the store by one of "
       "them (fewer processes in the parallel HDF5 write); 0: every rank writes its own"},
      {"clock.sync_rounds", Type::Int, int64_t{20}, "PERFSIFT_CLOCK_SYNC_ROUNDS",
       "ping-pong rounds per rank when measuring clock offsets at init and finalize"},
      {"sites.wrappers", Type::StringList, std::vector<std::string>{}, "PERFSIFT_SITE_WRAPPERS",
       "glob patterns of the program's own MPI wrapper functions (e.g. \"Foam::reduce*\"); a call made from one "
       "is sited at the wrapper's caller, through a call path (comma list in the environment)"},
      {"sites.depth", Type::Int, int64_t{4}, "PERFSIFT_SITE_DEPTH",
       "most frames of a call path through wrapper functions, the caller included (2 to 16)"},
      {"node.name", Type::String, std::string(""), "PERFSIFT_NODE_NAME",
       "the name of the node this rank runs on (empty: MPI_Get_processor_name); ranks of one name share a node, and "
       "the replay gives on-node and off-node pairs their own network parameters"},
      {"network.probe", Type::Bool, true, "PERFSIFT_NETWORK_PROBE",
       "at MPI_Finalize, rank 0 measures the network with the next rank on its node and the first on another (about "
       "200 small messages per pair, its cost stored); the replay takes from it what the run has too few messages for"},
  };
  return keys;
}

CollectConfig load_collect_config(const std::string &path, const EnvLookup &env) {
  Values v = path.empty() ? parse(collect_keys(), "", "", env) : parse_file(collect_keys(), path, env);
  CollectConfig c;
  c.output = v.get_string("output");
  c.spill_dir = v.get_string("spill_dir");
  if (c.spill_dir.empty() && !c.output.empty()) c.spill_dir = c.output + ".spill";
  c.buffer_mb = v.get_int("buffer_mb");
  if (c.buffer_mb < 1) throw ConfigError((path.empty() ? "PERFSIFT_BUFFER_MB" : path) + ": buffer_mb must be >= 1");
  c.aggregate_mb = v.get_int("store.aggregate_mb");
  if (c.aggregate_mb < 0)
    throw ConfigError((path.empty() ? "PERFSIFT_AGGREGATE_MB" : path) + ": store.aggregate_mb must be >= 0");
  c.papi_events = v.get_list("papi.events");
  c.mpi_groups = v.get_list("mpi.groups");
  c.function_regions = v.get_bool("regions.functions");
  c.function_include = v.get_list("regions.include");
  c.function_exclude = v.get_list("regions.exclude");
  c.clock_sync_rounds = v.get_int("clock.sync_rounds");
  c.python_sites = v.get_bool("python.sites");
  c.site_wrappers = v.get_list("sites.wrappers");
  c.site_depth = v.get_int("sites.depth");
  if (c.site_depth < 2 || c.site_depth > 16)
    throw ConfigError((path.empty() ? "PERFSIFT_SITE_DEPTH" : path) + ": sites.depth must be 2 to 16");
  c.node_name = v.get_string("node.name");
  c.network_probe = v.get_bool("network.probe");
  c.source_text = v.source_text;
  return c;
}

}  // namespace perfsift::config
