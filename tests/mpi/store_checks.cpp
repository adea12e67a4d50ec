// Expectations on stores written by tests/apps under real mpirun (see run_app_test.sh).
// STORE names the store, NRANKS the rank count. Each suite matches one app's documented
// known answer.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "io/region_path.h"
#include "io/trace_store.h"

using perfsift::io::Event;
using perfsift::io::TraceStore;

namespace {

// Executions of step regions only (/steps also holds plain regions, step = -1).
std::vector<perfsift::io::StepRecord> step_rows(const perfsift::io::TraceStore &st, int r) {
  std::vector<perfsift::io::StepRecord> out;
  for (const auto &s : st.steps(r, r + 1))
    if (s.step >= 0) out.push_back(s);
  return out;
}

std::string store_path() {
  const char *s = std::getenv("STORE");
  return s ? s : "";
}
int nranks_expected() {
  const char *s = std::getenv("NRANKS");
  return s ? std::atoi(s) : 0;
}

// ops -> count for one rank
std::map<std::string, int> op_counts(const TraceStore &st, int rank) {
  std::map<std::string, int> out;
  for (const auto &e : st.events(rank, rank + 1)) ++out[st.ops().at(e.op)];
  return out;
}

int region_index(const TraceStore &st, const std::string &path) {
  for (const auto &r : st.regions())
    if (r.path == path) return r.id;
  return -1;
}

double profile_at(const TraceStore &st, const std::string &metric, int rank, const std::string &path) {
  auto v = st.profile(metric);
  int g = region_index(st, path);
  EXPECT_GE(g, 0) << "region " << path;
  return v[static_cast<size_t>(rank) * st.regions().size() + g];
}

// A series of block reads into one vector (the matched run's build) gives each block's
// rows as a fresh read does: a smaller block after a larger one leaves no stale rows. So
// does the read through HDF5 (tables without a usable chunk index), against the chunk
// path. Returns the whole run's rows per table (requests, completions, steps).
std::array<size_t, 3> check_block_reads(const TraceStore &st) {
  const int n = st.run().nranks;
  if (n < 3) {
    ADD_FAILURE() << "the block reads need 3 ranks or more, the store has " << n;
    return {};
  }
  const std::vector<std::pair<int, int>> blocks = {{0, n}, {0, 1}, {1, n - 1}, {n - 1, n}, {2, 2}, {0, n}};
  std::vector<perfsift::io::RequestRecord> rq;
  std::vector<perfsift::io::CompletionRecord> cp;
  std::vector<perfsift::io::StepRecord> sp;
  const auto rq_key = [](const perfsift::io::RequestRecord &x) {
    return std::tie(x.id, x.event, x.peer, x.tag, x.comm, x.kind, x.bytes);
  };
  const auto cp_key = [](const perfsift::io::CompletionRecord &x) {
    return std::tie(x.event, x.request, x.source, x.tag, x.bytes, x.cancelled);
  };
  const auto sp_key = [](const perfsift::io::StepRecord &x) { return std::tie(x.region, x.step, x.t_begin, x.t_end); };
  const auto same = [](const auto &a, const auto &b, const auto &key) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [&](const auto &x, const auto &y) { return key(x) == key(y); });
  };
  std::array<size_t, 3> whole{};
  for (const auto &[a, b] : blocks) {
    st.requests(a, b, rq);
    st.completions(a, b, cp);
    st.steps(a, b, sp);
    EXPECT_TRUE(same(rq, st.requests(a, b), rq_key)) << "requests of ranks [" << a << ", " << b << ")";
    EXPECT_TRUE(same(cp, st.completions(a, b), cp_key)) << "completions of ranks [" << a << ", " << b << ")";
    EXPECT_TRUE(same(sp, st.steps(a, b), sp_key)) << "steps of ranks [" << a << ", " << b << ")";
    if (b - a == n) whole = {rq.size(), cp.size(), sp.size()};
  }
  // The HDF5 path's rows, into the same vectors, against the chunk path's fresh reads.
  struct HDF5Reads {
    HDF5Reads() { setenv("PERFSIFT_HDF5_READ", "1", 1); }
    ~HDF5Reads() { unsetenv("PERFSIFT_HDF5_READ"); }
  };
  for (const auto &[a, b] : blocks) {
    const auto rq_chunks = st.requests(a, b);
    const auto cp_chunks = st.completions(a, b);
    const auto sp_chunks = st.steps(a, b);
    {
      const HDF5Reads through_hdf5;
      st.requests(a, b, rq);
      st.completions(a, b, cp);
      st.steps(a, b, sp);
    }
    EXPECT_TRUE(same(rq, rq_chunks, rq_key)) << "requests of ranks [" << a << ", " << b << ") via HDF5";
    EXPECT_TRUE(same(cp, cp_chunks, cp_key)) << "completions of ranks [" << a << ", " << b << ") via HDF5";
    EXPECT_TRUE(same(sp, sp_chunks, sp_key)) << "steps of ranks [" << a << ", " << b << ") via HDF5";
  }
  return whole;
}

}  // namespace

