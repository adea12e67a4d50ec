// Several what-if questions replayed in one pass over the programs.
//
// A replay is bound by memory latency: each event reads its rank's program and writes the
// times its messages carry into the partners' tables, mostly cache misses (a rank runs a
// few events, then blocks). Questions that change only computation gaps, zeroed waits,
// zeroed events or the network's costs (not which messages are synchronous) keep every
// dependency of the baseline (a zeroed wait only reads less). They replay together: each
// time is W values side by side, one per question, so a miss serves W questions. Each
// question's every time is what Engine computes for its scenario (the formulas are
// shared, replay.h): a call blocks until every question has what it needs, and each
// question then reads only what its own scenario waits for.
//
// A pass that reaches a fixpoint with ranks still blocked (a crashed rank, a message the
// trace lacks) stops there: Engine releases stuck dependencies at its own fixpoint, which
// differs per question, so the caller replays those questions one by one instead. Not for
// resumed replays, changed message sizes, networks that make different
// messages synchronous, or threaded programs (pass_fits).
//
// Memory: 4 B per received message and per synchronous send, and W x 8 B only while a
// value is in flight: a delivered send start (or synchronous receive's post) until the
// event that reads it completes, a request's value (a nonblocking send's start, a
// receive's or collective's posting time) until its completion; per-rank pools that the
// completions hand back. The programs are read in place.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <unordered_map>
#include <vector>

#include "kernels/replay.h"

namespace perfsift::kernels::replay {

// Whether the scenarios can replay in one pass over `programs`.
bool pass_fits(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios);
// How many of `scenarios`, from the first, replay in one pass together: at most
// kPassWidth, 0 when not even the first can.
size_t sharing_a_pass(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios);

// The widest pass: PassEngine<kPassWidth> (the what-if stage's eight questions and its baseline).
inline constexpr size_t kPassWidth = 9;

// f.template operator()<W>() with the width W = n (1 to kPassWidth) as a constant: the one
// place a pass's run-time width picks its PassEngine<W>.
template <int W = 1, class F>
decltype(auto) with_pass_width(size_t n, F &&f) {
  if constexpr (W < static_cast<int>(kPassWidth)) {
    if (n != static_cast<size_t>(W)) return with_pass_width<W + 1>(n, std::forward<F>(f));
  } else if (n != static_cast<size_t>(W)) {
    throw std::logic_error("replay: one pass replays 1 to " + std::to_string(kPassWidth) + " scenarios, not " +
                           std::to_string(n));
  }
  return f.template operator()<W>();
}

// A serial pass of 1 to kPassWidth scenarios over every rank's program (pass_fits must
// hold; `sinks`: none, or one per scenario, empty for none, seeing `which` events): each scenario's makespan,
// or nothing when the pass met ranks blocked for good (replay each alone then: Engine
// releases them its own way).
std::optional<std::vector<int64_t>> replay_pass_serial(const std::vector<RankProgram> &programs,
                                                       const std::vector<const Scenario *> &scenarios,
                                                       const std::vector<EventSink> &sinks = {},
                                                       SinkEvents which = SinkEvents::All);

template <int W>
class PassEngine {
 public:
  using Times = std::array<int64_t, W>;
  // `scenarios`: at most W (slots past them repeat the first); pass_fits must hold.
  PassEngine(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios, int32_t nranks,
             bool distributed);

  // Advances every owned rank as far as possible. Returns whether anything moved.
  bool advance();
  int64_t unfinished() const { return m_unfinished; }
  // The event sink of question `q` (Engine::set_event_sink).
  void set_event_sink(size_t q, EventSink sink, SinkEvents which = SinkEvents::All) {
    m_sinks[q] = {std::move(sink), which};
  }
  // Records the first question's timings, every event of the owned ranks (12.5 B per
  // event): for its snapshot (snapshot_from_timings), as Engine records its own.
  void record_first_timings();
  std::vector<TimingColumn> take_first_timings() { return std::move(m_first_timings); }
  // Per owned rank (program order), per question: its end.
  const std::vector<Times> &end_times() const { return m_end; }
  // The first n questions' latest ends over the owned ranks.
  std::vector<int64_t> latest_ends(size_t n) const;
  // The W-wide values the owned ranks' pools came to hold at most, summed over ranks.
  int64_t values_held() const;

  // Cross-owner traffic, as Engine's with W times.
  struct SendPost {
    int32_t dst, recv_index;
    Times t;
  };
  struct RecvPost {
    int32_t src, send_index;
    Times t;
  };
  struct Arrival {
    int64_t instance;
    int32_t count;
    int32_t has_root;
    Times max_enter, root_enter;
  };
  struct Outbox {
    std::vector<SendPost> sends;
    std::vector<RecvPost> recvs;
    std::vector<Arrival> arrivals;
  };
  Outbox take_outbox();
  void apply(const SendPost &p) { deliver(p.dst, p.recv_index, p.t, &RankState::recv_send_start, m_out.sends); }
  void apply(const RecvPost &p) { deliver(p.src, p.send_index, p.t, &RankState::recv_post, m_out.recvs); }
  void apply(const Arrival &a) { arrive(a.instance, a.count, a.max_enter, a.has_root != 0, a.root_enter, 0); }

