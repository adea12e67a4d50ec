// PerWiz's domino paths (Fig. 3): which waiting, if it vanished, would topple the
// most waiting after it? From each process's last event, backtrack happened-before
// edges: among the process's events up to the current one, the event whose zeroed wait
// gives the shortest predicted run is followed to its partner on another process, while
// the prediction keeps improving. Ties are explored in turn (the round robin the paper
// describes). The longest-wait choice is reported beside it for comparison.
//
// The search reads the run through a RunView: every rank held here (SerialView, for
// find_paths over programs), or each rank asked on its owner (the pipeline's distributed
// view), with the same answers either way.
//
// Cost: each candidate is one replay, O(events) at worst; in practice the part its change
// disturbs: it resumes from the baseline at the zeroed event, advances only the ranks
// whose values differ or that a replayed rank needs, and stops once back on the baseline
// (replay.h, Scenario::stop_when_converged). Candidates are memoised across paths and
// pruned by a bound: zeroing a wait of w shortens the run by at most w (the replay is
// monotone and 1-Lipschitz in every delay), so candidates are tried by decreasing wait
// and the search stops when no remaining wait can beat the best.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/replay.h"

namespace perfsift::kernels::domino {

struct EventRef {
  int32_t rank = -1;
  int64_t event = -1;
  bool operator==(const EventRef &o) const { return rank == o.rank && event == o.event; }
};

struct Step {
  EventRef event;         // e_{p,m}: the event whose wait is zeroed
  EventRef partner;       // e_{q,j}: the event it waited for
  int64_t wait = 0;       // its waiting time in the baseline, ns
  int64_t predicted = 0;  // predicted run time with that wait zeroed, ns
};

struct Path {
  int32_t rank = -1;      // the process the path terminates at
  int64_t predicted = 0;  // w(D_p): the best predicted time along it
  std::vector<Step> steps;
};

struct Result {
  int64_t baseline = 0;
  int64_t best = 0;         // T: the minimum over all paths
  std::vector<Path> paths;  // D: the paths reaching T (and, for context, every process's)
  Step longest_wait;        // the longest-waiting event, zeroed alone (the baseline: gains < min_gain)
  int64_t replays = 0;      // candidate replays actually run
};

struct Options {
  int max_ties = 4;  // tied minima explored per step
  int64_t max_replays = 100000;
  // A path counts only when its first step shortens the run by at least this (ns): a
  // smaller gain changes no answer, and since zeroing a wait of w gains at most w, waits
  // below it are never replayed (a balanced run's many small waits were the whole cost).
  int64_t min_gain = 0;
};

// Predicted run time for each event's wait zeroed (one serial replay per event), or
// INT64_MAX when it cannot be below `threshold` (the replay stopped early); the caller
// may spread the batch over threads or processes.
using Evaluate = std::function<std::vector<int64_t>(const std::vector<EventRef> &, int64_t threshold)>;

// What the search reads of the run. The serial view holds every rank; a distributed view
// asks each rank's owner, so every call is collective there and must answer the same on
// every process.
class RunView {
 public:
  virtual ~RunView() = default;
  struct Candidate {
    int64_t event, wait, enter;  // an event that waited: its index, wait and baseline enter
  };
  virtual int64_t baseline() = 0;                  // the replayed run time
  virtual std::vector<int64_t> last_events() = 0;  // per rank: its last event, -1 none
  virtual std::vector<int64_t> ends() = 0;         // per rank: its baseline end, 0 none
  // The events of `rank` up to `last` that waited at least `min_wait` (> 0; not in
  // MPI_Finalize), in event order.
  virtual std::vector<Candidate> waits_up_to(int32_t rank, int64_t last, int64_t min_wait) = 0;
  // Per candidate: no rank can gain more than its wait, nor more than its own waiting
  // from the candidate's time on: max_r end_r - min(wait, W_r(>= enter)).
  virtual std::vector<int64_t> lower_bounds(const std::vector<Candidate> &cands) = 0;
  // The event e waited for on another rank, the latest-entering first (rank -1: none).
  virtual EventRef partner(EventRef e) = 0;
  virtual Step longest_wait() = 0;  // its event and wait
  virtual std::vector<int64_t> evaluate(const std::vector<EventRef> &events, int64_t threshold) = 0;
};

Result find_paths(RunView &view, const Options &opt = {});

// An event's waiting in the baseline: exit less its exit had nothing been waited for; 0 in
// MPI_Finalize (the end of the run, not a message anyone can reschedule).
int64_t event_wait(const replay::RankProgram &p, const replay::EventTiming &t, size_t i);

// The least event i's call can take in any replay of the same programs: its duration had
// nothing been waited for, except where that is no floor: a send may have waited for the
// injection of an earlier one, and a member of a collective whose data flows from its root
// leaves once the root's data is in, however late it entered (both: 0).
int64_t duration_floor(const replay::RankProgram &p, const replay::EventTiming &t, size_t i);

// RunView::lower_bounds over the ranks held. With W_r(>= t) the time rank r's calls took
// beyond their floors from t on (what any change can take off its end),
// max_r end_r - min(w, W_r(>= t)) is max(max_r end_r - w, F(t)) with
// F(t) = max_r end_r - W_r(>= t); each rank's term only grows with t, so F is a prefix
// maximum over the events by enter time, kept where it rises: O(log rises) per candidate.
// 16 B per event whose term passes F before any event while it is built, per rise after.
class WaitBound {
 public:
  WaitBound() = default;
  // The ranks held: their programs and baseline timings.
  WaitBound(const std::vector<replay::RankProgram> &programs, const std::vector<replay::TimingColumn> &timings);
  int64_t bound(int64_t enter, int64_t wait) const;  // 0 without ranks
  // bound() of each candidate, looked up in enter order (a long run's steps fill more than
  // the cache: a search from the previous answer's place is a few lines, not twenty).
  std::vector<int64_t> bounds(const std::vector<RunView::Candidate> &cands) const;

