// PerWiz's replay: a discrete-event simulation of the run's message DAG on LogGPS.
//
// Each application rank is a sequence of events (MPI calls) separated by computation.
// Computation and local calls keep their measured time; communication follows LogGPS
// (kernels/loggps.h), synchronous above S; collectives synchronise per their flow and
// cost rounds of small messages plus their bytes. A scenario (what-if question) changes
// computation gaps, message sizes, the network, or lets events skip waiting.
//
// The engine advances the ranks it owns as far as their dependencies allow. Dependencies
// on ranks another process owns arrive through `apply_*` and leave through `outbox`,
// so the same code replays serially (one engine owns every rank) or distributed (the
// pipeline exchanges outboxes between MPI processes in rounds). Results do not depend
// on the split: every time is a function of its inputs only, and stuck dependencies are
// released together at the global fixpoint.
//
// Cost: O(events + items) per replay; memory per event is stated by bench_replay.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kernels/loggps.h"

namespace perfsift::kernels::replay {

inline constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();

// The n-th collective call on a communicator is the same instance on every member
// (MPI orders collectives per communicator). comm = -2 names MPI_Finalize.
inline int64_t instance_id(int32_t comm, int64_t sequence) { return (int64_t{comm + 2} << 40) | sequence; }
inline int32_t instance_comm(int64_t instance) { return static_cast<int32_t>(instance >> 40) - 2; }

// What an event does to the network. A blocking send is a post and a completion in one
// event; MPI_Sendrecv holds a send and a receive; MPI_Waitall completes several requests.
enum class ItemType : uint8_t {
  Send,            // blocking send of sends[index]
  Recv,            // blocking receive of recvs[index]
  PostSend,        // nonblocking send of sends[index] (request slot in Item::slot)
  PostRecv,        // nonblocking receive of recvs[index]
  Collective,      // blocking collective colls[index]
  PostCollective,  // nonblocking collective colls[index]
  Complete,        // completes the request in slot `index`
};
// 8 bytes: the replay keeps one or two per event.
struct Item {
  Item() : type(ItemType::Complete), index(0) {}
  Item(ItemType t, int32_t i, int32_t s = -1) : type(t), index(i), slot(s) {}
  ItemType type : 3;
  int32_t index : 29;  // up to 2^28 messages, collectives or requests per rank
  int32_t slot = -1;   // request slot activated by a Post* item
};
static_assert(sizeof(Item) == 8);

// 16 bytes. A local event (items == 0) keeps its measured duration: owns[first_item].
struct Event {
  int64_t gap = 0;  // measured computation before the event, ns
  int32_t first_item = 0;
  uint16_t items = 0;
  uint16_t flags = 0;
};
static_assert(sizeof(Event) == 16);

struct SendMessage {
  int64_t bytes = 0;
  int32_t dst = -1;         // world rank of the receiver; -1 when unmatched
  int32_t recv_index = -1;  // index into the receiver's recvs
};
// 16 bytes: a matched receive keeps its send's bytes, an unmatched one (src < 0) its
// measured duration, in one field (nothing reads the bytes of a receive no send met).
struct RecvMessage {
  int64_t value = 0;
  int32_t src = -1;  // world rank of the sender; -1 when unmatched
  int32_t send_index = -1;
  static RecvMessage matched(int64_t bytes, int32_t src, int32_t send_index) { return {bytes, src, send_index}; }
  static RecvMessage unmatched(int64_t duration) { return {duration, -1, -1}; }
  int64_t bytes() const { return src >= 0 ? value : 0; }
  int64_t own_unmatched() const { return src < 0 ? value : 0; }
};
static_assert(sizeof(RecvMessage) == 16);
struct Collective {
  int64_t instance = 0;  // instance_id(communicator, sequence number): the same on every member
  int32_t members = 1;   // ranks expected to take part
  int32_t root = -1;     // world rank of the root (rooted flows)
  CollectiveFlow flow = CollectiveFlow::All;
  int64_t rounds = 0, bytes = 0;  // LogGPS cost inputs (kernels/loggps.h collective_cost)
  int64_t remainder = 0;          // Finalize: the measured time after the last member arrived
};

// The completion formulas every replay shares (Engine, PassEngine): a call's end from its
// own start and what it waits for. `nowait`: the call waits for nobody (zeroed wait, or a
// dependency released at a stuck fixpoint); what it would wait for is then not read.

// A send waits for its receiver when it is matched and synchronous (rendezvous).
inline bool send_waits(const LogGPS &net, int64_t bytes, bool matched) { return matched && net.rendezvous(bytes); }
inline int64_t send_completion(const LogGPS &net, int64_t bytes, bool matched, int64_t start, int64_t recv_posted,
                               bool nowait) {
  if (!send_waits(net, bytes, matched)) return start + net.send_overhead(bytes);
  int64_t h = start + net.handshake();
  if (!nowait) h = std::max(h, recv_posted);
  // Rendezvous: the clear-to-send travels back (L), then the sender pushes the data.
  return h + LogGPS::ns(net.L) + net.send_overhead(bytes);
}
// A matched receive posted at `post` of a message whose send started at `sent`.
inline int64_t recv_completion(const LogGPS &net, int64_t bytes, int64_t post, int64_t sent, bool nowait) {
  if (!net.rendezvous(bytes))
    return (nowait ? post : std::max(post, sent + net.flight(bytes))) + net.recv_overhead(bytes);
  const int64_t h = nowait ? post : std::max(sent + net.handshake(), post);
  return h + LogGPS::ns(net.L) + net.flight(bytes) + net.recv_overhead(bytes);
}
// What a member's completion needs besides its own arrival: nothing (a non-root member
// sending to its root, a broadcast's root, or not waiting), the root's arrival
// (FromRoot), or every member's.
enum class CollectiveNeeds : uint8_t { Nothing, Root, All };
inline CollectiveNeeds collective_needs(CollectiveFlow flow, bool is_root, bool nowait) {
  if ((flow == CollectiveFlow::ToRoot && !is_root) || (flow == CollectiveFlow::FromRoot && is_root) || nowait)
    return CollectiveNeeds::Nothing;
  return flow == CollectiveFlow::FromRoot ? CollectiveNeeds::Root : CollectiveNeeds::All;
}

// A member's completion from its arrival `enter`, the latest arrival and the root's (each
// read only when collective_needs says so).
inline int64_t collective_completion(const LogGPS &net, const Collective &c, bool is_root, int64_t enter,
                                     int64_t max_enter, int64_t root_enter, bool nowait) {
  if (c.flow == CollectiveFlow::ToRoot && !is_root) return enter + net.send_overhead(c.bytes);
  const int64_t cost = c.flow == CollectiveFlow::Finalize ? c.remainder : collective_cost(net, c.rounds, c.bytes);
  switch (collective_needs(c.flow, is_root, nowait)) {
    case CollectiveNeeds::Nothing:
      return enter + cost;
    case CollectiveNeeds::Root:
      return std::max(enter, root_enter + cost);
    case CollectiveNeeds::All:
      break;
  }
  return std::max(enter, max_enter) + cost;
}

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

struct RankProgram {
  int32_t rank = 0;
  std::vector<Event> events;
  std::vector<Item> items;
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  std::vector<Collective> colls;
  std::vector<int64_t> owns;  // durations of local events
  int32_t request_slots = 0;
  // A rank calling MPI from several threads: each event's lane (its thread; 0 the one that
  // initialised MPI), and the lanes' steps in measured order, two per event: event << 1 to
  // post it, event << 1 | 1 to complete it. Each lane runs its own clock (an event enters
  // at its lane's previous exit plus its gap; a lane's first event at lane 0's latest
  // entry plus its gap); posting and completing in measured order keeps every dependency between the
  // lanes (a message, a request completed by another thread) ahead of its use. Both empty
  // for a single stream.
  std::vector<uint8_t> lane;
  std::vector<int32_t> steps;
  bool laned() const { return !steps.empty(); }
  // A local event keeping `duration`.
  void add_local(int64_t gap, int64_t duration) {
    events.push_back({gap, static_cast<int32_t>(owns.size()), 0, 0});
    owns.push_back(duration);
  }
};

struct Snapshot;

// Exact int64 values in 4.5 B each instead of 8: a 64-bit value per block of 16 and each
// value's signed 32-bit difference from its block's. Once a difference does not fit in
// 32 bits, the column keeps plain 64-bit values (all of them, from then on). One rank's
// early-stop bounds (Scenario::rest) and its replayed exits (TimingColumn).
class BlockDeltaColumn {
 public:
  BlockDeltaColumn() = default;
  explicit BlockDeltaColumn(const std::vector<int64_t> &values);
  size_t size() const { return m_full.empty() ? m_diff.size() : m_full.size(); }
  bool empty() const { return size() == 0; }
  int64_t operator[](size_t i) const { return m_full.empty() ? m_block[i / kBlock] + m_diff[i] : m_full[i]; }
  // f(i, value) for i = 0, 1, ... in order until f returns false: a block's base read once
  // for its values, where operator[] reads it for each.
  template <class F>
  void scan(F &&f) const {
    const size_t n = size();
    if (!m_full.empty()) {
      for (size_t i = 0; i < n; ++i)
        if (!f(i, m_full[i])) return;
      return;
    }
    for (size_t first = 0; first < n; first += kBlock) {
      const int64_t base = m_block[first / kBlock];
      const size_t last = std::min(n, first + kBlock);
      for (size_t i = first; i < last; ++i)
        if (!f(i, base + m_diff[i])) return;
    }
  }
  void push_back(int64_t v);
  void reserve(size_t n);
  void shrink_to_fit();
  // Its parts, for packing into a message and back (gather_whole).
  template <class Self, class F>
  static void each_part(Self &c, F &&f) {
    f(c.m_block);
    f(c.m_diff);
    f(c.m_full);
  }