TEST(Ring, CountsBytesAndRegions) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), nranks_expected());
  EXPECT_FALSE(st.run().incomplete);
  for (int r = 0; r < st.nranks(); ++r) {
    auto c = op_counts(st, r);
    EXPECT_EQ(c["MPI_Send"], 10) << "rank " << r;
    EXPECT_EQ(c["MPI_Recv"], 10) << "rank " << r;
    EXPECT_EQ(c["MPI_Barrier"], 1) << "rank " << r;
    EXPECT_EQ(c["MPI_Init"], 1);
    EXPECT_EQ(c["MPI_Finalize"], 1);
    for (const auto &e : st.events(r, r + 1)) {
      const std::string &op = st.ops()[e.op];
      if (op == "MPI_Send") {
        EXPECT_EQ(e.bytes, 1024);
        EXPECT_EQ(e.peer, (r + 1) % st.nranks());
        EXPECT_EQ(st.regions()[e.region].path, "ring");
      }
      if (op == "MPI_Recv") {
        EXPECT_EQ(e.bytes_recv, 1024);
        EXPECT_EQ(e.peer, (r + st.nranks() - 1) % st.nranks());
      }
      EXPECT_LE(e.t_enter, e.t_exit);
    }
    EXPECT_EQ(profile_at(st, "visits", r, "ring"), 1);
    EXPECT_EQ(profile_at(st, "mpi_bytes_sent", r, "ring"), 10 * 1024);
    EXPECT_EQ(profile_at(st, "mpi_bytes_recv", r, "ring"), 10 * 1024);
    EXPECT_LE(profile_at(st, "mpi_time", r, "ring"), profile_at(st, "wall", r, "ring") + 1e-6);
    EXPECT_GE(profile_at(st, "wall", r, "(program)"), profile_at(st, "wall", r, "ring"));
  }
  // Events of each rank are ordered by enter time.
  for (int r = 0; r < st.nranks(); ++r) {
    auto ev = st.events(r, r + 1);
    EXPECT_TRUE(
        std::is_sorted(ev.begin(), ev.end(), [](const Event &a, const Event &b) { return a.t_enter < b.t_enter; }));
  }
  // Call sites resolve into the application's main, with a source line from debug info.
  bool found_main_line = false;
  for (const auto &e : st.events(0, 1))
    if (st.ops()[e.op] == "MPI_Send") {
      const auto &cs = st.callsites().at(e.site);
      if (cs.file.find("ring.c") != std::string::npos && cs.line > 0) found_main_line = true;
    }
  EXPECT_TRUE(found_main_line);
  // Counters are either recorded or named as unavailable, never silently absent.
  EXPECT_EQ(st.run().counters_recorded.size() + st.run().counters_unavailable.size(), 6u);
}

TEST(RingFortran, TracedLikeC) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), nranks_expected());
  for (int r = 0; r < st.nranks(); ++r) {
    auto c = op_counts(st, r);
    EXPECT_EQ(c["MPI_Send"], 10) << "rank " << r;
    EXPECT_EQ(c["MPI_Recv"], 10) << "rank " << r;
    EXPECT_EQ(c["MPI_Barrier"], 1);
    EXPECT_EQ(c["MPI_Init"], 1);
    EXPECT_EQ(c["MPI_Finalize"], 1);
    for (const auto &e : st.events(r, r + 1)) {
      const std::string &op = st.ops()[e.op];
      if (op == "MPI_Send") {
        EXPECT_EQ(e.bytes, 1024);
      }
      if (op == "MPI_Recv") {
        EXPECT_EQ(e.bytes_recv, 1024);
        // Odd ranks receive with MPI_ANY_SOURCE and MPI_STATUS_IGNORE: the source is still resolved.
        EXPECT_EQ(e.peer, (r + st.nranks() - 1) % st.nranks());
        if (r % 2) {
          EXPECT_TRUE(e.flags & perfsift::io::kWildcardSource);
        }
      }
    }
    EXPECT_EQ(profile_at(st, "visits", r, "ring"), 1);
    EXPECT_EQ(profile_at(st, "mpi_bytes_sent", r, "ring"), 10 * 1024);
  }
}

