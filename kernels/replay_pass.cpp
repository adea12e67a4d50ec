// One-pass replay (see replay_pass.h): Engine's inner loop with W times per value.
#include "kernels/replay_pass.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace perfsift::kernels::replay {

namespace {
// Whether two networks cost every message the same (their source aside).
bool same_costs(const LogGPS &a, const LogGPS &b) {
  if (!(a.L == b.L && a.os0 == b.os0 && a.os1 == b.os1 && a.or0 == b.or0 && a.or1 == b.or1 && a.g == b.g &&
        a.G == b.G && a.S == b.S && a.s == b.s && a.collectives_as_measured == b.collectives_as_measured))
    return false;
  if (a.off_node == b.off_node) return true;
  return a.off_node && b.off_node && a.off_node->node_of == b.off_node->node_of &&
         same_costs(a.off_node->params, b.off_node->params);
}

bool plain(const Scenario &sc) {
  return !sc.resume && !sc.rest && !sc.cuts && sc.zero_wait_rank < 0 &&
         sc.abort_at == std::numeric_limits<int64_t>::max() &&
         std::all_of(sc.send_bytes.begin(), sc.send_bytes.end(), [](const auto &v) { return v.empty(); });
}
}  // namespace

bool pass_fits(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios) {
  if (scenarios.empty()) return false;
  for (const auto &p : programs)
    if (p.laned()) return false;
  for (const Scenario *sc : scenarios)
    if (!sc || !plain(*sc)) return false;
  // Networks may differ (each question costs its messages on its own) while every message is
  // synchronous under all of them or under none: the questions then wait for the same things.
  // Whether a send waits depends on the threshold S alone: each other threshold is
  // compared in one scan of the sends.
  const LogGPS first = scenarios.front()->network();
  std::vector<LogGPS> others;
  for (const Scenario *sc : scenarios)
    if (const LogGPS net = sc->network();
        net.S != first.S && std::none_of(others.begin(), others.end(), [&](const LogGPS &o) { return o.S == net.S; }))
      others.push_back(net);
  if (others.empty()) return true;
  for (const auto &p : programs)
    for (const auto &m : p.sends) {
      const bool waits = send_waits(first, m.bytes, m.dst >= 0);
      for (const LogGPS &net : others)
        if (send_waits(net, m.bytes, m.dst >= 0) != waits) return false;
    }
  return true;
}

size_t sharing_a_pass(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios) {
  size_t fit = 0;
  std::vector<const Scenario *> pass;
  for (const Scenario *sc : scenarios) {
    if (pass.size() == kPassWidth) break;
    pass.push_back(sc);
    if (!pass_fits(programs, pass)) break;
    fit = pass.size();
  }
  return fit;
}

template <int W>
PassEngine<W>::PassEngine(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios,
                          int32_t nranks, bool distributed)
    : m_prog(programs), m_distributed(distributed) {
  if (scenarios.size() > static_cast<size_t>(W) || !pass_fits(programs, scenarios))
    throw std::logic_error("replay: these scenarios cannot replay in one pass");
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) m_sc[l] = scenarios[std::min(l, scenarios.size() - 1)];
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
    m_nets[l] = m_sc[l]->network();
    m_net_as[l] = l;
    for (size_t o = 0; o < l; ++o)
      if (same_costs(m_nets[o], m_nets[l])) {
        m_net_as[l] = o;
        break;
      }
  }
  const LogGPS &waits = m_nets[0];  // what every question waits for is the same (pass_fits)
  Times far_past;
  far_past.fill(std::numeric_limits<int64_t>::min() / 4);
  m_slot_of.assign(static_cast<size_t>(nranks), -1);
  m_state.resize(programs.size());
  m_end.assign(programs.size(), Times{});
  for (size_t s = 0; s < programs.size(); ++s) {
    const RankProgram &p = programs[s];
    m_slot_of[static_cast<size_t>(p.rank)] = static_cast<int32_t>(s);
    RankState &st = m_state[s];
    st.next_inject = far_past;
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
      const Scenario &sc = *m_sc[l];
      if (s < sc.gaps.size() && !sc.gaps[s].empty()) st.gaps[l] = sc.gaps[s].data();
      if (s < sc.event_flags.size() && !sc.event_flags[s].empty()) st.flags[l] = sc.event_flags[s].data();
    }
    st.in_flight.assign(static_cast<size_t>(p.request_slots));
    st.recv_send_start.assign(p.recvs.size());
    // Receivers' posts only for synchronous sends.
    if (std::any_of(p.sends.begin(), p.sends.end(),
                    [&](const SendMessage &m) { return send_waits(waits, m.bytes, m.dst >= 0); }))
      st.recv_post.assign(p.sends.size());
    {
      std::vector<uint8_t> completions(static_cast<size_t>(p.request_slots), 0);
      for (const Item &it : p.items)
        if (it.type == ItemType::Complete && it.index >= 0 && it.index < p.request_slots &&
            completions[static_cast<size_t>(it.index)]++ > 0)
          st.hands_back = false;
    }
    if (p.events.empty()) continue;
    ++m_unfinished;
    st.queued = true;
    m_queue.push_back(static_cast<int32_t>(s));
  }
}