 private:
  static constexpr size_t kBlock = 16;
  void widen();  // to plain 64-bit values
  std::vector<int64_t> m_block, m_full;
  std::vector<int32_t> m_diff;
};

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

// Called for every replayed event: predicted enter and exit, and the exit had nothing
// been waited for (exit - nowait_exit is the event's waiting time).
struct EventTiming {
  int64_t enter, exit, nowait_exit;
};

// One rank's replayed timings in about 12.5 B per event instead of 24, exactly: its exits
// (BlockDeltaColumn, 4.5 B), and per event its duration exit - enter and its waiting
// exit - nowait_exit in 32 bits each. A duration or waiting that does not fit in
// [0, 2^32 - 1) (a barrier of seconds; a negative one: a local call measured negative, a
// member of a rooted collective that arrives after the root) holds kWide there, and its
// time whole in a table sorted by event.
class TimingColumn {
 public:
  size_t size() const { return m_exit.size(); }
  bool empty() const { return m_exit.empty(); }
  int64_t exit(size_t i) const { return m_exit[i]; }
  int64_t enter(size_t i) const { return before(exit(i), m_duration[i], m_wide_enter, i); }
  int64_t nowait_exit(size_t i) const { return before(exit(i), m_waiting[i], m_wide_nowait_exit, i); }
  EventTiming operator[](size_t i) const {
    const int64_t x = exit(i);
    return {before(x, m_duration[i], m_wide_enter, i), x, before(x, m_waiting[i], m_wide_nowait_exit, i)};
  }
  EventTiming back() const { return (*this)[size() - 1]; }
  void push_back(const EventTiming &t);
  void reserve(size_t n);
  void shrink_to_fit();
  // Its parts, for packing into a message and back (gather_whole).
  template <class Self, class F>
  static void each_part(Self &c, F &&f) {
    BlockDeltaColumn::each_part(c.m_exit, f);
    f(c.m_duration);
    f(c.m_waiting);
    f(c.m_wide_enter);
    f(c.m_wide_nowait_exit);
  }

