// What a replay is asked: a what-if question in the form the engine applies.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/loggps.h"
#include "kernels/replay/columns.h"

namespace perfsift::kernels::replay {

struct Snapshot;

// A what-if question in the form the engine applies. Empty vectors mean "as measured".
struct Scenario {
  LogGPS net;
  bool ideal_network = false;
  // Per owned rank (in program order): replaced computation gaps; replaced send sizes.
  std::vector<std::vector<int64_t>> gaps;
  std::vector<std::vector<int64_t>> send_bytes;
  // Per owned rank: per-event flags (kZeroWait, kZeroEvent).
  std::vector<std::vector<uint8_t>> event_flags;
  // One event that skips waiting (the domino search asks this thousands of times).
  int32_t zero_wait_rank = -1;
  int64_t zero_wait_event = -1;
  // Early stop: with rest[slot][i] a lower bound on the time from event i's enter to the
  // rank's end, the replay stops as soon as some rank cannot end before `abort_at`
  // (the result is then "no earlier than abort_at").
  const std::vector<BlockDeltaColumn> *rest = nullptr;
  int64_t abort_at = std::numeric_limits<int64_t>::max();
  // Resume from a finished replay of the same programs: events that ended by `resume_at`
  // cannot depend on anything the scenario changes after that time, so they keep the
  // snapshot's times and only the rest is replayed. The scenario must change nothing
  // before `resume_at` (the domino search: one wait zeroed at that time).
  const Snapshot *resume = nullptr;
  int64_t resume_at = 0;
  // With `resume`: replay only what the change disturbs and stop once the run is back on
  // the snapshot. A rank joins the replay (at its cut) when a value it uses differs or
  // when a replayed rank needs one of its values; it rests while nothing it holds differs
  // (its last exit, injection horizon, values received or posted but not yet used) and
  // nobody needs it further. The run is back on the snapshot when every rank rests and no
  // collective's differing arrival is unused: the makespan follows from the snapshot.
  bool stop_when_converged = false;
  // With `stop_when_converged`: a collective's members that rest where the snapshot holds
  // arrive as in the snapshot without being replayed; should one arrive otherwise after
  // all (a later disturbance reached it first), the replay stops with conflict() and must
  // be run again without.
  bool assume_resting_arrivals = true;
  // With `stop_when_converged`: per owned rank (program order), its clean cuts in event
  // order (replay_cuts.h: collectives of every rank that no dependency crosses; the k-th
  // the same instance on every rank). Once every rank leaves one exactly delta ahead of
  // the snapshot (its exit and injection horizon, the changed event before it), all that
  // follows is the snapshot's less delta, and the replay stops: the run ends at
  // Snapshot::run_end - delta. Only for scenarios that change nothing but the zeroed wait.
  const std::vector<std::vector<int64_t>> *cuts = nullptr;

  // What every replay reads of it (Engine, PassEngine): the network, event i's computation
  // gap on owned rank `slot` (measured: `measured`), and its flags from event_flags.
  LogGPS network() const { return ideal_network ? LogGPS::ideal() : net; }
  int64_t gap(size_t slot, size_t i, int64_t measured) const {
    return gaps.empty() || gaps[slot].empty() ? measured : gaps[slot][i];
  }
  uint8_t flags(size_t slot, size_t i) const {
    return event_flags.empty() || event_flags[slot].empty() ? 0 : event_flags[slot][i];
  }
};

inline constexpr uint8_t kZeroWait = 1, kZeroEvent = 2;

}  // namespace perfsift::kernels::replay