TEST(Families, ExactCountsPerRank) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), 4);
  const std::map<std::string, int> expected = {{"MPI_Isend", 2},
                                               {"MPI_Irecv", 3},
                                               {"MPI_Waitall", 3},
                                               {"MPI_Ssend", 1},
                                               {"MPI_Recv", 3},
                                               {"MPI_Bsend", 1},
                                               {"MPI_Rsend", 1},
                                               {"MPI_Send_init", 1},
                                               {"MPI_Recv_init", 1},
                                               {"MPI_Startall", 2},
                                               {"MPI_Request_free", 2},
                                               {"MPI_Sendrecv", 1},
                                               {"MPI_Sendrecv_replace", 1},
                                               {"MPI_Probe", 1},
                                               {"MPI_Send", 1},
                                               {"MPI_Barrier", 3},
                                               {"MPI_Bcast", 1},
                                               {"MPI_Reduce", 1},
                                               {"MPI_Allreduce", 2},
                                               {"MPI_Gather", 1},
                                               {"MPI_Allgather", 1},
                                               {"MPI_Alltoall", 1},
                                               {"MPI_Ibarrier", 1},
                                               {"MPI_Iallreduce", 1},
                                               {"MPI_Wait", 3},
                                               {"MPI_Comm_split", 1},
                                               {"MPI_Comm_free", 1},
                                               {"MPI_Init", 1},
                                               {"MPI_Finalize", 1}};
  for (int r = 0; r < 4; ++r) {
    auto c = op_counts(st, r);
    for (const auto &[op, n] : expected) EXPECT_EQ(c[op], n) << op << " on rank " << r;
    int total = 0;
    for (const auto &[op, n] : c) total += n;
    int expected_total = 0;
    for (const auto &[op, n] : expected) expected_total += n;
    EXPECT_EQ(total, expected_total) << "unexpected extra events on rank " << r;
    // Point-to-point bytes: every message is 256 bytes; messages sent per rank:
    // 2 Isend + Ssend + Bsend + Rsend + 2 persistent + Sendrecv + Sendrecv_replace + Send = 10.
    EXPECT_EQ(profile_at(st, "mpi_bytes_sent", r, "(program)") >= 10 * 256, true);
    // Every request completes: 2 Isend + 3 Irecv + 4 persistent activations + 2 nonblocking collectives.
    auto comp = st.completions(r, r + 1);
    int with_request = 0, sendrecv_halves = 0;
    for (const auto &x : comp) (x.request >= 0 ? with_request : sendrecv_halves)++;
    EXPECT_EQ(with_request, 11) << "rank " << r;
    EXPECT_EQ(sendrecv_halves, 2) << "rank " << r;
    // The wildcard Irecv's completion names its real source: the partner.
    auto rq = st.requests(r, r + 1);
    for (const auto &x : comp)
      if (x.request >= 0)
        for (const auto &q : rq)
          if (q.id == x.request && q.kind == perfsift::io::kReqRecv) {
            EXPECT_EQ(x.source, r ^ 1);
          }
    // Collective roots are world ranks; split communicator maps to the right members.
    for (const auto &e : st.events(r, r + 1)) {
      const std::string &op = st.ops()[e.op];
      if (op == "MPI_Bcast" || op == "MPI_Reduce" || op == "MPI_Gather") {
        EXPECT_EQ(e.peer, 0);
      }
      if (op == "MPI_Allreduce" && e.comm != 0) {
        const auto &m = st.comms().at(e.comm).members;
        ASSERT_EQ(m.size(), 2u);
        EXPECT_EQ(m[0] % 2, r % 2);
        EXPECT_EQ(m[1] % 2, r % 2);
      }
      if (op == "MPI_Alltoall") {
        EXPECT_EQ(e.bytes, 2 * 4 * 8);
      }
    }
  }
  EXPECT_EQ(st.comms().at(0).members.size(), 4u);  // MPI_COMM_WORLD first
}