 private:
  // A request in flight: the item that activated it and what its completion reads (a
  // send's start, a receive's or collective's posting time).
  struct InFlight {
    int32_t item;
    Times value;
  };
  // Per index (a request slot, a message) a value while it is held: entries in a pool
  // that hand_back returns for the next one, so a rank holds what is in flight, not a
  // value per index.
  template <class V>
  class Held {
   public:
    void assign(size_t n) { m_ref.assign(n, -1); }
    bool empty() const { return m_ref.empty(); }
    bool has(size_t i) const { return m_ref[i] >= 0; }
    const V &operator[](size_t i) const { return m_entries[static_cast<size_t>(m_ref[i])]; }
    const V *find(size_t i) const { return has(i) ? &(*this)[i] : nullptr; }
    V &take(size_t i);  // index i's entry (a pooled one if it holds none)
    void hand_back(size_t i);
    size_t entries() const { return m_entries.size(); }  // the most held at once

   private:
    std::vector<int32_t> m_ref;  // per index: its entry, -1 none
    std::vector<V> m_entries;
    std::vector<int32_t> m_free;
  };
  struct RankState {
    int64_t cursor = 0;
    Times now{}, enter{}, next_inject{};
    // Per question, the rank's changed computation gaps and event flags (null: as measured,
    // none): looked up once, not at every event.
    std::array<const int64_t *, W> gaps{};
    std::array<const uint8_t *, W> flags{};
    bool posted = false, queued = false;
    // A completion hands its request's entry back, unless some request of the rank is
    // completed more than once (a damaged trace): entries then stay.
    bool hands_back = true;
    Held<InFlight> in_flight;  // per request slot
    // What only the posting event's own completion reads (a blocking send's start), by item.
    std::vector<InFlight> event_values;
    // What partners deliver, held until the event that reads it completes: per receive its
    // send's start; per send its receive's post, only when some send is synchronous (its
    // only reader).
    Held<Times> recv_send_start, recv_post;
  };
  struct CollState {
    int32_t count = 0, expected = 0;
    bool has_root = false;
    Times max_enter, root_enter;
  };
  // A value not yet delivered: the first question's holds kUnknown (all are written together).
  static bool known(const Times &t) { return t[0] != kUnknown; }
  bool try_event(int32_t s);
  void post_items(int32_t s, const Event &e);
  bool available(int32_t s, const Item &it);  // whether every question has what the item waits for
  // The entry of request `slot` (posted now, by `item`) for its value.
  Times &hold(RankState &st, int32_t slot, int32_t item);
  // A value of `item` that only its own event's completion reads, and reading it back.
  Times &keep(RankState &st, int32_t item);
  const Times &kept(const RankState &st, int32_t item) const;
  const InFlight *in_flight(const RankState &st, int32_t slot) const {
    return st.in_flight.find(static_cast<size_t>(slot));
  }
  bool coll_available(int32_t s, const Collective &c);
  // Item k's completion for every question at once, as Engine computes it: `wait` having
  // waited for what it needs, `nowait` without waiting. The item's decoding and the
  // network's costs (once per distinct network, not per question) are shared by the questions.
  struct Done {
    Times wait, nowait;
  };
  Done item_done(int32_t s, int32_t k, const Times &enter) const;
  Done send_done(int32_t s, int32_t i, const Times &start) const;
  Done recv_done(int32_t s, int32_t i, const Times &post) const;
  Done coll_done(int32_t s, const Collective &c, const Times &enter) const;
  // cost(network) for every question: computed for the first question of each network.
  template <class Cost>
  Times per_network(Cost &&cost) const;
  // The same on the parameters a message from `src` to `dst` travels on (LogGPS::between).
  template <class Cost>
  Times per_pair(int32_t src, int32_t dst, Cost &&cost) const;
  void wake(int32_t rank);
  void arrive(int64_t instance, int32_t count, const Times &max_enter, bool has_root, const Times &root_enter,
              int32_t expected);
  // A send's start into its receive's table (recv_send_start), a receive's post into its
  // synchronous send's (recv_post): in place and the rank woken, or kept for its owner.
  template <class Post>
  void deliver(int32_t rank, int32_t index, const Times &t, Held<Times> RankState::*table, std::vector<Post> &out);
  // Hands back what the completed event `e` of owned slot s read (its in-flight entries and
  // delivered values), while its requests' entries still name their posting items.
  void hand_back(int32_t s, const Event &e);

  const std::vector<RankProgram> &m_prog;
  std::array<const Scenario *, W> m_sc;
  std::array<LogGPS, W> m_nets;    // each question's (pass_fits: all agree on which sends are synchronous)
  std::array<size_t, W> m_net_as;  // per question: the first question with the same network
  bool m_distributed;
  std::vector<int32_t> m_slot_of;
  std::vector<RankState> m_state;
  std::vector<int32_t> m_queue;
  std::unordered_map<int64_t, CollState> m_coll;
  std::unordered_map<int64_t, std::vector<int32_t>> m_coll_waiters;
  std::unordered_map<int64_t, Arrival> m_out_arrivals;
  Outbox m_out;
  std::vector<Times> m_end;
  std::array<SinkOf, W> m_sinks;
  bool m_record_first = false;
  std::vector<TimingColumn> m_first_timings;  // per owned rank (record_first_timings)
  int64_t m_unfinished = 0;
};

}  // namespace perfsift::kernels::replay
