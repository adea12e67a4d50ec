// Lane replay (see replay_lanes.h): Engine's inner loop with W times per value.
#include "kernels/replay_lanes.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace perfsift::kernels::replay {

namespace {
const LogGPS &network(const Scenario &sc) {
  static const LogGPS ideal = LogGPS::ideal();
  return sc.ideal_network ? ideal : sc.net;
}
bool plain(const Scenario &sc) {
  return !sc.resume && !sc.rest && !sc.cuts && sc.zero_wait_rank < 0 &&
         sc.abort_at == std::numeric_limits<int64_t>::max() &&
         std::all_of(sc.send_bytes.begin(), sc.send_bytes.end(), [](const auto &v) { return v.empty(); });
}
}  // namespace

bool lanes_fit(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios) {
  if (scenarios.empty()) return false;
  for (const auto &p : programs)
    if (p.laned()) return false;
  for (const Scenario *sc : scenarios)
    if (!sc || !plain(*sc)) return false;
  // Networks may differ (each lane costs its messages on its own) while every message is
  // synchronous under all of them or under none: the lanes then wait for the same things.
  const LogGPS &first = network(*scenarios.front());
  for (const Scenario *sc : scenarios) {
    const LogGPS &net = network(*sc);
    if (net.S == first.S) continue;
    for (const auto &p : programs)
      for (const auto &m : p.sends)
        if (send_waits(net, m.bytes, m.dst >= 0) != send_waits(first, m.bytes, m.dst >= 0)) return false;
  }
  return true;
}

template <int W>
LaneEngine<W>::LaneEngine(const std::vector<RankProgram> &programs, const std::vector<const Scenario *> &scenarios,
                          int32_t nranks, bool distributed)
    : m_prog(programs), m_distributed(distributed) {
  if (scenarios.size() > static_cast<size_t>(W) || !lanes_fit(programs, scenarios))
    throw std::logic_error("replay: these scenarios cannot replay as lanes of one pass");
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) m_sc[l] = scenarios[std::min(l, scenarios.size() - 1)];
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) m_nets[l] = network(*m_sc[l]);
  const LogGPS &waits = m_nets[0];  // what every lane waits for is the same (lanes_fit)
  Times unknown;
  unknown.fill(kUnknown);
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
    st.slot_ref.assign(static_cast<size_t>(p.request_slots), -1);
    st.send_start.assign(p.sends.size(), unknown);
    st.recv_send_start.assign(p.recvs.size(), unknown);
    // Tables only some calls read: receivers' posts for synchronous sends, the posting time
    // of nonblocking receives and collectives for their completion (W x 8 B each).
    if (std::any_of(p.sends.begin(), p.sends.end(),
                    [&](const SendMessage &m) { return send_waits(waits, m.bytes, m.dst >= 0); }))
      st.recv_post.assign(p.sends.size(), unknown);
    const auto posts = [&](ItemType t) {
      return std::any_of(p.items.begin(), p.items.end(), [t](const Item &it) { return it.type == t; });
    };
    if (posts(ItemType::PostRecv)) st.recv_posted.assign(p.recvs.size(), unknown);
    if (posts(ItemType::PostCollective)) st.coll_enter.assign(p.colls.size(), unknown);
    if (p.events.empty()) continue;
    ++m_unfinished;
    st.queued = true;
    m_queue.push_back(static_cast<int32_t>(s));
  }
}

template <int W>
void LaneEngine<W>::wake(int32_t rank) {
  const int32_t s = m_slot_of[static_cast<size_t>(rank)];
  RankState &st = m_state[static_cast<size_t>(s)];
  if (!st.queued) {
    st.queued = true;
    m_queue.push_back(s);
  }
}

template <int W>
void LaneEngine<W>::deliver_send(int32_t dst, int32_t recv_index, const Times &t) {
  const int32_t s = m_slot_of[static_cast<size_t>(dst)];
  if (s < 0) {
    if (m_distributed) m_out.sends.push_back({dst, recv_index, t});
    return;
  }
  m_state[static_cast<size_t>(s)].recv_send_start[static_cast<size_t>(recv_index)] = t;
  wake(dst);
}

template <int W>
void LaneEngine<W>::deliver_recv(int32_t src, int32_t send_index, const Times &t) {
  const int32_t s = m_slot_of[static_cast<size_t>(src)];
  if (s < 0) {
    if (m_distributed) m_out.recvs.push_back({src, send_index, t});
    return;
  }
  m_state[static_cast<size_t>(s)].recv_post[static_cast<size_t>(send_index)] = t;
  wake(src);
}

