// Trace stores as OTF2 archives (see otf2_export.h and docs/otf2.md, "Export"): the plan
// of the definitions, each rank's events (io/otf2_rank_writer.cpp), then the definitions
// (io/otf2_export_definitions.cpp), in a temporary directory renamed into place.
#include "io/otf2_export.h"

#include <hdf5.h>
#include <otf2/otf2.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "io/clock_correction.h"
#include "io/hdf5_util.h"
#include "io/otf2_export_plan.h"
#include "io/otf2_messages.h"
#include "io/trace_store.h"

namespace perfsift::io {

namespace fs = std::filesystem;

std::string hdf5_store_format(const std::string &path) {
  h5::SilenceHdf5 quiet;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || H5Fis_hdf5(path.c_str()) <= 0) return "";
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0)
    throw Error(path +
                ": HDF5 cannot open it (truncated or corrupt); if it is a collected run that crashed, `perfsift "
                "recover` writes it again from the spill files, else collect the run again");
  h5::Handle file(f, H5Fclose);
  const h5::Ctx ck(path);
  return h5::read_string_attr(ck, file, "format");
}

std::string Otf2Export::warning(const std::string &store) const {
  if (unwritten.empty()) return "";
  std::string w = store + ": not written to the OTF2 archive:";
  bool first = true;
  for (const auto &[kind, n] : unwritten) {
    w += (first ? " " : ", ") + std::to_string(n) + " " + kind;
    first = false;
  }
  return w + " (docs/otf2.md, Export)";
}

