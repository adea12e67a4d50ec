// Replay benchmarks; prints figures.
//  1. serial LogGPS replay of a ring-exchange + allreduce program (default 1,000 ranks x
//     10,000 events = 10^7 events): events per second on one core, bytes per event of the
//     program and of the engine's state;
//  2. the domino-path search on a 5,000-event trace (16 ranks, blocking exchanges with
//     imbalanced computation), the paper's 10 s case, on every core.
// usage: bench_replay_kernels [RANKS EVENTS_PER_RANK DOMINO_EVENTS]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <tuple>

#include "kernels/domino.h"
#include "kernels/replay.h"

using namespace perfsift::kernels;
using namespace perfsift::kernels::replay;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

template <class T>
static size_t bytes(const std::vector<T> &v) {
  return v.capacity() * sizeof(T);
}

// Ring: Irecv(left), Isend(right), Waitall; an Allreduce every 8 iterations.
static std::vector<RankProgram> ring(int P, int64_t per_rank, uint64_t seed, bool nonblocking) {
  ProgramBuilder b(P);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> gap(1000, 100000);
  const int64_t iters = per_rank / (nonblocking ? 3 : 1);
  for (int r = 0; r < P; ++r) b.rank(r).reserve_events(static_cast<size_t>(per_rank + per_rank / 8));
  std::vector<int32_t> send(static_cast<size_t>(P)), recv(static_cast<size_t>(P));  // this iteration's, per rank
  int64_t coll = 0;
  for (int64_t it = 0; it < iters; ++it) {
    for (int r = 0; r < P; ++r) {
      const int right = (r + 1) % P;
      std::tie(send[static_cast<size_t>(r)], recv[static_cast<size_t>(right)]) = b.message(r, right, 1024);
    }
    for (int r = 0; r < P; ++r) {
      RankProgramBuilder &p = b.rank(r);
      const int32_t si = send[static_cast<size_t>(r)], ri = recv[static_cast<size_t>(r)];
      if (nonblocking) {
        const int32_t s0 = p.add_request_slot(), s1 = p.add_request_slot();
        p.event(gap(rng), {{ItemType::PostRecv, ri, s0}});
        p.event(100, {{ItemType::PostSend, si, s1}});
        p.event(100, {{ItemType::Complete, s0}, {ItemType::Complete, s1}});
      } else {
        p.event(gap(rng), {{ItemType::Send, si}, {ItemType::Recv, ri}});
      }
    }
    if (it % 8 == 7) {
      for (int r = 0; r < P; ++r) {
        RankProgramBuilder &p = b.rank(r);
        const int32_t c = p.add_collective(collective_call(instance_id(0, coll), P, CollectiveFlow::All, -1, 16));
        p.event(500, {{ItemType::Collective, c}});
      }
      ++coll;
    }
  }
  return b.finish();
}

int main(int argc, char **argv) {
  const int P = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int64_t per_rank = argc > 2 ? std::atoll(argv[2]) : 10000;
  const int64_t domino_events = argc > 3 ? std::atoll(argv[3]) : 5000;

  auto t0 = Clock::now();
  const auto prog = ring(P, per_rank, 1, true);
  int64_t events = 0;
  size_t prog_bytes = 0;
  for (const auto &p : prog) {
    events += static_cast<int64_t>(p.events.size());
    prog_bytes += bytes(p.events) + bytes(p.items) + bytes(p.sends) + bytes(p.recvs) + bytes(p.colls) + bytes(p.owns) +
                  sizeof(RankProgram);
  }
  std::printf("replay: %d ranks, %lld events (built in %.1f s)\n", P, static_cast<long long>(events),
              seconds_since(t0));
  Scenario sc;
  // Engine state: per send start + receiver post, per receive send start + post + bytes.
  size_t state_bytes = 0;
  for (const auto &p : prog)
    state_bytes += (p.sends.size() * 2 + p.recvs.size() * 2 + p.colls.size()) * sizeof(int64_t) +
                   static_cast<size_t>(p.request_slots) * sizeof(int32_t);
  replay_serial(prog, sc, false);  // warm-up
  double best = 1e9;
  SerialResult r;
  for (int rep = 0; rep < 3; ++rep) {
    t0 = Clock::now();
    r = replay_serial(prog, sc, false);
    best = std::min(best, seconds_since(t0));
  }
  std::printf("  serial replay: %.3f s, %.2f M events/s on one core (goal >= 5; LogGOPSim reports >= 1)\n", best,
              static_cast<double>(events) / best / 1e6);
  std::printf("  memory: program %.1f B/event + engine state %.1f B/event = %.1f B/event (goal <= 64)\n",
              static_cast<double>(prog_bytes) / static_cast<double>(events),
              static_cast<double>(state_bytes) / static_cast<double>(events),
              static_cast<double>(prog_bytes + state_bytes) / static_cast<double>(events));
  std::printf("  predicted %.3f s, released %lld\n", static_cast<double>(r.makespan) * 1e-9,
              static_cast<long long>(r.released));

  // Domino on a small trace: 16 ranks of blocking exchanges.
  const int dp = 16;
  const auto small = ring(dp, domino_events / dp, 7, false);
  int64_t small_events = 0;
  for (const auto &p : small) small_events += static_cast<int64_t>(p.events.size());
  const auto base = replay_serial(small, sc, true);
  t0 = Clock::now();
  const auto partners = domino::program_partners(small, base.timings);
  const auto rest = domino::rest_bounds(small, base.timings);
  const auto res = domino::find_paths(small, base.timings, partners, domino::serial_evaluator(small, sc, rest));
  const double t_domino = seconds_since(t0);
  size_t longest = 0;
  for (const auto &p : res.paths) longest = std::max(longest, p.steps.size());
  std::printf(
      "domino: %lld events on %d ranks, %d threads: %.3f s (PerWiz: 10 s; goal < 0.2 s), %lld candidate replays, "
      "%zu paths (longest %zu steps), baseline %.3f ms -> best %.3f ms, longest wait alone %.3f ms\n",
      static_cast<long long>(small_events), dp, omp_get_max_threads(), t_domino, static_cast<long long>(res.replays),
      res.paths.size(), longest, res.baseline * 1e-6, res.best * 1e-6, res.longest_wait.predicted * 1e-6);
  return 0;
}
