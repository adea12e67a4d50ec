// The replay engine's state and its steps: the kernel's own (its .cpp files include it;
// everything else uses kernels/replay/engine.h). Split by concern over engine.cpp (the
// engine's life and its queue), engine_events.cpp (an event's posting and completion:
// the inner loop), engine_resume.cpp (resumed replays: ranks joining at their cut,
// collective instances gathered from the snapshot), engine_convergence.cpp (back on the
// snapshot, leads, clean cuts), engine_lanes.cpp (ranks calling MPI from several threads),
// rounds.cpp (a split replay's rounds) and snapshot.cpp (take_snapshot).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "kernels/loggps.h"
#include "kernels/replay/columns.h"
#include "kernels/replay/completion_formulas.h"
#include "kernels/replay/engine.h"
#include "kernels/replay/event_sink.h"
#include "kernels/replay/program.h"
#include "kernels/replay/rounds.h"
#include "kernels/replay/scenario.h"
#include "kernels/replay/snapshot.h"

namespace perfsift::kernels::replay {

class EngineCore {
 public:
  // `programs` are the owned ranks; `owner_of(rank)` is whether this engine owns a rank.
  // `distributed`: collect cross-owner traffic in the outbox (off for serial replays).
  EngineCore(const std::vector<RankProgram> &programs, const Scenario &scenario, int32_t nranks, bool record_timings,
             bool distributed = false);
  ~EngineCore();
  // The rank states resumed replays left to this thread for the next ones, freed (after
  // a search that resumes many).
  static void release_spare_states() { std::vector<std::vector<RankState>>().swap(spare_states()); }
  // Whether this thread's spare rank states are all as fresh ones but for what the
  // constructor sets for every rank (a write that bypassed touch() shows here).
  static bool spare_states_fresh();
  static size_t spare_state_sets() { return spare_states().size(); }
  EngineCore(const EngineCore &) = delete;
  EngineCore &operator=(const EngineCore &) = delete;

  // Advances every owned rank as far as possible. Returns whether anything moved.
  bool advance();
  bool finished() const { return m_unfinished == 0 || m_aborted || m_converged || m_conflict || m_shifted; }
  bool conflict() const { return m_conflict; }  // Scenario::assume_resting_arrivals failed
  bool aborted() const { return m_aborted; }
  bool converged() const { return m_converged; }
  int64_t unfinished() const { return m_unfinished; }
  // Releases every blocked dependency (the global fixpoint was reached with ranks stuck:
  // a crashed rank, or a message the trace lacks). Counted in `released()`.
  // Returns how many ranks it released (resumed replays release only ranks inside a call).
  int64_t release_stuck();
  int64_t released() const { return m_released; }

  Outbox take_outbox();
  void apply(const SendPost &p);
  void apply(const RecvPost &p);
  void apply(const Arrival &a);  // another engine's members
  void apply(const Pull &p);

  // Resumed replays that stop on the snapshot (distributed: the driver sums these over
  // engines after each exchange; back on it only when every engine is idle too): ranks
  // and values off the snapshot.
  int64_t off_snapshot() const { return m_dirty + m_pending; }
  // Nothing woken since the last advance and nothing for other engines not yet taken.
  bool idle() const {
    return m_queue.empty() && m_out_arrivals.empty() && m_out.sends.empty() && m_out.recvs.empty() &&
           m_out.arrivals.empty() && m_out.pulls.empty();
  }
  // Resumed replays that stop on the snapshot, once the changed event is replayed. lead:
  // the most anything off the snapshot here is ahead of it (rank clocks, injection
  // horizons, values not yet used, collective arrivals). The replay is max-plus, monotone
  // and 1-Lipschitz, so nothing computed later gains more than this over the snapshot: the
  // run ends no earlier than Snapshot::run_end less the largest lead over all engines
  // (distributed: the driver sums the engines' leads, an upper bound of it). horizon: the
  // earliest baseline time anything off the baseline can still reach (INT64_MAX: nothing).
  // Influence runs forward in baseline time, so an assumed arrival earlier than the
  // horizon can no longer come otherwise.
  using Frontier = Engine::Frontier;
  Frontier frontier() const;
  // Whether a lead (this engine's or the sum over engines) proves the run cannot end
  // before Scenario::abort_at.
  bool lead_passes_threshold(int64_t lead) const;