template <int W>
void LaneEngine<W>::arrive(int64_t instance, int32_t count, const Times &max_enter, bool has_root,
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
typename LaneEngine<W>::Outbox LaneEngine<W>::take_outbox() {
  for (const auto &[id, a] : m_out_arrivals) m_out.arrivals.push_back(a);
  m_out_arrivals.clear();
  std::sort(m_out.arrivals.begin(), m_out.arrivals.end(),
            [](const Arrival &a, const Arrival &b) { return a.instance < b.instance; });
  Outbox out = std::move(m_out);
  m_out = Outbox{};
  return out;
}

template <int W>
void LaneEngine<W>::post_items(int32_t s, const Event &e) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = m_state[static_cast<size_t>(s)];
  const Times &enter = st.enter;
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
    const Item &it = p.items[static_cast<size_t>(k)];
    switch (it.type) {
      case ItemType::Send:
      case ItemType::PostSend: {
        const SendMessage &m = p.sends[static_cast<size_t>(it.index)];
        Times &start = st.send_start[static_cast<size_t>(it.index)];
        for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
          start[l] = std::max(enter[l], st.next_inject[l]);
          st.next_inject[l] = start[l] + m_nets[l].injection_gap(m.bytes);
        }
        if (m.dst >= 0) deliver_send(m.dst, m.recv_index, start);
        break;
      }
      case ItemType::Recv:
      case ItemType::PostRecv: {
        const RecvMessage &m = p.recvs[static_cast<size_t>(it.index)];
        if (it.type == ItemType::PostRecv) st.recv_posted[static_cast<size_t>(it.index)] = enter;
        // Only a synchronous send waits for its receiver (its bytes are the send's: lanes
        // change no sizes).
        if (m.src >= 0 && send_waits(m_nets[0], m.bytes, true)) deliver_recv(m.src, m.send_index, enter);
        break;
      }
      case ItemType::Collective:
      case ItemType::PostCollective: {
        const Collective &c = p.colls[static_cast<size_t>(it.index)];
        if (it.type == ItemType::PostCollective) st.coll_enter[static_cast<size_t>(it.index)] = enter;
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
    if (it.slot >= 0) st.slot_ref[static_cast<size_t>(it.slot)] = k;
  }
}

template <int W>
bool LaneEngine<W>::coll_available(int32_t s, const Collective &c) {
  const bool is_root = c.root == m_prog[static_cast<size_t>(s)].rank;
  const CollectiveNeeds needs = collective_needs(c.flow, is_root, false);
  if (needs == CollectiveNeeds::Nothing) return true;
  const auto it = m_coll.find(c.instance);
  if (it != m_coll.end() && (needs == CollectiveNeeds::Root ? it->second.has_root : it->second.count >= c.members))
    return true;
  m_coll_waiters[c.instance].push_back(m_prog[static_cast<size_t>(s)].rank);
  return false;
}

// What Engine::item_done reads when it waits, for every lane at once: a lane that does not
// wait reads less, never more.
template <int W>
bool LaneEngine<W>::available(int32_t s, const Item &it) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  const RankState &st = m_state[static_cast<size_t>(s)];
  const Item *used = &it;
  if (it.type == ItemType::Complete) {
    const int32_t k = st.slot_ref[static_cast<size_t>(it.index)];
    if (k < 0) return true;
    used = &p.items[static_cast<size_t>(k)];
    if (used->type == ItemType::PostSend) {
      const SendMessage &m = p.sends[static_cast<size_t>(used->index)];
      return !send_waits(m_nets[0], m.bytes, m.dst >= 0) || known(st.recv_post[static_cast<size_t>(used->index)]);
    }
    if (used->type == ItemType::PostRecv)
      return p.recvs[static_cast<size_t>(used->index)].src < 0 ||
             known(st.recv_send_start[static_cast<size_t>(used->index)]);
    if (used->type == ItemType::PostCollective) return coll_available(s, p.colls[static_cast<size_t>(used->index)]);
    return true;
  }
  switch (it.type) {
    case ItemType::Send: {
      const SendMessage &m = p.sends[static_cast<size_t>(it.index)];
      return !send_waits(m_nets[0], m.bytes, m.dst >= 0) || known(st.recv_post[static_cast<size_t>(it.index)]);
    }
    case ItemType::Recv:
      return p.recvs[static_cast<size_t>(it.index)].src < 0 || known(st.recv_send_start[static_cast<size_t>(it.index)]);
    case ItemType::Collective:
      return coll_available(s, p.colls[static_cast<size_t>(it.index)]);
    default:
      return true;
  }
}

template <int W>
int64_t LaneEngine<W>::send_done(int32_t s, int32_t i, int64_t start, size_t lane, bool nowait) const {
  const SendMessage &m = m_prog[static_cast<size_t>(s)].sends[static_cast<size_t>(i)];
  const bool waits = send_waits(m_nets[0], m.bytes, m.dst >= 0);
  const int64_t posted = waits ? m_state[static_cast<size_t>(s)].recv_post[static_cast<size_t>(i)][lane] : kUnknown;
  return send_completion(m_nets[lane], m.bytes, m.dst >= 0, start, posted, nowait);
}

