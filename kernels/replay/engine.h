// The replay engine: a discrete-event simulation of the owned ranks' programs under a
// scenario (see kernels/replay.h for the model). Its state is kernels/replay/engine_core.h,
// the kernel's own: an Engine call reaches it through one pointer, the events within a
// call never do.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/replay/columns.h"
#include "kernels/replay/event_sink.h"
#include "kernels/replay/program.h"
#include "kernels/replay/rounds.h"
#include "kernels/replay/scenario.h"
#include "kernels/replay/snapshot.h"

namespace perfsift::kernels::replay {

class EngineCore;

class Engine {
 public:
  // `programs` are the owned ranks; `owner_of(rank)` is whether this engine owns a rank.
  // `distributed`: collect cross-owner traffic in the outbox (off for serial replays).
  Engine(const std::vector<RankProgram> &programs, const Scenario &scenario, int32_t nranks, bool record_timings,
         bool distributed = false);
  ~Engine();
  // The rank states resumed replays left to this thread for the next ones, freed (after
  // a search that resumes many).
  static void release_spare_states();
  // Whether this thread's spare rank states are all as fresh ones but for what the
  // constructor sets for every rank (a write that bypassed the engine's touch() shows here).
  static bool spare_states_fresh();
  static size_t spare_state_sets();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  // Advances every owned rank as far as possible. Returns whether anything moved.
  bool advance();
  bool finished() const;
  bool conflict() const;  // Scenario::assume_resting_arrivals failed
  bool aborted() const;
  bool converged() const;
  int64_t unfinished() const;
  // Releases every blocked dependency (the global fixpoint was reached with ranks stuck:
  // a crashed rank, or a message the trace lacks). Counted in `released()`.
  // Returns how many ranks it released (resumed replays release only ranks inside a call).
  int64_t release_stuck();
  int64_t released() const;

  // Cross-owner traffic (kernels/replay/rounds.h).
  using SendPost = replay::SendPost;
  using RecvPost = replay::RecvPost;
  using Arrival = replay::Arrival;
  using Pull = replay::Pull;
  using Outbox = replay::Outbox;
  Outbox take_outbox();
  void apply(const SendPost &p);
  void apply(const RecvPost &p);
  void apply(const Arrival &a);  // another engine's members
  void apply(const Pull &p);

  // Resumed replays that stop on the snapshot (distributed: the driver sums these over
  // engines after each exchange; back on it only when every engine is idle too): ranks
  // and values off the snapshot.
  int64_t off_snapshot() const;
  // Nothing woken since the last advance and nothing for other engines not yet taken.
  bool idle() const;
  // Resumed replays that stop on the snapshot, once the changed event is replayed. lead:
  // the most anything off the snapshot here is ahead of it (rank clocks, injection
  // horizons, values not yet used, collective arrivals). The replay is max-plus, monotone
  // and 1-Lipschitz, so nothing computed later gains more than this over the snapshot: the
  // run ends no earlier than Snapshot::run_end less the largest lead over all engines
  // (distributed: the driver sums the engines' leads, an upper bound of it). horizon: the
  // earliest baseline time anything off the baseline can still reach (INT64_MAX: nothing).
  // Influence runs forward in baseline time, so an assumed arrival earlier than the
  // horizon can no longer come otherwise.
  struct Frontier {
    int64_t lead, horizon;
  };
  Frontier frontier() const;
  // Whether a lead (this engine's or the sum over engines) proves the run cannot end
  // before Scenario::abort_at.
  bool lead_passes_threshold(int64_t lead) const;

  // Rounds of a replay split over owners (kernels/replay/rounds.h).
  using RoundReport = replay::RoundReport;
  using RoundEnd = replay::RoundEnd;
  RoundReport round_report(bool moved) const;
  static void combine(RoundReport &into, const RoundReport &from) { replay::combine(into, from); }
  RoundEnd round_end(const RoundReport &sum) const;
  void abort();
  void stop_shifted(int64_t delta);
  bool shifted() const;
  // After a stop at a clean cut: the snapshot's end less the shift.
  int64_t shifted_makespan() const;
  // After convergence: the run's end, the snapshot's for ranks not yet finished.
  int64_t converged_makespan() const;

  // Results (owned ranks, program order).
  const std::vector<int64_t> &end_times() const;
  // Laned ranks' timings (completed out of event order) are settled into their columns
  // first.
  const std::vector<TimingColumn> &timings();
  // The timings moved out (12.5 B per event: no second copy beside the engine's).
  std::vector<TimingColumn> take_timings();
  // Called for every event replayed from now on (`which`: or only those that waited),
  // besides recording, if asked.
  void set_event_sink(EventSink sink, SinkEvents which = SinkEvents::All);
  // After a replay that recorded its timings: its state moved out, to resume others
  // from, with those timings. The engine is spent.
  Snapshot take_snapshot();
  // The programs' posting events (per owned rank, per send / receive / collective call)
  // as whoever keeps them holds them, for take_snapshot to borrow (checked there against
  // the programs) instead of building its own.
  void lend_posting_events(PostingEvents::Borrowed sends, PostingEvents::Borrowed recvs, PostingEvents::Borrowed colls);

 private:
  std::unique_ptr<EngineCore> m_core;
};

}  // namespace perfsift::kernels::replay