  using RoundReport = replay::RoundReport;
  using RoundEnd = replay::RoundEnd;
  RoundReport round_report(bool moved) const;
  RoundEnd round_end(const RoundReport &sum) const;
  void abort() { m_aborted = true; }
  void stop_shifted(int64_t delta) {
    m_shifted = true;
    m_shift = delta;
  }
  bool shifted() const { return m_shifted; }
  // After a stop at a clean cut: the snapshot's end less the shift.
  int64_t shifted_makespan() const { return m_sc.resume->run_end - m_shift; }

  // Results (owned ranks, program order).
  const std::vector<int64_t> &end_times() const { return m_end; }
  // Laned ranks' timings (completed out of event order) are settled into their columns
  // first.
  const std::vector<TimingColumn> &timings() {
    settle_lanes();
    return m_timings;
  }
  // The timings moved out (12.5 B per event: no second copy beside the engine's).
  std::vector<TimingColumn> take_timings() {
    settle_lanes();
    return std::move(m_timings);
  }
  // Called for every event replayed from now on (`which`: or only those that waited),
  // besides recording, if asked.
  void set_event_sink(EventSink sink, SinkEvents which = SinkEvents::All) { m_sink = {std::move(sink), which}; }
  // After a replay that recorded its timings: its state moved out, to resume others
  // from, with those timings. The engine is spent.
  Snapshot take_snapshot();
  // The programs' posting events (per owned rank, per send / receive / collective call)
  // as whoever keeps them holds them, for take_snapshot to borrow (checked there against
  // the programs) instead of building its own.
  void lend_posting_events(PostingEvents::Borrowed sends, PostingEvents::Borrowed recvs,
                           PostingEvents::Borrowed colls) {
    m_lent = {std::move(sends), std::move(recvs), std::move(colls)};
  }

 private:
  enum class Field : uint8_t { SlotRef, SendStart, RecvPost, RecvSendStart, RecvPosted, CollEnter, Flag };
  // Per-rank values by request slot, message or collective. A full replay holds them all;
  // a resumed one the range from `base` its replay reaches, filled from the snapshot as it
  // grows: the values before `base` were used up before the cut (Snapshot::open_lag).
  template <class T>
  struct Values {
    int64_t base = 0, size = 0;
    std::vector<T> v;
    T below{};  // a late write before `base`: its use ended before the cut
    void assign(size_t n, T x) {
      base = 0;
      size = static_cast<int64_t>(n);
      v.assign(n, x);
    }
    bool operator==(const Values &) const = default;
  };
  template <class T>
  T &at(int32_t s, Values<T> &w, int64_t k, Field f) {
    const size_t off = static_cast<size_t>(k - w.base);
    if (off < w.v.size()) [[likely]]
      return w.v[off];
    return grow(s, w, k, f);
  }
  template <class T>
  T &grow(int32_t s, Values<T> &w, int64_t k, Field f);
  int64_t initial(int32_t s, int64_t k, Field f) const;  // the value a resumed rank starts with