// tests/apps/slash_names.c: a name holding '/' is one region, not a path through a missing one;
// parent ids and paths agree, and paths name one region each.
TEST(SlashNames, NamesAsWrittenWithTheirParents) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), nranks_expected());
  const int io_read = region_index(st, "\"io/read\""), io = region_index(st, "io"), read = region_index(st, "io/read"),
            solver = region_index(st, "solver"), loop = region_index(st, "solver/main loop"),
            quoted = region_index(st, "solver/\"\\\"q/x\\\"\"");
  ASSERT_GE(io_read, 0);
  ASSERT_GE(io, 0);
  ASSERT_GE(read, 0);
  ASSERT_GE(solver, 0);
  ASSERT_GE(loop, 0);
  ASSERT_GE(quoted, 0);
  EXPECT_EQ(st.regions()[io_read].name, "io/read");
  EXPECT_EQ(st.regions()[io_read].parent, 0);
  EXPECT_EQ(st.regions()[read].name, "read");
  EXPECT_EQ(st.regions()[read].parent, io);
  EXPECT_EQ(st.regions()[loop].name, "main loop");
  EXPECT_EQ(st.regions()[loop].parent, solver);
  EXPECT_EQ(st.regions()[quoted].name, "\"q/x\"");
  EXPECT_EQ(st.regions()[quoted].parent, solver);
  for (const auto &reg : st.regions()) {  // a path is its parent's path and its own name
    if (reg.parent < 0) continue;
    EXPECT_EQ(reg.path, perfsift::io::child_region_path(st.regions()[reg.parent].path, reg.parent == 0, reg.name));
  }
  for (int r = 0; r < st.nranks(); ++r) {
    EXPECT_EQ(profile_at(st, "visits", r, "\"io/read\""), 3);
    EXPECT_EQ(profile_at(st, "visits", r, "io/read"), 3);
    EXPECT_EQ(profile_at(st, "visits", r, "solver/main loop"), 3);
    EXPECT_NEAR(profile_at(st, "wall", r, "\"io/read\""), 3 * (0.005 + 0.005 * r), 0.015) << "rank " << r;
    EXPECT_NEAR(profile_at(st, "wall", r, "io/read"), 3 * 0.002, 0.010) << "rank " << r;
  }
}

TEST(Nested, InclusiveTimesAndSteps) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), nranks_expected());
  ASSERT_GE(region_index(st, "phase/outer/inner"), 0);
  ASSERT_GE(region_index(st, "tail"), 0);  // from MPI_Pcontrol
  for (int r = 0; r < st.nranks(); ++r) {
    const double inner = profile_at(st, "wall", r, "phase/outer/inner");
    const double outer = profile_at(st, "wall", r, "phase/outer");
    EXPECT_EQ(profile_at(st, "visits", r, "phase/outer/inner"), 2);
    EXPECT_EQ(profile_at(st, "visits", r, "phase/outer"), 2);
    EXPECT_NEAR(inner, 2 * (0.020 + 0.010 * r), 0.015) << "rank " << r;
    EXPECT_NEAR(outer - inner, 0.020, 0.015) << "rank " << r;
    EXPECT_LT(profile_at(st, "cpu", r, "phase/outer"), outer);  // sleeping is not CPU time
    auto steps = step_rows(st, r);
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].step, 0);
    EXPECT_EQ(steps[1].step, 1);
    EXPECT_EQ(st.regions()[steps[0].region].path, "phase");
    EXPECT_GT(steps[1].t_begin, steps[0].t_end - 1);
    // The barrier ran inside "tail", outside any step.
    for (const auto &e : st.events(r, r + 1))
      if (st.ops()[e.op] == "MPI_Barrier") {
        EXPECT_EQ(st.regions()[e.region].path, "tail");
        EXPECT_EQ(e.step, -1);
      }
  }
}