template <int W>
void PassEngine<W>::record_first_timings() {
  m_record_first = true;
  m_first_timings.assign(m_prog.size(), {});
  for (size_t s = 0; s < m_prog.size(); ++s) m_first_timings[s].reserve(m_prog[s].events.size());
}

template <int W>
void PassEngine<W>::wake(int32_t rank) {
  const int32_t s = m_slot_of[static_cast<size_t>(rank)];
  RankState &st = m_state[static_cast<size_t>(s)];
  if (!st.queued) {
    st.queued = true;
    m_queue.push_back(s);
  }
}

template <int W>
template <class V>
V &PassEngine<W>::Held<V>::take(size_t i) {
  int32_t &k = m_ref[i];
  if (k >= 0) return m_entries[static_cast<size_t>(k)];
  if (m_free.empty()) {
    k = static_cast<int32_t>(m_entries.size());
    return m_entries.emplace_back();
  }
  k = m_free.back();
  m_free.pop_back();
  return m_entries[static_cast<size_t>(k)];
}

template <int W>
template <class V>
void PassEngine<W>::Held<V>::hand_back(size_t i) {
  if (i >= m_ref.size() || m_ref[i] < 0) return;
  m_free.push_back(m_ref[i]);
  m_ref[i] = -1;
}

template <int W>
template <class Post>
void PassEngine<W>::deliver(int32_t rank, int32_t index, const Times &t, Held<Times> RankState::*table,
                            std::vector<Post> &out) {
  const int32_t s = m_slot_of[static_cast<size_t>(rank)];
  if (s < 0) {
    if (m_distributed) out.push_back({rank, index, t});
    return;
  }
  (m_state[static_cast<size_t>(s)].*table).take(static_cast<size_t>(index)) = t;
  wake(rank);
}

template <int W>
void PassEngine<W>::arrive(int64_t instance, int32_t count, const Times &max_enter, bool has_root,
                           const Times &root_enter, int32_t expected) {
  auto [pos, fresh] = m_coll.try_emplace(instance);
  CollState &c = pos->second;
  if (fresh) c.max_enter.fill(kUnknown);
  if (c.expected == 0) c.expected = expected;
  c.count += count;
  if (known(max_enter))
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) c.max_enter[l] = std::max(c.max_enter[l], max_enter[l]);
  if (has_root) {
    c.has_root = true;
    c.root_enter = root_enter;
  }
  // Wake the waiters only when they can go on (as Engine::arrive).
  const bool complete = c.expected > 0 && c.count >= c.expected;
  if (!complete && !has_root) return;
  if (auto it = m_coll_waiters.find(instance); it != m_coll_waiters.end()) {
    for (int32_t r : it->second) wake(r);
    m_coll_waiters.erase(it);
  }
}

template <int W>
typename PassEngine<W>::Outbox PassEngine<W>::take_outbox() {
  return hand_over(m_out, m_out_arrivals);
}