  struct RankState {
    int64_t cursor = 0;
    int64_t now = 0;           // exit of the previous event
    int64_t enter = kUnknown;  // of the current event once posted
    int64_t next_inject = std::numeric_limits<int64_t>::min() / 4;
    bool posted = false;
    bool queued = false;
    bool release = false;                       // release_stuck applies to the current event
    int64_t step = 0;                           // laned programs: the next of RankProgram::steps
    std::vector<int64_t> lane_now, lane_enter;  // laned programs: per lane, previous exit and current enter
    std::vector<uint8_t> lane_started;
    Values<int32_t> slot_ref;         // request slot -> item that activated it
    Values<int64_t> send_start;       // per send: when it started
    Values<int64_t> recv_post;        // per send: when the receiver posted (rendezvous)
    Values<int64_t> recv_send_start;  // per receive: when the matching send started
    Values<int64_t> recv_posted;      // per receive: when it was posted
    Values<int64_t> coll_enter;       // per collective: when this member arrived
    // Resumed replays that stop on the snapshot: values off it not yet used.
    Values<uint8_t> recv_differs, send_differs;
    // Resumed replays: whether the rank has joined (at its cut), up to which event others
    // need it, its values off the snapshot not yet used, and the snapshot's injection
    // horizon beside its own.
    bool live = true;
    bool ahead = false;  // pulled, distributed: runs on while it has what it needs
    int64_t cut = 0;
    int64_t demand = -1;
    int64_t pending = 0;
    int64_t pending_lead = 0;  // the largest lead of those values (reset when none is left)
    int64_t snapshot_inject = std::numeric_limits<int64_t>::min() / 4;
    size_t next_cut = 0;  // Scenario::cuts: the next of the rank's clean cuts
    bool operator==(const RankState &) const = default;
  };
  struct CollState {
    int32_t count = 0;
    int64_t max_enter = kUnknown, root_enter = kUnknown;
    int32_t expected = 0;
    // Resumed replays: the owned members that use its arrivals, those whose using call
    // completed, whether what the members wait for (latest or root arrival) differs from
    // the snapshot, whether the snapshot's earlier arrivals were gathered, and one owned
    // member (slot, index) to read the snapshot's values from.
    int32_t local_users = 0, used = 0;
    bool divergent = false;
    bool gathered = false;
    bool lead_listed = false;  // in m_lead_colls
    int64_t arrival_lead = 0;  // the largest lead of an owned member's arrival
    int32_t member_slot = -1, member_index = -1;
    std::vector<uint64_t> assumed;  // per member (Snapshot::members_of order): assumed, not yet seen
  };

  void step(int32_t s);  // process rank slot s until it blocks or ends
  // Resumed replays: rank slot s joins at its cut with the snapshot's state there; the
  // collective's state with the snapshot's earlier arrivals; a rank needed up to an event.
  int64_t cut_of(int32_t s) const;
  // A resting rank's cursor is its cut, found when first asked (kCutPending until then).
  static constexpr int64_t kCutPending = -1;
  int64_t position(int32_t s) const;
  void join(int32_t s);
  CollState &coll_state(int64_t instance);
  void need(int32_t s, int64_t event);
  void pull(int32_t rank, bool send, int64_t index);
  bool resting(int32_t s) const;
  bool needed(int32_t s) const;
  void check_divergence(CollState &c);
  bool try_event(int32_t s);
  bool try_lane_step(int32_t s);  // laned programs: one post or completion of RankProgram::steps
  // The event's completion from `enter`: false when a dependency is missing (the rank then
  // waits for it); else its exit, and its exit had nothing been waited for.
  bool complete_event(int32_t s, const Event &e, int64_t enter, uint8_t flags, int64_t &exit, int64_t &nowait_exit);
  uint8_t event_flags(int32_t s, int64_t i) const;
  void post_items(int32_t s, const Event &e, int64_t enter);
  // An item's completion having waited (kUnknown when a dependency is missing; then
  // `nowait` is not computed) and without waiting, from one decoding of the item; with
  // `skip_wait` both are the latter.
  struct Done {
    int64_t wait, nowait;
  };
  Done item_done(int32_t s, const Item &it, int64_t enter, bool skip_wait);
  Done send_done(int32_t s, int32_t send_index, int64_t start, bool skip_wait);
  Done recv_done(int32_t s, int32_t recv_index, int64_t post, bool skip_wait);
  Done coll_done(int32_t s, const Collective &c, int64_t enter, bool skip_wait);
  int64_t bytes_of(int32_t s, int32_t send_index) const;
  void wake(int32_t rank);
  void arrive(int64_t instance, int32_t count, int64_t max_enter, int64_t root_enter, int32_t expected);
  void deliver_send(int32_t dst, int32_t recv_index, int64_t t, int64_t bytes);
  void deliver_recv(int32_t src, int32_t send_index, int64_t t);