 private:
  std::vector<std::pair<int64_t, int64_t>> m_steps;  // (enter, F just after it), by enter; where F rises
  int64_t m_first = 0, m_latest_end = 0;             // F before any event; max end
};

// `programs` hold every rank; `baseline` their replayed timings; partners(e) the events
// e waited for (senders of its messages, the last arrival of its collective).
Result find_paths(const std::vector<replay::RankProgram> &programs, const std::vector<replay::TimingColumn> &baseline,
                  const std::function<std::vector<EventRef>(EventRef)> &partners, const Evaluate &evaluate,
                  const Options &opt = {});

// Lower bounds for early stopping: rest[slot][i] = the computation and the calls' floors
// (duration_floor) from event i to the rank's end.
std::vector<replay::BlockDeltaColumn> rest_bounds(const std::vector<replay::RankProgram> &programs,
                                                  const std::vector<replay::TimingColumn> &baseline);

// One candidate: the run with e's wait zeroed, resumed from the baseline snapshot at e's
// start, stopped at a clean cut (`cuts`: Scenario::cuts, or null) or early against
// `threshold` (INT64_MAX then).
int64_t zero_wait_time(const std::vector<replay::RankProgram> &programs, const replay::Scenario &base,
                       const std::vector<replay::BlockDeltaColumn> &rest, const replay::Snapshot &snap,
                       const std::vector<std::vector<int64_t>> *cuts, int32_t slot, EventRef e, int64_t threshold);

// The serial evaluator: one replay per event, spread over OpenMP threads, each stopping
// early against the threshold.
Evaluate serial_evaluator(const std::vector<replay::RankProgram> &programs, const replay::Scenario &base,
                          const std::vector<replay::BlockDeltaColumn> &rest);

// What an event waited for, read from its own rank's program alone (the partner's event
// is named by whoever holds the partner): the sender of a message it received, the receiver
// of one it sent, a collective instance. In the event's item order.
struct WaitSource {
  enum Kind : int32_t { Sender, Receiver, Instance };
  Kind kind;
  int32_t rank;   // Sender/Receiver: that rank; Instance: its root if data flows from it, else -1
  int64_t index;  // Sender: the partner's send index; Receiver: its recv index; Instance: the instance
};
std::vector<WaitSource> wait_sources(const replay::RankProgram &p, int64_t event);

// Partners from the programs and the baseline: for every event, the events whose times
// it depended on.
std::function<std::vector<EventRef>(EventRef)> program_partners(const std::vector<replay::RankProgram> &programs,
                                                                const std::vector<replay::TimingColumn> &baseline);

}  // namespace perfsift::kernels::domino
