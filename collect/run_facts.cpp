#include "run_facts.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>

#include "ops.h"
#include "tick_clock.h"

namespace perfsift::collect {

namespace {

std::string iso_utc_now() {
  char buf[64];
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &t);
  return buf;
}

int64_t epoch_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto &c : s)
    if (c == '\0') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The distinct node names of the run, comma-separated, in rank order of first appearance
// (the platform a trained classifier is tied to), and each rank's index among them.
// Collective over `comm`.
void record_hosts(MPI_Comm comm, int nranks, const std::string &node_name, io::RunInfo &run) {
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  if (node_name.empty())
    PMPI_Get_processor_name(mine, &len);
  else
    std::memcpy(mine, node_name.data(), std::min<size_t>(node_name.size(), MPI_MAX_PROCESSOR_NAME - 1));
  std::vector<char> all(static_cast<size_t>(nranks) * MPI_MAX_PROCESSOR_NAME);
  PMPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  std::vector<std::string> names;
  run.rank_hosts.assign(static_cast<size_t>(nranks), 0);
  for (int r = 0; r < nranks; ++r) {
    std::string n(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME],
                  strnlen(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME], MPI_MAX_PROCESSOR_NAME));
    const auto at = std::find(names.begin(), names.end(), n);
    run.rank_hosts[static_cast<size_t>(r)] = static_cast<int32_t>(at - names.begin());
    if (at == names.end()) names.push_back(n);
  }
  run.hostname_list.clear();
  for (const auto &n : names) run.hostname_list += (run.hostname_list.empty() ? "" : ",") + n;
}

}  // namespace

bool load_collector_config(int rank, config::CollectConfig &out) {
  const char *cfg_path = std::getenv("PERFSIFT_CONFIG");
  try {
    out = config::load_collect_config(cfg_path ? cfg_path : "", config::process_environment());
  } catch (const std::exception &e) {
    if (rank == 0) std::fprintf(stderr, "perfsift: %s; tracing is off for this run\n", e.what());
    return false;
  }
  return !out.output.empty();
}

void apply_test_clock_skew(int rank, int64_t &t_before_init) {
  const char *skew = std::getenv("PERFSIFT_TEST_CLOCK_SKEW");
  double off = 0, ppm = 0;
  if (!skew || std::sscanf(skew, "%lf:%lf", &off, &ppm) != 2) return;
  clock_skew_for_test(rank, off, ppm);
  clock_origin();
  t_before_init = now_ticks();
}

uint32_t mpi_group_mask(const std::vector<std::string> &groups, Warnings &warnings) {
  uint32_t mask = 0;
  for (const auto &g : groups) {
    bool known = false;
    for (int i = 0; i < kGroupCount; ++i)
      if (g == kGroupNames[i]) mask |= 1u << i, known = true;
    if (!known)
      warnings.say("unknown MPI group '" + g + "' in mpi.groups ignored (valid: p2p coll wait probe comm io env)");
  }
  return mask;
}

void record_run_facts(MPI_Comm comm, int nranks, const std::string &node_name, io::RunInfo &run) {
  run.nranks = nranks;
  run.command = read_cmdline();
  run.start_time = iso_utc_now();
  run.start_epoch_ns = epoch_ns();
  PMPI_Bcast(&run.start_epoch_ns, 1, MPI_INT64_T, 0, comm);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  PMPI_Get_library_version(lib, &len);
  run.mpi_library = std::string(lib, len);
  while (!run.mpi_library.empty() && std::isspace(static_cast<unsigned char>(run.mpi_library.back())))
    run.mpi_library.pop_back();
  record_hosts(comm, nranks, node_name, run);
}

}  // namespace perfsift::collect