  const std::vector<RankProgram> &m_prog;
  const Scenario &m_sc;
  LogGPS m_net;
  bool m_record, m_distributed;
  std::array<PostingEvents::Borrowed, 3> m_lent;  // sends, receives, collective calls (lend_posting_events)
  std::vector<int32_t> m_slot_of;                 // world rank -> owned slot or -1
  std::vector<RankState> m_state;
  // Resumed replays (the domino search runs thousands, each touching a few ranks) take
  // their rank states from the thread's spare ones and hand them back with the touched
  // ranks' reset: constructing and destroying every rank's state (about 0.6 kB each) was
  // a fifth of the search. Every write to a rank's state goes through touch().
  bool m_recycled = false;
  std::vector<uint8_t> m_touched_flag;
  std::vector<int32_t> m_touched;
  RankState &touch(int32_t s) {
    const auto q = static_cast<size_t>(s);
    if (m_recycled && !m_touched_flag[q]) {
      m_touched_flag[q] = 1;
      m_touched.push_back(s);
    }
    return m_state[q];
  }
  static std::vector<std::vector<RankState>> &spare_states();  // this thread's
  std::vector<int32_t> m_queue;
  std::unordered_map<int64_t, CollState> m_coll;
  std::unordered_map<int64_t, std::vector<int32_t>> m_coll_waiters;
  std::unordered_map<int64_t, Arrival> m_out_arrivals;
  // Sizes of incoming messages a scenario changed: (slot << 32 | recv index) -> bytes.
  std::unordered_map<uint64_t, int64_t> m_changed_bytes;
  Outbox m_out;
  std::vector<int64_t> m_end;
  std::vector<TimingColumn> m_timings;
  // Laned ranks record by event as they complete (out of event order), 24 B per event,
  // until settle_lanes() moves them into m_timings.
  std::vector<std::vector<EventTiming>> m_lane_timings;
  void settle_lanes();
  SinkOf m_sink;
  int64_t m_unfinished = 0, m_released = 0;
  bool m_aborted = false, m_conflict = false;
  // Members assumed to arrive as in the snapshot and not yet seen: per gathered instance
  // a bit per member (Snapshot::members_of order), and how many are left over all.
  int64_t m_assumed = 0;
  bool take_assumed(int32_t s, int64_t instance);  // whether slot s's arrival was assumed (then no longer)
  // Convergence (Scenario::stop_when_converged).
  bool m_converge = false, m_converged = false;
  int64_t m_dirty = 0, m_pending = 0;  // ranks off the snapshot; differing values not yet used
  std::vector<uint8_t> m_rank_dirty;
  // Leads (lead()): the ranks that joined, the collectives with an arrival ahead of the
  // snapshot or a divergent outcome, and events completed since the last check.
  static constexpr int64_t kLeadCheckEvents = 1024;
  std::vector<int32_t> m_joined;
  mutable std::vector<int64_t> m_lead_colls;
  int64_t m_since_lead_check = 0;
  bool m_rest_bound_met = false;  // Scenario::rest proved abort_at out of reach, if no assumption fails
  int64_t m_assumed_latest = std::numeric_limits<int64_t>::min();  // of every assumed arrival
  bool settled(const Frontier &f) const { return m_assumed == 0 || f.horizon > m_assumed_latest; }
  // Clean cuts (Scenario::cuts): per cut, the owned ranks that left it and whether all
  // left it equally ahead of the snapshot; the run of completed cuts so far that were.
  struct CutTally {
    int64_t count = 0, lead = 0;
    bool even = true;
  };
  const std::vector<std::vector<int64_t>> *m_cuts = nullptr;
  std::unordered_map<int64_t, CutTally> m_cut_tally;
  int64_t m_cut_first = std::numeric_limits<int64_t>::max(), m_cut_last = std::numeric_limits<int64_t>::min(),
          m_cut_lead = 0;
  bool m_shifted = false;
  int64_t m_shift = 0;
  void left_cut(int32_t s, int64_t event, int64_t exit);
  void used_recv(int32_t s, int32_t i);
  void used_send(int32_t s, int32_t i);
  void used_coll(int32_t s, int32_t c);
  void differs(int32_t s, bool send, int32_t index, int64_t lead);
  void list_lead(int64_t instance, CollState &c);
  void rank_finished(int32_t s);
  bool consumed(int32_t rank, const std::vector<std::vector<int32_t>> &consumer, int32_t index) const;
  bool zero_wait_done() const;
  bool back_on_snapshot() const;  // no rank nor value off it, the changed event replayed

 public:
  // After convergence: the run's end, the snapshot's for ranks not yet finished.
  int64_t converged_makespan() const;

 private:
};

}  // namespace perfsift::kernels::replay
