// perfsift recover: rebuild a store from the spill files of a run that died.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <regex>

#include "io/spill.h"
#include "io/trace_store.h"
#include "io/clock_correction.h"
#include "ops.h"
#include "pipeline/cli/commands.h"

namespace fs = std::filesystem;

namespace perfsift::cli {

int run_recover(const RecoverOptions &o) {
  if (!fs::is_directory(o.spill_dir))
    throw std::runtime_error(o.spill_dir + ": no such spill directory (it is OUTPUT.spill next to the intended store)");
  std::vector<io::SpillContents> parts;
  const std::regex name_re("rank-([0-9]+)\\.bin");
  for (const auto &entry : fs::directory_iterator(o.spill_dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, name_re)) continue;
    try {
      parts.push_back(io::read_spill(entry.path().string()));
      if (!parts.back().warning.empty()) std::fprintf(stderr, "perfsift: warning: %s\n", parts.back().warning.c_str());
    } catch (const std::exception &e) {
      std::fprintf(stderr, "perfsift: warning: %s; that rank is treated as missing\n", e.what());
    }
  }
  if (parts.empty()) throw std::runtime_error(o.spill_dir + ": no readable rank-N.bin spill files; nothing to recover");

  const int32_t nranks = parts.front().header.nranks;
  io::RunInfo run;
  for (const auto &p : parts)
    if (p.has_state) {
      run = p.run;
      break;
    }
  run.nranks = nranks;
  run.incomplete = true;
  std::vector<io::RankTrace> traces(nranks);
  std::vector<bool> present(nranks, false);
  for (auto &p : parts) {
    const int32_t r = p.header.rank;
    if (r < 0 || r >= nranks) continue;
    if (!p.has_state && p.trace.events.empty()) continue;  // header only: the rank died before any flush
    io::RankTrace t = std::move(p.trace);
    t.rank = r;
    if (!p.has_state) {
      // Events only (spilled before the crash): no profile, clock unknown.
      t.complete = false;
      t.region_paths.clear();
    }
    io::correct_times(t, p.header.start_ns);
    if (!t.complete) run.truncated_ranks.push_back(r);
    traces[r] = std::move(t);
    present[r] = true;
  }
  for (int32_t r = 0; r < nranks; ++r) {
    traces[r].rank = r;
    if (!present[r]) {
      run.missing_ranks.push_back(r);
      traces[r].complete = false;
    }
  }
  std::sort(run.truncated_ranks.begin(), run.truncated_ranks.end());
  ensure_mpi();
  // Spill files hold operation codes of this perfsift's wrapper table.
  std::vector<std::string> op_names;
  for (const auto &op : collect::kOps) op_names.emplace_back(op.name);
  io::write_trace_store(MPI_COMM_SELF, o.output, run, traces, op_names);
  std::string missing, truncated;
  for (auto r : run.missing_ranks) missing += (missing.empty() ? "" : ",") + std::to_string(r);
  for (auto r : run.truncated_ranks) truncated += (truncated.empty() ? "" : ",") + std::to_string(r);
  std::fprintf(stderr, "perfsift: recovered %s from %d of %d ranks; marked incomplete (missing ranks: %s; ended without MPI_Finalize: %s)\n",
               o.output.c_str(), static_cast<int>(std::count(present.begin(), present.end(), true)), nranks, missing.empty() ? "none" : missing.c_str(),
               truncated.empty() ? "none" : truncated.c_str());
  return 0;
}

}  // namespace perfsift::cli