 private:
  static constexpr uint32_t kWide = std::numeric_limits<uint32_t>::max();
  struct Wide {
    uint64_t event;
    int64_t value;
  };
  // `value` as its difference below `exit` in 32 bits, or kWide (then kept in `wide`).
  static uint32_t narrow(int64_t exit, int64_t value, std::vector<Wide> &wide, size_t i);
  static int64_t before(int64_t exit, uint32_t d, const std::vector<Wide> &wide, size_t i) {
    if (d != kWide) [[likely]]
      return static_cast<int64_t>(static_cast<uint64_t>(exit) - d);
    return wide_value(wide, i);
  }
  static int64_t wide_value(const std::vector<Wide> &wide, size_t i);
  BlockDeltaColumn m_exit;
  std::vector<uint32_t> m_duration, m_waiting;
  std::vector<Wide> m_wide_enter, m_wide_nowait_exit;  // sorted by event
};

// Each replayed event of an owned rank: its slot, its index, its timing. For sums over
// events (the waiting per call site) without recording every timing (12.5 B per event).
using EventSink = std::function<void(int32_t slot, int64_t event, const EventTiming &)>;
// Which replayed events a sink sees: every one, or those that waited (exit != nowait_exit):
// a sum of waiting skips the call for the others, most of a run's events.
enum class SinkEvents : uint8_t { All, Waited };
// A sink with the events it sees: what an engine calls for each replayed event.
struct SinkOf {
  EventSink sink;
  SinkEvents which = SinkEvents::All;
  void see(int32_t slot, int64_t event, const EventTiming &t) const {
    if (sink && (which == SinkEvents::All || t.exit != t.nowait_exit)) sink(slot, event, t);
  }
};

// Per owned rank (program order), per send, receive or collective call: the event that
// posts it. The program's own, the same for every replay: a snapshot borrows the tables
// of whoever keeps them (the replay model's side data) rather than holding a copy (4 B
// per message end and call), or holds its own.
class PostingEvents {
 public:
  using Borrowed = std::vector<const std::vector<int32_t> *>;
  const std::vector<int32_t> &operator[](size_t s) const { return m_borrowed.empty() ? m_own[s] : *m_borrowed[s]; }
  size_t size() const { return m_borrowed.empty() ? m_own.size() : m_borrowed.size(); }
  bool borrowed() const { return !m_borrowed.empty(); }
  void borrow(Borrowed tables) {
    m_borrowed = std::move(tables);
    m_own = {};
  }
  std::vector<std::vector<int32_t>> &own() { return m_own; }