template <int W>
void PassEngine<W>::post_items(int32_t s, const Event &e) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = m_state[static_cast<size_t>(s)];
  const Times &enter = st.enter;
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
    const Item &it = p.items[static_cast<size_t>(k)];
    switch (it.type) {
      case ItemType::Send:
      case ItemType::PostSend: {
        const SendMessage &m = p.sends[static_cast<size_t>(it.index)];
        Times &start = it.type == ItemType::Send || it.slot < 0 ? keep(st, k) : hold(st, it.slot, k);
        const Times gap = per_pair(p.rank, m.dst, [&](const LogGPS &n) { return n.injection_gap(m.bytes); });
        for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
          start[l] = std::max(enter[l], st.next_inject[l]);
          st.next_inject[l] = start[l] + gap[l];
        }
        if (m.dst >= 0) deliver(m.dst, m.recv_index, start, &RankState::recv_send_start, m_out.sends);
        break;
      }
      case ItemType::Recv:
      case ItemType::PostRecv: {
        const RecvMessage &m = p.recvs[static_cast<size_t>(it.index)];
        if (it.type == ItemType::PostRecv && it.slot >= 0) hold(st, it.slot, k) = enter;
        // Only a synchronous send waits for its receiver (its bytes are the send's: questions
        // change no sizes).
        if (m.src >= 0 && send_waits(m_nets[0], m.bytes(), true))
          deliver(m.src, m.send_index, enter, &RankState::recv_post, m_out.recvs);
        break;
      }
      case ItemType::Collective:
      case ItemType::PostCollective: {
        const Collective &c = p.colls[static_cast<size_t>(it.index)];
        if (it.type == ItemType::PostCollective && it.slot >= 0) hold(st, it.slot, k) = enter;
        const bool is_root = c.root == p.rank;
        arrive(c.instance, 1, enter, is_root, enter, c.members);
        if (m_distributed) {
          auto [pos, fresh] = m_out_arrivals.try_emplace(c.instance);
          Arrival &a = pos->second;
          if (fresh) {
            a = Arrival{c.instance, 0, 0, {}, {}};
            a.max_enter.fill(kUnknown);
          }
          ++a.count;
          for (size_t l = 0; l < static_cast<size_t>(W); ++l) a.max_enter[l] = std::max(a.max_enter[l], enter[l]);
          if (is_root) {
            a.has_root = 1;
            a.root_enter = enter;
          }
        }
        break;
      }
      case ItemType::Complete:
        break;
    }
  }
}

template <int W>
typename PassEngine<W>::Times &PassEngine<W>::keep(RankState &st, int32_t item) {
  st.event_values.push_back({item, {}});
  return st.event_values.back().value;
}

template <int W>
const typename PassEngine<W>::Times &PassEngine<W>::kept(const RankState &st, int32_t item) const {
  for (const InFlight &v : st.event_values)
    if (v.item == item) return v.value;
  throw std::logic_error("replay: an event's own value was not kept");
}

template <int W>
typename PassEngine<W>::Times &PassEngine<W>::hold(RankState &st, int32_t slot, int32_t item) {
  InFlight &f = st.in_flight.take(static_cast<size_t>(slot));
  f.item = item;
  return f.value;
}

template <int W>
bool PassEngine<W>::coll_available(int32_t s, const Collective &c) {
  const bool is_root = c.root == m_prog[static_cast<size_t>(s)].rank;
  const CollectiveNeeds needs = collective_needs(c.flow, is_root, false);
  if (needs == CollectiveNeeds::Nothing) return true;
  const auto it = m_coll.find(c.instance);
  if (it != m_coll.end() && (needs == CollectiveNeeds::Root ? it->second.has_root : it->second.count >= c.members))
    return true;
  m_coll_waiters[c.instance].push_back(m_prog[static_cast<size_t>(s)].rank);
  return false;
}

// What Engine::item_done reads when it waits, for every question at once: a question that does not
// wait reads less, never more.
template <int W>
bool PassEngine<W>::available(int32_t s, const Item &it) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  const RankState &st = m_state[static_cast<size_t>(s)];
  // A blocking call waits for its own message or collective; a completion for the one its
  // request posted; posting waits for nothing.
  const Item *waited = &it;
  if (it.type == ItemType::Complete) {
    const InFlight *f = in_flight(st, it.index);
    if (!f) return true;
    waited = &p.items[static_cast<size_t>(f->item)];
  } else if (it.type == ItemType::PostSend || it.type == ItemType::PostRecv || it.type == ItemType::PostCollective) {
    return true;
  }
  const auto i = static_cast<size_t>(waited->index);
  switch (waited->type) {
    case ItemType::Send:
    case ItemType::PostSend:
      return !send_waits(m_nets[0], p.sends[i].bytes, p.sends[i].dst >= 0) || st.recv_post.has(i);
    case ItemType::Recv:
    case ItemType::PostRecv:
      return p.recvs[i].src < 0 || st.recv_send_start.has(i);
    case ItemType::Collective:
    case ItemType::PostCollective:
      return coll_available(s, p.colls[i]);
    default:
      return true;
  }
}

