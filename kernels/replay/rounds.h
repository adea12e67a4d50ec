// A replay split over owners (one engine each, kernels/replay/engine.h): the traffic
// between them and the rounds they advance in. Each owner advances, the owners exchange
// their outboxes, then each reports and all decide alike from the reports summed over
// owners (Engine::round_report, Engine::round_end).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace perfsift::kernels::replay {

// Cross-owner traffic.
struct SendPost {
  int32_t dst, recv_index;
  int64_t t;
  int64_t bytes;
};
struct RecvPost {
  int32_t src, send_index;
  int64_t t;
};
struct Arrival {
  int64_t instance;
  int32_t count;
  int32_t pad = 0;
  int64_t max_enter, root_enter;
};
// Resumed replays: a replayed rank needs another owner's rank to reach the event that
// posts its send (`send` true) or receive `index`.
struct Pull {
  int32_t rank;
  int32_t send;
  int64_t index;
};
struct Outbox {
  std::vector<SendPost> sends;
  std::vector<RecvPost> recvs;
  std::vector<Arrival> arrivals;  // this engine's members' arrivals, per instance, since the last take
  std::vector<Pull> pulls;
};

// An engine's outbox handed over with its collective arrivals, gathered per instance while
// the engine ran, in instance order (Engine and PassEngine).
template <class Outbox, class ArrivalsByInstance>
Outbox hand_over(Outbox &out, ArrivalsByInstance &arrivals) {
  for (const auto &[id, a] : arrivals) out.arrivals.push_back(a);
  arrivals.clear();
  std::sort(out.arrivals.begin(), out.arrivals.end(),
            [](const auto &a, const auto &b) { return a.instance < b.instance; });
  return std::exchange(out, Outbox{});
}

// One owner's report after an exchange.
// assumed: collective arrivals assumed as in the snapshot and not yet seen, the latest
// baseline time of one (INT64_MIN: none); unless the horizon is past it everywhere,
// neither bound may stop the replay (values shaped by one may yet change). Reports
// combine field-wise: sums, the horizon's minimum, the latest assumption's maximum.
// Clean cuts (Scenario::cuts): every owned rank left cuts cut_first .. cut_last (in the
// order they completed here) exactly shift ahead of the snapshot; over owners the latest
// first, the earliest last, the least and the largest shift (shift_low > shift_high:
// none here). Every owner's run holds cut_first when cut_first <= cut_last.
struct RoundReport {
  int64_t moved, unfinished, off_snapshot, changed_pending, stopped, lead, assumed, rest_bound_met, horizon,
      assumed_latest, cut_first, cut_last, shift_low, shift_high;
  // As reduced over owners (one MPI_SUM and one MPI_MAX): the fields summed, then those
  // combined by maximum, a minimum as the maximum of its complement ~x.
  static constexpr size_t kSums = 8, kMaxima = 6;
  void encode(int64_t *sums, int64_t *maxima) const;
  static RoundReport decode(const int64_t *sums, const int64_t *maxima);
};
// That reduction of two reports, into the first.
void combine(RoundReport &into, const RoundReport &from);
enum class RoundEnd {
  Continue,
  Converged,  // back on the snapshot everywhere: the run's end follows from it
  Finished,   // every rank ended, or some owner aborted or met a conflict
  Abort,      // the leads prove Scenario::abort_at out of reach: call abort() everywhere
  Stuck,      // nothing moved anywhere: release_stuck() everywhere
  Shifted,    // every rank left a clean cut shift_low ahead: stop_shifted(shift_low) everywhere
};

}  // namespace perfsift::kernels::replay