 private:
  std::vector<std::vector<int32_t>> m_own;
  Borrowed m_borrowed;
};

// The state of a finished replay of the owned ranks (program order), to resume others
// from (Scenario::resume). A resumed replay starts each rank at its cut, the first event
// whose exit_max passes the resume time: what ended by then cannot change.
struct Snapshot {
  // The replayed timings: held, or borrowed from whoever keeps the same replay (the
  // pipeline's baseline: 12.5 B per event not held twice).
  std::vector<TimingColumn> own_timings;
  const std::vector<TimingColumn> *borrowed_timings = nullptr;
  const std::vector<TimingColumn> &timings() const { return borrowed_timings ? *borrowed_timings : own_timings; }
  // Per event: the largest exit up to it. Held only for ranks whose exits ever fall (laned
  // ranks); a single stream's exits never do (8 B per event not held).
  std::vector<std::vector<int64_t>> exit_max;
  int64_t exit_max_at(size_t slot, size_t event) const {
    return exit_max[slot].empty() ? timings()[slot].exit(event) : exit_max[slot][event];
  }
  std::vector<std::vector<int64_t>> send_start, recv_post, recv_send_start;
  // The event that posted each send, receive, collective and request slot (kNever: none).
  static constexpr int32_t kNever = std::numeric_limits<int32_t>::max();
  PostingEvents send_event, recv_event, coll_event;
  std::vector<std::vector<int32_t>> slot_event;
  // When a receive or a collective call was posted: its posting event's enter (kUnknown:
  // never), read from the timings rather than held (8 B per receive and call).
  int64_t recv_posted(size_t slot, size_t k) const { return entered(slot, recv_event[slot][k]); }
  int64_t coll_enter(size_t slot, size_t k) const { return entered(slot, coll_event[slot][k]); }
  int64_t entered(size_t slot, int32_t event) const {
    return event == kNever ? kUnknown : timings()[slot].enter(static_cast<size_t>(event));
  }
  std::vector<std::vector<int32_t>> slot_ref;
  // The event that uses each receive's send start, each send's receive post (rendezvous)
  // and each collective's arrivals: the blocking call, or the Wait/Test completing it.
  std::vector<std::vector<int32_t>> recv_consumer, send_consumer, coll_consumer;
  // Per collective call: its instance's latest arrival and root arrival (kUnknown: none),
  // what every member's completion depends on.
  std::vector<std::vector<int64_t>> coll_max_enter, coll_root_enter;
  // The other end's exit_max at the event posting its side: per send, the receiver's at
  // its receive; per receive, the sender's at its send (INT64_MAX: unmatched). Both ends
  // agree whether a message was posted before the cut without seeing each other's rank.
  // Held, with recv_send_start, only for a rank with a partner outside the snapshot (the
  // pipeline fills those from their owners); a rank whose partners are all here reads them
  // from its partners' values (*_at: 24 B per message end not held).
  std::vector<std::vector<int64_t>> send_partner_exit_max, recv_partner_exit_max;
  // `prog`: the snapshot's programs; `slot_of`: world rank -> their slot, -1 elsewhere.
  int64_t send_partner_exit_max_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                   size_t slot, size_t k) const;
  int64_t recv_partner_exit_max_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                   size_t slot, size_t k) const;
  int64_t recv_send_start_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of, size_t slot,
                             size_t k) const;
  // exit_max at the event posting message `index` of `slot` (INT64_MAX: none).
  int64_t posted_exit_max(int32_t slot, const PostingEvents &event_of, int32_t index) const;
  // Every rank's partner values held (a part of the snapshot handed to another owner).
  void hold_partner_values(const std::vector<RankProgram> &prog);
  // Rank `slot`'s partner values held, as read now.
  void hold_partners_of(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of, size_t slot);
  // Receive k's send start as its sender (in this snapshot) holds it; kUnknown otherwise.
  int64_t senders_start(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of, size_t slot,
                        size_t k) const;
  // The owned collective calls by instance: a resumed replay gathers an instance's
  // earlier arrivals when it first meets it.
  // Each carries what gathering an instance reads of it, so that gathering is one pass
  // over the instance's members rather than several lookups per member in per-rank tables.
  struct Member {
    int64_t instance;
    int32_t slot, index;
    int64_t enter = kUnknown;  // its arrival (coll_enter)
    // exit_max at the call posting it and at the one using the outcome (INT64_MAX: none).
    int64_t posted_by = std::numeric_limits<int64_t>::max(), used_by = std::numeric_limits<int64_t>::max();
    bool root = false, has_user = false;
    bool operator<(const Member &o) const { return instance < o.instance || (instance == o.instance && slot < o.slot); }
  };
  std::vector<Member> coll_members;  // sorted by instance, then slot
  // coll_members' instances, each once, and where each one's members begin (one more:
  // the end): a resumed replay looks an instance up thousands of times per candidate, in
  // a table as long as the instances rather than the calls.
  std::vector<int64_t> member_instances;
  std::vector<int64_t> member_begin;
  // Sorts coll_members and builds that index (take_snapshot does; so must whoever fills
  // a snapshot by hand).
  void index_members();
  std::pair<const Member *, const Member *> members_of(int64_t instance) const {
    const auto k = std::lower_bound(member_instances.begin(), member_instances.end(), instance);
    if (k == member_instances.end() || *k != instance) return {nullptr, nullptr};
    const size_t i = static_cast<size_t>(k - member_instances.begin());
    return {coll_members.data() + member_begin[i], coll_members.data() + member_begin[i + 1]};
  }
  // The largest exit of rank slot s (INT64_MIN: no events): it rests past resume_at
  // unless this lies beyond.
  int64_t last_exit_max(size_t s) const {
    if (!exit_max[s].empty()) return exit_max[s].back();
    return timings()[s].empty() ? std::numeric_limits<int64_t>::min() : end[s];
  }
  // Per rank, for request slots, sends, receives and collectives: how many later ones
  // were posted while one was still open (posted, not yet used). A resumed rank holds
  // values from its first one posted after the cut less this lag.
  std::vector<std::array<int64_t, 4>> open_lag;
  std::vector<int64_t> end;
  int64_t run_end = 0;  // the run's end over every rank (distributed: made global by the owner)
};