template <int W>
template <class Cost>
typename PassEngine<W>::Times PassEngine<W>::per_network(Cost &&cost) const {
  Times v{};
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
    const size_t same = m_net_as[l];
    v[l] = same < l ? v[same] : cost(m_nets[l]);
  }
  return v;
}

template <int W>
template <class Cost>
typename PassEngine<W>::Times PassEngine<W>::per_pair(int32_t src, int32_t dst, Cost &&cost) const {
  return per_network([&](const LogGPS &n) { return cost(n.between(src, dst)); });
}

// send_completion (replay.h) for every question: whether the send waits is the same for
// all (pass_fits), and its costs are summed before the times are (integers: the same sums).
template <int W>
typename PassEngine<W>::Done PassEngine<W>::send_done(int32_t s, int32_t i, const Times &start) const {
  const int32_t rank = m_prog[static_cast<size_t>(s)].rank;
  const SendMessage &m = m_prog[static_cast<size_t>(s)].sends[static_cast<size_t>(i)];
  Done d{};
  if (!send_waits(m_nets[0], m.bytes, m.dst >= 0)) {
    const Times o = per_pair(rank, m.dst, [&](const LogGPS &n) { return n.send_overhead(m.bytes); });
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) d.wait[l] = d.nowait[l] = start[l] + o[l];
    return d;
  }
  const Times &posted = m_state[static_cast<size_t>(s)].recv_post[static_cast<size_t>(i)];
  const Times hs = per_pair(rank, m.dst, [](const LogGPS &n) { return n.handshake(); });
  const Times tail = per_pair(rank, m.dst, [&](const LogGPS &n) { return LogGPS::ns(n.L) + n.send_overhead(m.bytes); });
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
    const int64_t h = start[l] + hs[l];
    d.nowait[l] = h + tail[l];
    d.wait[l] = std::max(h, posted[l]) + tail[l];
  }
  return d;
}

// recv_completion (replay.h) for every question, as max(post, sent + x) + y: x the flight
// (eager) or the handshake (rendezvous), y what follows.
template <int W>
typename PassEngine<W>::Done PassEngine<W>::recv_done(int32_t s, int32_t i, const Times &post) const {
  const RecvMessage &m = m_prog[static_cast<size_t>(s)].recvs[static_cast<size_t>(i)];
  Done d{};
  if (m.src < 0) {
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) d.wait[l] = d.nowait[l] = post[l] + m.own_unmatched();
    return d;
  }
  const int64_t bytes = m.bytes();
  const Times &sent = m_state[static_cast<size_t>(s)].recv_send_start[static_cast<size_t>(i)];
  const int32_t rank = m_prog[static_cast<size_t>(s)].rank;
  const Times x =
      per_pair(m.src, rank, [&](const LogGPS &n) { return n.rendezvous(bytes) ? n.handshake() : n.flight(bytes); });
  const Times y = per_pair(m.src, rank, [&](const LogGPS &n) {
    return n.rendezvous(bytes) ? LogGPS::ns(n.L) + n.flight(bytes) + n.recv_overhead(bytes) : n.recv_overhead(bytes);
  });
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
    d.nowait[l] = post[l] + y[l];
    d.wait[l] = std::max(post[l], sent[l] + x[l]) + y[l];
  }
  return d;
}