template <int W>
int64_t LaneEngine<W>::recv_done(int32_t s, int32_t i, int64_t post, size_t lane, bool nowait) const {
  const RecvMessage &m = m_prog[static_cast<size_t>(s)].recvs[static_cast<size_t>(i)];
  if (m.src < 0) return post + m.own_unmatched;
  return recv_completion(m_nets[lane], m.bytes, post,
                         m_state[static_cast<size_t>(s)].recv_send_start[static_cast<size_t>(i)][lane], nowait);
}

template <int W>
int64_t LaneEngine<W>::coll_done(int32_t s, const Collective &c, int64_t enter, size_t lane, bool nowait) const {
  const bool is_root = c.root == m_prog[static_cast<size_t>(s)].rank;
  if (collective_needs(c.flow, is_root, nowait) == CollectiveNeeds::Nothing)
    return collective_completion(m_nets[lane], c, is_root, enter, 0, 0, nowait);
  const CollState &cs = m_coll.find(c.instance)->second;  // available() saw it
  return collective_completion(m_nets[lane], c, is_root, enter, cs.max_enter[lane], cs.root_enter[lane], nowait);
}

template <int W>
int64_t LaneEngine<W>::item_done(int32_t s, const Item &it, int64_t enter, size_t lane, bool nowait) const {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  const RankState &st = m_state[static_cast<size_t>(s)];
  switch (it.type) {
    case ItemType::Send:
      return send_done(s, it.index, st.send_start[static_cast<size_t>(it.index)][lane], lane, nowait);
    case ItemType::PostSend:
      return st.send_start[static_cast<size_t>(it.index)][lane] + m_nets[lane].send_overhead(0);
    case ItemType::Recv:
      return recv_done(s, it.index, enter, lane, nowait);
    case ItemType::PostRecv:
      return enter + m_nets[lane].recv_overhead(0);
    case ItemType::Collective:
      return coll_done(s, p.colls[static_cast<size_t>(it.index)], enter, lane, nowait);
    case ItemType::PostCollective:
      return enter + m_nets[lane].send_overhead(0);
    case ItemType::Complete: {
      const int32_t k = st.slot_ref[static_cast<size_t>(it.index)];
      if (k < 0 || nowait) return enter;
      const Item &a = p.items[static_cast<size_t>(k)];
      switch (a.type) {
        case ItemType::PostSend:
          return send_done(s, a.index, st.send_start[static_cast<size_t>(a.index)][lane], lane, false);
        case ItemType::PostRecv:
          return recv_done(s, a.index, st.recv_posted[static_cast<size_t>(a.index)][lane], lane, false);
        case ItemType::PostCollective:
          return coll_done(s, p.colls[static_cast<size_t>(a.index)], st.coll_enter[static_cast<size_t>(a.index)][lane],
                           lane, false);
        default:
          return enter;
      }
    }
  }
  return enter;
}

template <int W>
bool LaneEngine<W>::try_event(int32_t s) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = m_state[static_cast<size_t>(s)];
  const size_t i = static_cast<size_t>(st.cursor);
  const Event &e = p.events[i];
  if (!st.posted) {
    for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
      const auto &gaps = m_sc[l]->gaps;
      const bool modified = !gaps.empty() && !gaps[static_cast<size_t>(s)].empty();
      st.enter[l] = st.now[l] + (modified ? gaps[static_cast<size_t>(s)][i] : e.gap);
    }
    post_items(s, e);
    st.posted = true;
  }
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k)
    if (!available(s, p.items[static_cast<size_t>(k)])) return false;
  for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
    const auto &all_flags = m_sc[l]->event_flags;
    const uint8_t flags =
        !all_flags.empty() && !all_flags[static_cast<size_t>(s)].empty() ? all_flags[static_cast<size_t>(s)][i] : 0;
    const int64_t enter = st.enter[l];
    int64_t exit = enter, nowait_exit = enter;
    if (flags & kZeroEvent) {
      // the event costs nothing and waits for nothing
    } else if (e.items == 0) {
      exit = nowait_exit = enter + p.owns[static_cast<size_t>(e.first_item)];
    } else {
      const bool skip_wait = (flags & kZeroWait) != 0;
      for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
        const Item &it = p.items[static_cast<size_t>(k)];
        const int64_t t = item_done(s, it, enter, l, skip_wait);
        exit = std::max(exit, t);
        nowait_exit = std::max(nowait_exit, skip_wait ? t : item_done(s, it, enter, l, true));
      }
    }
    if (m_sinks[l]) m_sinks[l](s, static_cast<int64_t>(i), {enter, exit, nowait_exit});
    st.now[l] = exit;
  }
  st.posted = false;
  if (++st.cursor == static_cast<int64_t>(p.events.size())) {
    m_end[static_cast<size_t>(s)] = st.now;
    --m_unfinished;
    return false;
  }
  return true;
}

template <int W>
bool LaneEngine<W>::advance() {
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

template class LaneEngine<2>;
template class LaneEngine<3>;
template class LaneEngine<4>;

}  // namespace perfsift::kernels::replay
