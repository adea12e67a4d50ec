// Several what-if questions replayed in one pass over the programs, one lane each.
//
// A replay is bound by memory latency: each event reads its rank's program and writes the
// times its messages carry into the partners' tables, mostly cache misses (a rank runs a
// few events, then blocks). Questions that change only computation gaps, zeroed waits,
// zeroed events or the network's costs (not which messages are synchronous) keep every
// dependency of the baseline (a zeroed wait only reads less). They replay together: each time is
// W values side by side, one per lane, so a miss serves W questions. Each lane's every
// time is what Engine computes for its scenario (the formulas are shared, replay.h): a
// call blocks until every lane has what it needs, and each lane then reads only what its
// own scenario waits for.
//
// A replay that reaches a fixpoint with ranks still blocked (a crashed rank, a message the
// trace lacks) stops with stuck(): Engine releases stuck dependencies at its own fixpoint,
// which differs per question, so the caller replays those questions one by one instead.
// Not for resumed replays, recorded timings, changed message sizes, networks that make
// different messages synchronous, or threaded programs (lanes_fit).
//
// Memory: W x 8 B per message (its send's start at both ends), per synchronous message and
// per nonblocking receive or collective call; the programs are read in place.
#pragma once

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kernels/replay.h"

namespace perfsift::kernels::replay {

// Whether the scenarios can replay as lanes of one pass over `programs`.
bool lanes_fit(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios);

template <int W>
class LaneEngine {
 public:
  using Times = std::array<int64_t, W>;
  // `scenarios`: at most W (lanes past them repeat the first); lanes_fit must hold.
  LaneEngine(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios, int32_t nranks,
             bool distributed);

  // Advances every owned rank as far as possible. Returns whether anything moved.
  bool advance();
  int64_t unfinished() const { return m_unfinished; }
  // The per-lane event sink of lane `lane` (Engine::set_event_sink).
  void set_event_sink(size_t lane, EventSink sink) { m_sinks[lane] = std::move(sink); }
  // Per owned rank (program order), per lane: its end.
  const std::vector<Times> &end_times() const { return m_end; }

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
  void apply(const SendPost &p) { deliver_send(p.dst, p.recv_index, p.t); }
  void apply(const RecvPost &p) { deliver_recv(p.src, p.send_index, p.t); }
  void apply(const Arrival &a) { arrive(a.instance, a.count, a.max_enter, a.has_root != 0, a.root_enter, 0); }

 private:
  struct RankState {
    int64_t cursor = 0;
    Times now{}, enter{}, next_inject{};
    bool posted = false, queued = false;
    std::vector<int32_t> slot_ref;  // request slot -> item that activated it
    // recv_post only when a send is synchronous; recv_posted, coll_enter only when a
    // receive or collective is nonblocking (their only readers).
    std::vector<Times> send_start, recv_post, recv_send_start, recv_posted, coll_enter;
  };
  struct CollState {
    int32_t count = 0, expected = 0;
    bool has_root = false;
    Times max_enter, root_enter;
  };
  // A value not yet delivered: the first lane holds kUnknown (lanes are written together).
  static bool known(const Times &t) { return t[0] != kUnknown; }
  bool try_event(int32_t s);
  void post_items(int32_t s, const Event &e);
  bool available(int32_t s, const Item &it);  // whether every lane has what the item waits for
  bool coll_available(int32_t s, const Collective &c);
  int64_t item_done(int32_t s, const Item &it, int64_t enter, size_t lane, bool nowait) const;
  int64_t send_done(int32_t s, int32_t i, int64_t start, size_t lane, bool nowait) const;
  int64_t recv_done(int32_t s, int32_t i, int64_t post, size_t lane, bool nowait) const;
  int64_t coll_done(int32_t s, const Collective &c, int64_t enter, size_t lane, bool nowait) const;
  void wake(int32_t rank);
  void arrive(int64_t instance, int32_t count, const Times &max_enter, bool has_root, const Times &root_enter,
              int32_t expected);
  void deliver_send(int32_t dst, int32_t recv_index, const Times &t);
  void deliver_recv(int32_t src, int32_t send_index, const Times &t);

  const std::vector<RankProgram> &m_prog;
  std::array<const Scenario *, W> m_sc;
  std::array<LogGPS, W> m_nets;  // each lane's (lanes_fit: all agree on which sends are synchronous)
  bool m_distributed;
  std::vector<int32_t> m_slot_of;
  std::vector<RankState> m_state;
  std::vector<int32_t> m_queue;
  std::unordered_map<int64_t, CollState> m_coll;
  std::unordered_map<int64_t, std::vector<int32_t>> m_coll_waiters;
  std::unordered_map<int64_t, Arrival> m_out_arrivals;
  Outbox m_out;
  std::vector<Times> m_end;
  std::array<EventSink, W> m_sinks;
  int64_t m_unfinished = 0;
};

}  // namespace perfsift::kernels::replay