TEST(ClockSkew, OffsetsMeasuredAndApplied) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), nranks_expected());
  auto clocks = st.clocks();
  for (int r = 0; r < st.nranks(); ++r) {
    // Injected: rank r's clock runs ahead by r * 5 ms and fast by r * 50 ppm.
    EXPECT_NEAR(clocks[r].offset_init_ns, -5e6 * r, 1e6) << "rank " << r;
    EXPECT_LT(clocks[r].error_init_ns, 1e6);
  }
  // After correction the barrier releases every rank at about the same time.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int r = 0; r < st.nranks(); ++r)
    for (const auto &e : st.events(r, r + 1))
      if (st.ops()[e.op] == "MPI_Barrier") lo = std::min(lo, e.t_exit), hi = std::max(hi, e.t_exit);
  EXPECT_LT(hi - lo, 6e6) << "barrier exits spread " << (hi - lo) << " ns (uncorrected skew would be 15 ms)";
  // Causality: a message is not received before it was sent.
  for (int r = 0; r < st.nranks(); ++r) {
    auto ev = st.events(r, r + 1);
    auto prev_ev = st.events((r + st.nranks() - 1) % st.nranks(), (r + st.nranks() - 1) % st.nranks() + 1);
    std::vector<int64_t> send_enter;
    for (const auto &e : prev_ev)
      if (st.ops()[e.op] == "MPI_Send") send_enter.push_back(e.t_enter);
    size_t k = 0;
    for (const auto &e : ev)
      if (st.ops()[e.op] == "MPI_Recv" && k < send_enter.size()) {
        EXPECT_GE(e.t_exit + 1000000, send_enter[k++]);
      }
  }
}

TEST(Crash, RecoveredAndMarkedIncomplete) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), 4);
  EXPECT_TRUE(st.run().incomplete);
  // SIGKILLed rank 1 keeps what it spilled (the collector spills once a second): nothing,
  // unless start-up was slow.
  if (!st.run().missing_ranks.empty()) {
    EXPECT_EQ(st.run().missing_ranks, std::vector<int32_t>{1});
  }
  for (int r : {0, 2, 3}) {
    EXPECT_NE(std::find(st.run().truncated_ranks.begin(), st.run().truncated_ranks.end(), r),
              st.run().truncated_ranks.end());
    auto c = op_counts(st, r);
    EXPECT_EQ(c["MPI_Sendrecv"], 5) << "rank " << r;
    EXPECT_GE(c["MPI_Barrier"], 1) << "rank " << r;
    EXPECT_EQ(c["MPI_Finalize"], 0);
  }
  if (!st.run().missing_ranks.empty()) {
    EXPECT_TRUE(st.events(1, 2).empty());
    EXPECT_TRUE(std::isnan(st.profile("wall")[1 * st.regions().size()]));
  }
}

namespace {
// Durations (s) of every event of `op` on `rank`.
std::vector<double> durations(const TraceStore &st, int rank, const std::string &op) {
  std::vector<double> out;
  for (const auto &e : st.events(rank, rank + 1))
    if (st.ops()[e.op] == op) out.push_back((e.t_exit - e.t_enter) * 1e-9);
  return out;
}
double sum(const std::vector<double> &v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
}  // namespace

TEST(LateSender, ReceiverWaits) {
  TraceStore st(store_path());
  auto recv = durations(st, 0, "MPI_Recv");
  ASSERT_EQ(recv.size(), 4u);
  for (double d : recv) {
    EXPECT_NEAR(d, 0.050, 0.030);
  }
  for (double d : durations(st, 1, "MPI_Send")) {
    EXPECT_LT(d, 0.015);
  }
}

TEST(LateReceiver, SynchronousSenderWaits) {
  TraceStore st(store_path());
  auto ssend = durations(st, 0, "MPI_Ssend");
  ASSERT_EQ(ssend.size(), 4u);
  for (double d : ssend) {
    EXPECT_NEAR(d, 0.050, 0.030);
  }
  for (const auto &e : st.events(0, 1))
    if (st.ops()[e.op] == "MPI_Ssend") {
      EXPECT_EQ(e.bytes, 8192);
    }
}

TEST(WaitBarrier, EarlyRanksWaitLonger) {
  TraceStore st(store_path());
  const int n = st.nranks();
  for (int r = 0; r < n; ++r) {
    auto b = durations(st, r, "MPI_Barrier");
    ASSERT_EQ(b.size(), 3u);
    EXPECT_NEAR(sum(b), 3 * (n - 1 - r) * 0.020, 0.045) << "rank " << r;
    EXPECT_NEAR(profile_at(st, "wall", r, "work"), 3 * (r + 1) * 0.020, 0.030) << "rank " << r;
  }
  // The structure, whatever the machine's load: the first rank waits longest.
  EXPECT_GT(sum(durations(st, 0, "MPI_Barrier")), sum(durations(st, n - 1, "MPI_Barrier")) + 0.040);
}

TEST(MasterWorker, TasksAndSetup) {
  TraceStore st(store_path());
  const int n = st.nranks();
  auto c0 = op_counts(st, 0);
  EXPECT_EQ(c0["MPI_Send"], 12 + (n - 1));
  EXPECT_EQ(c0["MPI_Recv"], 12 + (n - 1));
  EXPECT_EQ(profile_at(st, "visits", 0, "master_setup"), 12);
  EXPECT_NEAR(profile_at(st, "wall", 0, "master_setup"), 0.120, 0.030);
  double compute = 0;
  for (int r = 1; r < n; ++r) compute += profile_at(st, "wall", r, "worker_compute");
  EXPECT_NEAR(compute, 0.300, 0.060);
  // Requests arrive by MPI_ANY_SOURCE: every one is resolved to a worker.
  for (const auto &e : st.events(0, 1))
    if (st.ops()[e.op] == "MPI_Recv") {
      EXPECT_TRUE(e.flags & perfsift::io::kWildcardSource);
      EXPECT_GE(e.peer, 1);
    }
}

TEST(Wavefront, SweepsAndPipeline) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), 4);  // a 2 x 2 grid
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(op_counts(st, r)["MPI_Init_thread"], 1);
    auto steps = step_rows(st, r);
    ASSERT_EQ(steps.size(), 4u);
    auto c = op_counts(st, r);
    // Corners 0 and 3 are sources in two sweeps and sinks in two; 1 and 2 relay.
    EXPECT_EQ(c["MPI_Recv"], r == 0 || r == 3 ? 4 : 4) << "rank " << r;
    EXPECT_EQ(c["MPI_Send"], 4) << "rank " << r;
  }
  // A sweep lasts at least the pipeline depth (PX + PY - 1 = 3 stages of 50 ms).
  auto s0 = step_rows(st, 0), s3 = step_rows(st, 3);
  EXPECT_GE(s3[0].t_end - s0[0].t_begin, 3 * 50e6 * 0.9);
}