// collective_completion (replay.h) for every question; the instance is looked up once.
template <int W>
typename PassEngine<W>::Done PassEngine<W>::coll_done(int32_t s, const Collective &c, const Times &enter) const {
  const bool is_root = c.root == m_prog[static_cast<size_t>(s)].rank;
  Done d{};
  if (c.flow == CollectiveFlow::ToRoot && !is_root) {
    const Times o = per_network([&](const LogGPS &n) { return n.for_collectives().send_overhead(c.bytes); });
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) d.wait[l] = d.nowait[l] = enter[l] + o[l];
    return d;
  }
  const Times cost = per_network([&](const LogGPS &n) { return collective_call_cost(n, c); });
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) d.wait[l] = d.nowait[l] = enter[l] + cost[l];
  const CollectiveNeeds needs = collective_needs(c.flow, is_root, false);
  if (needs == CollectiveNeeds::Nothing) return d;
  const CollState &cs = m_coll.find(c.instance)->second;  // available() saw it
  for (size_t l = 0; l < static_cast<size_t>(W); ++l)
    d.wait[l] = needs == CollectiveNeeds::Root ? std::max(enter[l], cs.root_enter[l] + cost[l])
                                               : std::max(enter[l], cs.max_enter[l]) + cost[l];
  return d;
}

template <int W>
typename PassEngine<W>::Done PassEngine<W>::item_done(int32_t s, int32_t k, const Times &enter) const {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  const Item &it = p.items[static_cast<size_t>(k)];
  const RankState &st = m_state[static_cast<size_t>(s)];
  const auto plus = [](const Times &t, const Times &c) {
    Done d{};
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) d.wait[l] = d.nowait[l] = t[l] + c[l];
    return d;
  };
  switch (it.type) {
    case ItemType::Send:
      return send_done(s, it.index, kept(st, k));
    case ItemType::PostSend:
      return plus(it.slot < 0 ? kept(st, k) : in_flight(st, it.slot)->value,
                  per_pair(p.rank, p.sends[static_cast<size_t>(it.index)].dst,
                           [](const LogGPS &n) { return n.send_overhead(0); }));
    case ItemType::Recv:
      return recv_done(s, it.index, enter);
    case ItemType::PostRecv:
      return plus(enter, per_pair(p.recvs[static_cast<size_t>(it.index)].src, p.rank,
                                  [](const LogGPS &n) { return n.recv_overhead(0); }));
    case ItemType::Collective:
      return coll_done(s, p.colls[static_cast<size_t>(it.index)], enter);
    case ItemType::PostCollective:
      return plus(enter, per_network([](const LogGPS &n) { return n.for_collectives().send_overhead(0); }));
    case ItemType::Complete:
      break;
  }
  // A completion waits for what its request posted; without waiting it costs nothing.
  Done d{enter, enter};
  const InFlight *f = in_flight(st, it.index);
  if (!f) return d;
  const Item &a = p.items[static_cast<size_t>(f->item)];
  switch (a.type) {
    case ItemType::PostSend:
      d.wait = send_done(s, a.index, f->value).wait;
      break;
    case ItemType::PostRecv:
      d.wait = recv_done(s, a.index, f->value).wait;
      break;
    case ItemType::PostCollective:
      d.wait = coll_done(s, p.colls[static_cast<size_t>(a.index)], f->value).wait;
      break;
    default:
      break;
  }
  return d;
}

template <int W>
bool PassEngine<W>::try_event(int32_t s) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = m_state[static_cast<size_t>(s)];
  const size_t i = static_cast<size_t>(st.cursor);
  const Event &e = p.events[i];
  if (!st.posted) {
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) st.enter[l] = st.now[l] + (st.gaps[l] ? st.gaps[l][i] : e.gap);
    post_items(s, e);
    st.posted = true;
  }
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k)
    if (!available(s, p.items[static_cast<size_t>(k)])) return false;
  std::array<uint8_t, W> flags;
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) flags[l] = st.flags[l] ? st.flags[l][i] : 0;
  const Times &enter = st.enter;
  Times exit = enter, nowait_exit = enter;
  if (e.items == 0) {
    const int64_t own = p.owns[static_cast<size_t>(e.first_item)];
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) exit[l] = nowait_exit[l] = enter[l] + own;
  }
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
    const Done d = item_done(s, k, enter);
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
      exit[l] = std::max(exit[l], flags[l] & kZeroWait ? d.nowait[l] : d.wait[l]);
      nowait_exit[l] = std::max(nowait_exit[l], d.nowait[l]);
    }
  }
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
    if (flags[l] & kZeroEvent) exit[l] = nowait_exit[l] = enter[l];  // costs nothing, waits for nothing
    m_sinks[l].see(s, static_cast<int64_t>(i), {enter[l], exit[l], nowait_exit[l]});
  }
  if (m_record_first) m_first_timings[static_cast<size_t>(s)].push_back({enter[0], exit[0], nowait_exit[0]});
  st.now = exit;
  hand_back(s, e);
  st.posted = false;
  if (++st.cursor == static_cast<int64_t>(p.events.size())) {
    m_end[static_cast<size_t>(s)] = st.now;
    --m_unfinished;
    return false;
  }
  return true;
}

