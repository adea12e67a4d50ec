// perfsift recover: rebuild a store from the spill files of a run that died.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <string>
#include <utility>
#include <regex>

#include "io/spill.h"
#include "io/trace_store.h"
#include "io/clock_correction.h"
#include "ops.h"
#include "pipeline/cli/commands.h"

namespace fs = std::filesystem;

namespace perfsift::cli {

namespace {

void warn(const std::string &line) { std::fprintf(stderr, "perfsift: warning: %s\n", line.c_str()); }

struct SpillFile {
  std::string path;
  long long name_rank;  // N of rank-N.bin
  io::SpillContents c;
};

bool has_data(const io::SpillContents &c) {
  return c.has_state || !c.trace.events.empty() || !c.trace.requests.empty() || !c.trace.completions.empty() ||
         !c.trace.steps.empty();
}

// Every readable rank-N.bin in the spill directory, in rank order; each one that cannot
// be used gets one warning line naming it and what is wrong.
std::vector<SpillFile> read_spills(const std::string &spill_dir) {
  std::vector<std::pair<long long, std::string>> names;
  const std::regex name_re("rank-([0-9]{1,9})\\.bin");
  for (const auto &entry : fs::directory_iterator(spill_dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, name_re)) continue;
    std::error_code ec;
    if (!fs::is_regular_file(entry.path(), ec)) {
      warn(entry.path().string() + ": not a regular file; ignored");
      continue;
    }
    names.emplace_back(std::stoll(m[1].str()), entry.path().string());
  }
  std::sort(names.begin(), names.end());
  std::vector<SpillFile> files;
  for (auto &[n, path] : names) {
    try {
      files.push_back({path, n, io::read_spill(path)});
      if (!files.back().c.warning.empty()) warn(files.back().c.warning);
    } catch (const std::exception &e) {
      warn(std::string(e.what()) + "; rank " + std::to_string(n) + " is treated as missing");
    }
  }
  return files;
}

// The run most files belong to (number of ranks and start time in the header); files of
// another run, with a rank that disagrees with their name, or repeating a rank are dropped
// with one line each.
std::vector<io::SpillContents> select_run(std::vector<SpillFile> &files) {
  std::map<std::pair<int32_t, int64_t>, int> runs;
  for (const auto &f : files) ++runs[{f.c.header.nranks, f.c.header.start_ns}];
  std::pair<int32_t, int64_t> run{};
  int best = 0;
  for (const auto &f : files)  // the most files; on a tie, the run of the lowest rank file
    if (int k = runs[{f.c.header.nranks, f.c.header.start_ns}]; k > best) {
      best = k;
      run = {f.c.header.nranks, f.c.header.start_ns};
    }
  std::map<int32_t, size_t> chosen;  // rank -> index into files
  for (size_t i = 0; i < files.size(); ++i) {
    const auto &f = files[i];
    const auto &h = f.c.header;
    if (std::pair{h.nranks, h.start_ns} != run) {
      warn(f.path + ": from another run (" + std::to_string(h.nranks) + " ranks, started at clock " +
           std::to_string(h.start_ns) + " ns; the other files: " + std::to_string(run.first) + " ranks, " +
           std::to_string(run.second) + " ns); ignored");
      continue;
    }
    if (h.rank != f.name_rank) {
      warn(f.path + ": its header says rank " + std::to_string(h.rank) + " (a renamed or copied file?); ignored");
      continue;
    }
    auto [it, fresh] = chosen.emplace(h.rank, i);
    if (!fresh) {
      // Two files of one rank (rank-1.bin and rank-01.bin): keep the one with more data.
      auto &kept = files[it->second];
      auto size = [](const io::SpillContents &c) { return std::pair{c.has_state, c.trace.events.size()}; };
      const bool better = size(f.c) > size(kept.c);
      warn((better ? kept.path : f.path) + ": rank " + std::to_string(h.rank) + " again (" +
           (better ? f.path : kept.path) + " holds it too, with as much data or more); ignored");
      if (better) it->second = i;
    }
  }
  std::vector<io::SpillContents> parts;
  for (auto &[rank, i] : chosen) {
    if (!has_data(files[i].c) && files[i].c.warning.empty())
      warn(files[i].path + ": header only (rank " + std::to_string(rank) +
           " ended before its first flush); it has no data");
    parts.push_back(std::move(files[i].c));
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

// Events hold operation codes of this perfsift's wrapper table: the first one beyond it
// means damaged records (or another perfsift's file); keep the events before it.
void drop_unknown_ops(io::RankTrace &t, int32_t rank) {
  const size_t nops = std::size(collect::kOps);
  auto bad = std::find_if(t.events.begin(), t.events.end(), [&](const io::Event &e) { return e.op >= nops; });
  if (bad == t.events.end()) return;
  warn("rank " + std::to_string(rank) + ": event " + std::to_string(bad - t.events.begin()) + " has operation code " +
       std::to_string(bad->op) + ", beyond this perfsift's " + std::to_string(nops) +
       " (a damaged file?); kept the events before it");
  t.events.erase(bad, t.events.end());
  t.complete = false;
}

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
    if (r < 0 || r >= nranks || !has_data(p)) continue;  // header only: the rank died before any flush
    io::RankTrace t = std::move(p.trace);
    t.rank = r;
    drop_unknown_ops(t, p.header.rank);
    if (!p.has_state) {
      // Events only (spilled before the crash): no profile, clock unknown.
      t.complete = false;
      t.region_paths.clear();
    }
    if (!p.warning.empty()) t.complete = false;  // the file was cut short or damaged: its end is lost
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

// How the program ended when a rank called MPI_Abort, from the store just written (its
// call sites are named there); empty when none did.
std::string abort_in(const std::string &store_path) {
  const io::TraceStore store(store_path);
  const io::AbortRecord abort = io::find_abort(store.ops(), store.rank_ends(0, store.nranks()), 0);
  return abort.rank < 0 ? "" : abort_phrase(abort, store.callsites());
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
  auto files = read_spills(o.spill_dir);
  if (files.empty()) throw std::runtime_error(o.spill_dir + ": no readable rank-N.bin spill files; nothing to recover");
  auto parts = select_run(files);
  if (parts.empty())
    throw std::runtime_error(o.spill_dir +
                             ": no usable rank-N.bin spill file (see the warnings above); nothing to recover");
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
  if (const std::string aborted = abort_in(o.output); !aborted.empty())
    std::fprintf(stderr, "perfsift: the program aborted: %s\n", aborted.c_str());
  return 0;
}

}  // namespace perfsift::cli