TEST(BinarySwap, StagesHalveBytes) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), 4);
  for (int r = 0; r < 4; ++r) {
    std::vector<int64_t> bytes;
    for (const auto &e : st.events(r, r + 1))
      if (st.ops()[e.op] == "MPI_Sendrecv") {
        bytes.push_back(e.bytes);
        EXPECT_EQ(e.peer, r ^ (1 << (bytes.size() - 1)));
      }
    ASSERT_EQ(bytes.size(), 2u);
    EXPECT_EQ(bytes[0], 2 * 32768 * 4);  // sent + received halves of 2^16 floats
    EXPECT_EQ(bytes[1], 2 * 16384 * 4);
    auto steps = step_rows(st, r);
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(st.regions()[steps[0].region].path, "composite");
    int blends = 0;
    for (const auto &x : st.steps(r, r + 1))
      if (st.regions()[x.region].path == "composite/blend") {
        EXPECT_EQ(x.step, -1);
        ++blends;
      }
    EXPECT_EQ(blends, 2);  // plain regions' executions are recorded too
  }
}

TEST(Spill, EventsBeyondTheBufferAreKept) {
  TraceStore st(store_path());
  // 20000 rounds of send+recv = 40000 events per rank + Init/Barrier/Finalize, with a
  // 1 MiB buffer (about 14500 events): the rest went through the spill file.
  for (int r = 0; r < st.nranks(); ++r) {
    auto c = op_counts(st, r);
    EXPECT_EQ(c["MPI_Send"], 20000);
    EXPECT_EQ(c["MPI_Recv"], 20000);
    auto ev = st.events(r, r + 1);
    EXPECT_TRUE(
        std::is_sorted(ev.begin(), ev.end(), [](const Event &a, const Event &b) { return a.t_enter < b.t_enter; }));
  }
  EXPECT_FALSE(std::filesystem::exists(store_path() + ".spill"));  // cleaned after a good write
}

TEST(FunctionsIo, FunctionRegionsAndFileBytes) {
  TraceStore st(store_path());
  ASSERT_GE(region_index(st, "solve"), 0);
  ASSERT_GE(region_index(st, "solve/smooth"), 0);
  for (const auto &r : st.regions()) EXPECT_EQ(r.path.find("helper"), std::string::npos) << r.path;
  for (int r = 0; r < st.nranks(); ++r) {
    EXPECT_EQ(profile_at(st, "visits", r, "solve"), 2);
    EXPECT_EQ(profile_at(st, "visits", r, "solve/smooth"), 6);
    EXPECT_EQ(profile_at(st, "io_bytes_written", r, "solve"), 2 * 1.5 * (1 << 20));
    EXPECT_EQ(profile_at(st, "io_bytes_read", r, "solve"), 2.0 * (1 << 20));
    EXPECT_EQ(profile_at(st, "io_bytes_written", r, "solve/smooth"), 0);
    for (const auto &e : st.events(r, r + 1))
      if (st.ops()[e.op] == "MPI_Allreduce") {
        EXPECT_EQ(st.regions()[e.region].path, "solve/smooth");
      }
  }
}