class Engine {
 public:
  // `programs` are the owned ranks; `owner_of(rank)` is whether this engine owns a rank.
  // `distributed`: collect cross-owner traffic in the outbox (off for serial replays).
  Engine(const std::vector<RankProgram> &programs, const Scenario &scenario, int32_t nranks, bool record_timings,
         bool distributed = false);
  ~Engine();
  // The rank states resumed replays left to this thread for the next ones, freed (after
  // a search that resumes many).
  static void release_spare_states() { std::vector<std::vector<RankState>>().swap(spare_states()); }
  // Whether this thread's spare rank states are all as fresh ones but for what the
  // constructor sets for every rank (a write that bypassed touch() shows here).
  static bool spare_states_fresh();
  static size_t spare_state_sets() { return spare_states().size(); }
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

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
  Outbox take_outbox();
  void apply(const SendPost &p);
  void apply(const RecvPost &p);
  void apply(const Arrival &a);  // another engine's members
  void apply(const Pull &p);

  // Resumed replays that stop on the snapshot (distributed: the driver sums these over
  // engines after each exchange; back on it only when every engine is idle too): ranks
  // and values off the snapshot, and whether the changed event is replayed.
  int64_t off_snapshot() const { return m_dirty + m_pending; }
  // Nothing woken since the last advance and nothing for other engines not yet taken.
  bool idle() const {
    return m_queue.empty() && m_out_arrivals.empty() && m_out.sends.empty() && m_out.recvs.empty() &&
           m_out.arrivals.empty() && m_out.pulls.empty();
  }
  bool changed_event_done() const { return zero_wait_done(); }
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

