// Writes the spill fuzzer's seeds (corpus/spill/) with this build's spill writer.
//
// usage: make_spill_seeds CORPUS_DIR
//
// A spill file of another format version is refused at its header, so the seeds are
// remade whenever kSpillVersion or the layout changes (docs/crashes.md, "Spill files");
// the fuzz_spill_seeds_current test fails until they are. Two files, as the collector leaves them:
// one_flush_no_state.bin, a rank killed after one flush (two threads' events, a request,
// its completion, a step; no state chunk), and two_flushes_and_state.bin, a rank that
// reached its closing state.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "io/spill.h"

namespace {

using namespace perfsift::io;

constexpr int32_t kRanks = 2;
constexpr int64_t kStartNs = 1000;

Event call(int32_t thread, int64_t enter, uint16_t op, int32_t peer) {
  Event e;
  e.t_enter = enter;
  e.t_exit = enter + 40;
  e.op = op;
  e.peer = peer;
  e.tag = 7;
  e.comm = 0;
  e.bytes = peer >= 0 ? 64 : 0;
  e.thread = thread;
  return e;
}

// One flush: three events of thread 0 and one of thread 1; the first starts a receive that
// the third completes.
bool write_flush(SpillWriter &w, int64_t t0) {
  std::vector<Event> events = {call(0, t0, 3, 1), call(0, t0 + 100, 5, 1), call(0, t0 + 200, 9, -1),
                               call(1, t0 + 50, 5, 0)};
  events[0].request = 1;
  const RequestRecord request{1, thread_event(0, 0), 1, 7, 0, kReqRecv, 64};
  const CompletionRecord completion{thread_event(0, 2), 1, 1, 7, 64, 0, 0};
  const StepRecord step{1, 0, t0, t0 + 300};
  return w.write_records(events, std::vector<RequestRecord>{request}, std::vector<CompletionRecord>{completion},
                         std::vector<StepRecord>{step});
}

SpillState closing_state(int32_t rank) {
  SpillState s;
  RunInfo &run = s.run;
  run.nranks = kRanks;
  run.command = "./app --steps 2";
  run.start_time = "2026-01-01T00:00:00Z";
  run.start_epoch_ns = 1767225600000000000;
  run.counters_unavailable = {"PAPI_L2_DCM"};
  run.collector_config = "buffer_mb = 8\n";
  run.mpi_library = "Open MPI v4.1";
  run.hostname_list = "node001,node002";
  run.rank_hosts = {0, 1};
  run.network_probe.add(1, NetworkProbe::Transfer, 2048, 3100);
  run.network_probe.cost_ns = 900000;
  RankTrace &t = s.profile_part;
  t.rank = rank;
  t.complete = true;
  t.region_paths = {"(program)", "solve"};
  t.metric_names = {"visits", "wall"};
  t.profile = {1, 2, 0.5, 0.25};
  t.comms = {{42, {0, 1}, {}}};
  t.callsites = {{"/bin/app", 0x40, "main", 4, "app.c", 12, {{"/lib/libw.so", 0x1c, "reduce", 0x1c}}}};
  t.clock = ClockRecord{5, 6, 100, 900, 2, 3};
  return s;
}

// Writes DIR/rank-RANK.bin and renames it to NAME.
bool write_seed(const std::filesystem::path &dir, int32_t rank, bool with_state, const char *name) {
  SpillWriter w;
  std::string error;
  if (!w.open(dir.string(), make_spill_header(rank, kRanks, kStartNs), &error)) {
    std::fprintf(stderr, "make_spill_seeds: %s\n", error.c_str());
    return false;
  }
  bool ok = write_flush(w, 10);
  if (with_state) ok = ok && write_flush(w, 1000) && w.write_state(closing_state(rank));
  w.close();
  std::error_code ec;
  std::filesystem::rename(spill_path(dir.string(), rank), dir / name, ec);
  if (!ok || ec) std::fprintf(stderr, "make_spill_seeds: cannot write %s\n", (dir / name).c_str());
  return ok && !ec;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_spill_seeds CORPUS_DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const bool ok =
      write_seed(dir, 1, false, "one_flush_no_state.bin") && write_seed(dir, 0, true, "two_flushes_and_state.bin");
  return ok ? 0 : 1;
}