TEST(Families2, RemainingFamiliesExact) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), 4);
  const std::map<std::string, int> exact = {{"MPI_Irecv", 12},
                                            {"MPI_Isend", 8},
                                            {"MPI_Waitany", 4},
                                            {"MPI_Wait", 4},
                                            {"MPI_Waitall", 3},
                                            {"MPI_Send", 3},
                                            {"MPI_Recv", 1},
                                            {"MPI_Mprobe", 1},
                                            {"MPI_Mrecv", 1},
                                            {"MPI_Imrecv", 1},
                                            {"MPI_Issend", 1},
                                            {"MPI_Irsend", 1},
                                            {"MPI_Ibsend", 1},
                                            {"MPI_Barrier", 2},
                                            {"MPI_Bcast", 1},
                                            {"MPI_Scatter", 1},
                                            {"MPI_Scatterv", 1},
                                            {"MPI_Gatherv", 1},
                                            {"MPI_Allgatherv", 1},
                                            {"MPI_Alltoallv", 1},
                                            {"MPI_Reduce_scatter", 1},
                                            {"MPI_Reduce_scatter_block", 1},
                                            {"MPI_Scan", 1},
                                            {"MPI_Exscan", 1},
                                            {"MPI_Comm_dup", 1},
                                            {"MPI_Cart_create", 1},
                                            {"MPI_Comm_free", 2},
                                            {"MPI_Neighbor_allgather", 1},
                                            {"MPI_Ineighbor_alltoall", 1},
                                            {"MPI_File_open", 1},
                                            {"MPI_File_write_at", 1},
                                            {"MPI_File_read_at", 1},
                                            {"MPI_File_close", 1},
                                            {"MPI_Cancel", 1},
                                            {"MPI_Init", 1},
                                            {"MPI_Finalize", 1}};
  const std::vector<std::string> polled = {"MPI_Waitsome", "MPI_Test",   "MPI_Testall", "MPI_Testany",
                                           "MPI_Testsome", "MPI_Iprobe", "MPI_Improbe"};
  for (int r = 0; r < 4; ++r) {
    const int p = r ^ 1;
    auto c = op_counts(st, r);
    for (const auto &[op, n] : exact) EXPECT_EQ(c[op], n) << op << " on rank " << r;
    for (const auto &op : polled) EXPECT_GE(c[op], 1) << op << " on rank " << r;
    int known = 0;
    for (const auto &[op, n] : c)
      if (exact.count(op) || std::find(polled.begin(), polled.end(), op) != polled.end()) known += n;
    int total = 0;
    for (const auto &[op, n] : c) total += n;
    EXPECT_EQ(known, total) << "an operation the program does not call was recorded on rank " << r;

    auto comp = st.completions(r, r + 1);
    int with_request = 0, cancelled = 0;
    for (const auto &x : comp) with_request += x.request >= 0, cancelled += x.cancelled;
    EXPECT_EQ(with_request, 25) << "rank " << r;
    EXPECT_EQ(cancelled, 1) << "rank " << r;

    auto ev = st.events(r, r + 1);
    const auto &ops = st.ops();
    int last_iprobe_peer = -9;
    for (size_t i = 0; i < ev.size(); ++i) {
      const auto &e = ev[i];
      const std::string &op = ops[e.op];
      if (op == "MPI_Iprobe") last_iprobe_peer = (e.flags & perfsift::io::kNoMatch) ? -9 : e.peer;
      if (op == "MPI_Mrecv") {
        EXPECT_EQ(e.bytes_recv, 256);
      }
      if (op == "MPI_Scatter") {
        EXPECT_EQ(e.bytes, r == 0 ? 32 + 8 : 8);
      }
      if (op == "MPI_Reduce_scatter") {
        EXPECT_EQ(e.bytes, 32 + 8);
      }
      if (op == "MPI_Neighbor_allgather") {
        EXPECT_EQ(e.bytes, 16);
      }
      if (op == "MPI_File_write_at" || op == "MPI_File_read_at") {
        EXPECT_EQ(e.comm, -1);
      }
      if (op == "MPI_Testany" || op == "MPI_Testsome" || op == "MPI_Waitsome") {
        // A poll that found nothing says so; one that completed something does not.
        bool completed = false;
        for (const auto &x : comp)
          if (x.event == static_cast<int64_t>(i)) completed = true;
        if (!completed) {
          EXPECT_TRUE((e.flags & perfsift::io::kNoMatch) || op == "MPI_Waitsome");
        }
      }
    }
    EXPECT_EQ(last_iprobe_peer, p);
    // The Imrecv's completion names the partner.
    auto rq = st.requests(r, r + 1);
    for (const auto &q : rq)
      if (ops[ev[q.event].op] == "MPI_Imrecv")
        for (const auto &x : comp)
          if (x.request == q.id) {
            EXPECT_EQ(x.source, p);
          }
    EXPECT_EQ(profile_at(st, "io_bytes_written", r, "(program)"), 4096);
    EXPECT_EQ(profile_at(st, "io_bytes_read", r, "(program)"), 4096);
  }
}