template <int W>
std::vector<int64_t> PassEngine<W>::latest_ends(size_t n) const {
  std::vector<int64_t> end(n, 0);
  for (const Times &t : m_end)
    for (size_t l = 0; l < n; ++l) end[l] = std::max(end[l], t[l]);
  return end;
}

template <int W>
int64_t PassEngine<W>::values_held() const {
  int64_t n = 0;
  for (const RankState &st : m_state)
    n += static_cast<int64_t>(st.in_flight.entries() + st.recv_send_start.entries() + st.recv_post.entries());
  return n;
}

template <int W>
void PassEngine<W>::hand_back(int32_t s, const Event &e) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = m_state[static_cast<size_t>(s)];
  st.event_values.clear();
  if (!st.hands_back) return;
  // The messages whose delivered values the event read: its blocking calls' own, and
  // those of the requests it completed.
  const auto read = [&st](const Item &it) {
    if (it.type == ItemType::Recv || it.type == ItemType::PostRecv)
      st.recv_send_start.hand_back(static_cast<size_t>(it.index));
    else if ((it.type == ItemType::Send || it.type == ItemType::PostSend) && !st.recv_post.empty())
      st.recv_post.hand_back(static_cast<size_t>(it.index));
  };
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
    const Item &it = p.items[static_cast<size_t>(k)];
    if (it.type == ItemType::Send || it.type == ItemType::Recv) read(it);
    if (it.type != ItemType::Complete) continue;
    const InFlight *f = in_flight(st, it.index);
    if (!f) continue;
    read(p.items[static_cast<size_t>(f->item)]);
    st.in_flight.hand_back(static_cast<size_t>(it.index));
  }
}

template <int W>
bool PassEngine<W>::advance() {
  bool moved = false;
  while (!m_queue.empty()) {
    const int32_t s = m_queue.back();
    m_queue.pop_back();
    RankState &st = m_state[static_cast<size_t>(s)];
    st.queued = false;
    if (st.cursor >= static_cast<int64_t>(m_prog[static_cast<size_t>(s)].events.size())) continue;
    const int64_t before = st.cursor;
    const bool was_posted = st.posted;
    while (try_event(s)) {}
    moved |= st.cursor != before || st.posted != was_posted;
  }
  return moved;
}

namespace {
template <int W>
std::optional<std::vector<int64_t>> pass_serial(const std::vector<RankProgram> &programs,
                                                const std::vector<const Scenario *> &scenarios,
                                                const std::vector<EventSink> &sinks, SinkEvents which) {
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  PassEngine<W> engine(programs, scenarios, nranks, false);
  for (size_t l = 0; l < sinks.size(); ++l)
    if (sinks[l]) engine.set_event_sink(l, sinks[l], which);
  while (engine.advance()) {}
  if (engine.unfinished() > 0) return std::nullopt;
  return engine.latest_ends(scenarios.size());
}
}  // namespace

std::optional<std::vector<int64_t>> replay_pass_serial(const std::vector<RankProgram> &programs,
                                                       const std::vector<const Scenario *> &scenarios,
                                                       const std::vector<EventSink> &sinks, SinkEvents which) {
  if (!sinks.empty() && sinks.size() != scenarios.size())
    throw std::logic_error("replay: one event sink per scenario, or none");
  return with_pass_width(scenarios.size(), [&]<int W>() { return pass_serial<W>(programs, scenarios, sinks, which); });
}

template class PassEngine<1>;
template class PassEngine<2>;
template class PassEngine<3>;
template class PassEngine<4>;
template class PassEngine<5>;
template class PassEngine<6>;
template class PassEngine<7>;
template class PassEngine<8>;
template class PassEngine<9>;

}  // namespace perfsift::kernels::replay
