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

namespace {

// Every readable rank-N.bin in the spill directory; an unreadable one is warned about.
std::vector<io::SpillContents> read_spills(const std::string &spill_dir) {
  std::vector<io::SpillContents> parts;
  const std::regex name_re("rank-([0-9]+)\\.bin");
  for (const auto &entry : fs::directory_iterator(spill_dir)) {
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
  return parts;
}

// The store's contents rebuilt from the spilled parts: the run marked incomplete, with
// its missing and truncated ranks, and one trace per rank.
struct Recovered {
  io::RunInfo run;
  std::vector<io::RankTrace> traces;
  std::vector<bool> present;  // per rank: its spill file had data
};

Recovered assemble(std::vector<io::SpillContents> &parts) {
  const int32_t nranks = parts.front().header.nranks;
  Recovered rc;
  for (const auto &p : parts)
    if (p.has_state) {
      rc.run = p.run;
      break;
    }
  rc.run.nranks = nranks;
  rc.run.incomplete = true;
  rc.traces.resize(nranks);
  rc.present.assign(nranks, false);
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
    if (!t.complete) rc.run.truncated_ranks.push_back(r);
    rc.traces[r] = std::move(t);
    rc.present[r] = true;
  }
  for (int32_t r = 0; r < nranks; ++r) {
    rc.traces[r].rank = r;
    if (!rc.present[r]) {
      rc.run.missing_ranks.push_back(r);
      rc.traces[r].complete = false;
    }
  }
  std::sort(rc.run.truncated_ranks.begin(), rc.run.truncated_ranks.end());
  return rc;
}

std::string comma_list(const std::vector<int32_t> &ranks) {
  std::string s;
  for (auto r : ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
  return s.empty() ? "none" : s;
}

}  // namespace

int run_recover(const RecoverOptions &o) {
  if (!fs::is_directory(o.spill_dir))
    throw std::runtime_error(o.spill_dir + ": no such spill directory (it is OUTPUT.spill next to the intended store)");
  auto parts = read_spills(o.spill_dir);
  if (parts.empty()) throw std::runtime_error(o.spill_dir + ": no readable rank-N.bin spill files; nothing to recover");
  Recovered rc = assemble(parts);
  ensure_mpi();
  // Spill files hold operation codes of this perfsift's wrapper table.
  std::vector<std::string> op_names;
  for (const auto &op : collect::kOps) op_names.emplace_back(op.name);
  io::write_trace_store(MPI_COMM_SELF, o.output, rc.run, rc.traces, op_names);
  std::fprintf(stderr,
               "perfsift: recovered %s from %d of %d ranks; marked incomplete (missing ranks: %s; ended without "
               "MPI_Finalize: %s)\n",
               o.output.c_str(), static_cast<int>(std::count(rc.present.begin(), rc.present.end(), true)),
               rc.run.nranks, comma_list(rc.run.missing_ranks).c_str(), comma_list(rc.run.truncated_ranks).c_str());
  return 0;
}

}  // namespace perfsift::cli