TEST(CrashExit, ExitWithoutFinalizeIsSaved) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), 4);
  EXPECT_TRUE(st.run().incomplete);
  EXPECT_TRUE(st.run().missing_ranks.empty());
  EXPECT_EQ(st.run().truncated_ranks, (std::vector<int32_t>{0, 1, 2, 3}));
  auto c = op_counts(st, 1);
  EXPECT_EQ(c["MPI_Sendrecv"], 5);
  EXPECT_EQ(c["MPI_Barrier"], 1);
  EXPECT_EQ(c["MPI_Finalize"], 0);
  EXPECT_EQ(profile_at(st, "visits", 1, "(program)"), 1);
}

TEST(Intercomm, PeersAndCommunicators) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), 4);
  int32_t inter_index = -2;
  for (int r = 0; r < 4; ++r) {
    auto c = op_counts(st, r);
    for (const char *op :
         {"MPI_Comm_split", "MPI_Intercomm_create", "MPI_Intercomm_merge", "MPI_Bcast", "MPI_Send", "MPI_Recv"})
      EXPECT_EQ(c[op], 1) << op << " on rank " << r;
    EXPECT_EQ(c["MPI_Comm_free"], 3);
    const int other = r % 2 ? r - 1 : r + 1;
    for (const auto &e : st.events(r, r + 1)) {
      const std::string &op = st.ops()[e.op];
      if (op == "MPI_Send" || op == "MPI_Recv") {
        EXPECT_EQ(e.peer, other) << op << " on rank " << r;
        EXPECT_TRUE(e.flags & perfsift::io::kInterComm);
        if (inter_index == -2) inter_index = e.comm;
        EXPECT_EQ(e.comm, inter_index) << "one /comms entry for the intercommunicator";
        const auto &cm = st.comms().at(e.comm);
        ASSERT_EQ(cm.members.size(), 2u);
        ASSERT_EQ(cm.remote.size(), 2u);
      }
      if (op == "MPI_Bcast" && r % 2) {
        EXPECT_EQ(e.peer, 0) << "root is world rank 0";
      }
    }
  }
}

TEST(NestedImbalance, CpuTimesPerGroup) {
  TraceStore st(store_path());
  ASSERT_EQ(st.nranks(), nranks_expected());
  const bool balanced = std::getenv("APP_BALANCED") != nullptr;
  const char *measure = std::getenv("APP_SLEEP") ? "wall" : "cpu";  // sleeping is wall time
  for (int r = 0; r < st.nranks(); ++r) {
    const double smooth = profile_at(st, measure, r, "solve/smooth");
    const double expected = 3 * (!balanced && r >= st.nranks() / 2 ? 0.050 : 0.020);
    EXPECT_NEAR(smooth, expected, 0.02) << "rank " << r;
    EXPECT_NEAR(profile_at(st, measure, r, "setup"), 0.030, 0.015) << "rank " << r;
    EXPECT_EQ(profile_at(st, "visits", r, "solve/restrict"), 3);
  }
}

TEST(Families, BlockReadsIntoOneVectorReplaceItsRows) {
  const auto whole = check_block_reads(TraceStore(store_path()));
  EXPECT_GT(whole[0], 0u) << "requests";
  EXPECT_GT(whole[1], 0u) << "completions";
}

TEST(Nested, BlockReadsIntoOneVectorReplaceItsRows) {
  EXPECT_GT(check_block_reads(TraceStore(store_path()))[2], 0u) << "steps";
}