  // A replay split over owners (one engine each) advances in rounds: each owner advances,
  // the owners exchange their outboxes, then each reports and all decide alike from the
  // reports summed over owners.
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
  RoundReport round_report(bool moved) const;
  static void combine(RoundReport &into, const RoundReport &from);  // that reduction of two
  enum class RoundEnd {
    Continue,
    Converged,  // back on the snapshot everywhere: the run's end follows from it
    Finished,   // every rank ended, or some owner aborted or met a conflict
    Abort,      // the leads prove Scenario::abort_at out of reach: call abort() everywhere
    Stuck,      // nothing moved anywhere: release_stuck() everywhere
    Shifted,    // every rank left a clean cut shift_low ahead: stop_shifted(shift_low) everywhere
  };
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

// A finished replay's state rebuilt from its recorded timings, for a replay that kept no
// engine (the first question of a pass, replay_pass.h): what Engine::take_snapshot gives.
// For programs of single-stream ranks whose every event was replayed, nothing released.
//
// Each send's start as the engine computed it: its event's enter, or the previous send's
// injection horizon if later (`scenario`: its network and message sizes).
std::vector<std::vector<int64_t>> replayed_send_starts(const std::vector<RankProgram> &programs,
                                                       const std::vector<TimingColumn> &timings,
                                                       const Scenario &scenario);
// What the owned ranks delivered to other owners' ranks in that replay (Engine::Outbox of
// the whole replay): each send's start, each receive's post, each collective instance's
// arrivals here. Route them as a replay round does.
Engine::Outbox delivered_elsewhere(const std::vector<RankProgram> &programs, const std::vector<TimingColumn> &timings,
                                   const std::vector<std::vector<int64_t>> &send_start, int32_t nranks,
                                   const Scenario &scenario);
// The snapshot, from the timings, the send starts and what other owners delivered here
// (`from_elsewhere`); the posting events borrowed when lent (Engine::lend_posting_events).
// Nothing when some program has several lanes, a message end is named by two others, or a
// collective instance's members name two roots (what a replay would resolve in its own
// order).
std::optional<Snapshot> snapshot_from_timings(const std::vector<RankProgram> &programs,
                                              std::vector<TimingColumn> timings,
                                              std::vector<std::vector<int64_t>> send_start, int32_t nranks,
                                              const Engine::Outbox &from_elsewhere,
                                              std::array<PostingEvents::Borrowed, 3> lent = {});

// Replays programs that hold every rank (serial): predicted makespan in ns.
struct SerialResult {
  int64_t makespan = 0;  // INT64_MAX when the scenario's abort_at stopped the replay
  std::vector<int64_t> end_times;
  std::vector<TimingColumn> timings;
  int64_t released = 0;
  bool repeated = false;  // Scenario::assume_resting_arrivals failed: replayed again without
  bool shifted = false;   // stopped at a clean cut (Scenario::cuts)
};
SerialResult replay_serial(const std::vector<RankProgram> &programs, const Scenario &scenario, bool record_timings);
// A serial replay of every rank and its state.
Snapshot replay_snapshot(const std::vector<RankProgram> &programs, const Scenario &scenario);

}  // namespace perfsift::kernels::replay