namespace {

using namespace otf2_write;

// DIR: a previous archive may be replaced; anything else is the user's and stays.
void check_output(const std::string &dir) {
  std::error_code ec;
  const fs::path d(dir);
  const std::string leaf = d.filename().string();
  if (leaf.empty() || leaf == "." || leaf == "..")
    throw Error(dir + ": name a new directory for the archive (-o run-otf2); it is replaced whole");
  const fs::path parent = d.has_parent_path() ? d.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    throw Error(dir + ": the directory " + parent.string() + " does not exist; create it or choose another -o");
  if (!fs::exists(d, ec)) return;
  if (!fs::is_directory(d, ec))
    throw Error(dir + ": is a file; -o names the directory to write the archive into (DIR/traces.otf2)");
  // Only an archive as this command writes it is replaced: anything else there is the user's.
  bool archive = false;
  for (const auto &entry : fs::directory_iterator(d, ec)) {
    const std::string n = entry.path().filename().string();
    if (n == "traces.otf2")
      archive = true;
    else if (n != "traces.def" && n != "traces")
      throw Error(dir + ": exists and holds other files than an OTF2 archive (" + n +
                  "); choose a new directory for -o (it is replaced whole)");
  }
  if (!archive && !fs::is_empty(d, ec))
    throw Error(dir + ": exists and is not an OTF2 archive; choose a new directory for -o (it is replaced whole)");
}

// What the definitions need before the events are written: counters, regions, call sites
// and communicators; what the archive cannot hold is counted in p.out.unwritten.
void plan_definitions(Plan &p) {
  const TraceStore &st = p.st;
  const RunInfo &run = st.run();
  const int32_t P = st.nranks();
  Otf2Export &out = p.out;
  // Counters: the profile's metrics beyond the built-in ones.
  for (size_t k = kBuiltinMetricCount; k < st.metrics().size(); ++k) p.counters.push_back(st.metrics()[k]);
  if (p.counters.size() > 255) {
    out.unwritten["counters beyond 255 (one metric class)"] += static_cast<int64_t>(p.counters.size() - 255);
    p.counters.resize(255);
  }
  // Regions: one OTF2 region per user region name (the tree is the nesting of Enter/Leave).
  const auto &regions = st.regions();
  p.region_of.assign(regions.size(), 0);
  for (size_t k = 1; k < regions.size(); ++k) {
    auto [it, fresh] = p.names.emplace(regions[k].name, static_cast<uint32_t>(p.region_names.size()));
    if (fresh) p.region_names.push_back(regions[k].name);
    p.region_of[k] = it->second;
  }
  for (const auto &op : st.ops()) p.region_names.push_back(op);
  p.plan_sites();
  p.comm_written.assign(st.comms().size(), true);
  for (size_t c = 0; c < st.comms().size(); ++c)
    if (!st.comms()[c].remote.empty()) {
      p.comm_written[c] = false;
      ++out.unwritten["intercommunicators (their messages name no communicator)"];
    }
  if (!run.missing_ranks.empty())
    out.unwritten["ranks without data (written as ranks without events)"] +=
        static_cast<int64_t>(run.missing_ranks.size());
  {
    std::vector<std::string> hosts;
    split(run.hostname_list, ',', hosts);
    if (hosts.size() > 1 && static_cast<int32_t>(hosts.size()) < P && run.rank_hosts.size() != static_cast<size_t>(P))
      out.unwritten["hosts whose ranks the store does not name (ranks placed in blocks)"] +=
          static_cast<int64_t>(hosts.size());
  }
}

// The global clock's value at the store's time 0. The global clock is rank 0's; store time
// t is global time t + start.
int64_t global_start(const TraceStore &st, const std::vector<ClockRecord> &clocks) {
  const int32_t P = st.nranks();
  int64_t start = clocks.empty() ? 0 : std::max<int64_t>(0, clocks[0].local_init_ns);
  {
    // Every local time well above 0 (a second of margin): the global offset moves up when
    // the store's clocks do not give one (an imported store) or times reach below it.
    int64_t need = 1000000000;
    const std::vector<Event> ends = st.rank_ends(0, P);  // each rank's first and last event
    for (int32_t r = 0; r < P; ++r)
      if (st.event_offsets()[static_cast<size_t>(r) + 1] > st.event_offsets()[static_cast<size_t>(r)])
        need = std::max(need, 1000000000 - ends[2 * static_cast<size_t>(r)].t_enter);
    int64_t off = 0;
    for (const auto &c : clocks) off = std::max({off, std::abs(c.offset_init_ns), std::abs(c.offset_fin_ns)});
    if (start < need + off) start += need + off;
  }
  return start;
}

// Every rank's events written, each checked against the store's tables first; the number
// of step numbers (which OTF2 has no place for).
int64_t write_ranks(const std::string &store, const TraceStore &st, const std::vector<ClockRecord> &clocks, Plan &p,
                    const Writer &wr) {
  const RunInfo &run = st.run();
  const int32_t P = st.nranks();
  const auto &regions = st.regions();
  const int64_t start = p.start;
  const std::set<int32_t> truncated(run.truncated_ranks.begin(), run.truncated_ranks.end());
  int64_t step_numbers = 0;
  for (int32_t r = 0; r < P; ++r) {
    const std::vector<Event> ev = st.events(r, r + 1);
    const std::vector<RequestRecord> requests = st.requests(r, r + 1);
    const std::vector<CompletionRecord> completions = st.completions(r, r + 1);
    std::vector<StepRecord> steps = st.steps(r, r + 1);
    for (const auto &s : steps) {
      if (s.region <= 0 || static_cast<size_t>(s.region) >= regions.size())
        throw Error(store + ": /steps of rank " + std::to_string(r) + " names region " + std::to_string(s.region) +
                    " outside /regions (damaged store); collect the run again");
      step_numbers += s.step >= 0;
    }
    std::sort(steps.begin(), steps.end(), [](const StepRecord &a, const StepRecord &b) {
      return a.t_begin != b.t_begin ? a.t_begin < b.t_begin : a.t_end > b.t_end;
    });
    for (const auto &e : ev)
      if (e.op >= st.ops().size())
        throw Error(store + ": an event of rank " + std::to_string(r) + " names operation " + std::to_string(e.op) +
                    " outside /ops (damaged store); collect the run again");
    std::vector<double> profile;
    for (const auto &name : p.counters) {
      const auto row = st.profile(name, r, r + 1);
      profile.insert(profile.end(), row.begin(), row.end());
    }
    Clock clock;
    clock.c = clocks[static_cast<size_t>(r)];
    clock.any = clock.c.offset_init_ns != 0 || clock.c.offset_fin_ns != 0 || clock.c.local_init_ns != 0;
    clock.start = start;
    write_rank(p, wr, r, ev, requests, completions, std::move(steps), clock, truncated.count(r) > 0, profile);
  }
  return step_numbers;
}

}  // namespace

Otf2Export write_store_otf2(const std::string &store, const std::string &output) {
  std::string dir = output;  // run-otf2/ is run-otf2
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const TraceStore st(store);
  check_output(dir);
  Otf2Export out;
  out.ranks = st.nranks();
  Plan p(st, out);
  plan_definitions(p);
  std::vector<ClockRecord> clocks = st.clocks();
  clocks.resize(static_cast<size_t>(st.nranks()));
  p.start = global_start(st, clocks);

  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  {
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }
  Writer wr(tmp, dir);
  wr.ok(OTF2_Archive_OpenEvtFiles(wr.get()), "opening the event files");
  const int64_t step_numbers = write_ranks(store, st, clocks, p, wr);
  wr.ok(OTF2_Archive_CloseEvtFiles(wr.get()), "closing the event files");
  if (step_numbers) out.unwritten["step numbers of step-region visits"] += step_numbers;
  if (p.silent_calls) {
    std::string ops;
    for (const auto &o : p.silent_ops) ops += (ops.empty() ? "" : ", ") + o;
    out.unwritten["partners or communicators of MPI calls without an OTF2 record for them (" + ops + ")"] +=
        p.silent_calls;
  }
  write_definitions(wr, p);
  out.locations = static_cast<int64_t>(p.locations.size());
  wr.finish();
  return out;
}

}  // namespace perfsift::io
