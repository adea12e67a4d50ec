// The replay's loop (see kernels/replay.h for the model). Per event: compute the enter time
// from the previous exit and the (scenario's) computation gap, post the event's messages and
// collective arrivals once, then evaluate each item's completion; a missing dependency
// parks the rank until a delivery wakes it. Everything an event reaches is in this file,
// for the compiler to see whole.
#include <algorithm>

#include "kernels/replay/engine_core.h"

namespace perfsift::kernels::replay {

void EngineCore::step(int32_t s) {
  if (m_prog[static_cast<size_t>(s)].laned())
    while (try_lane_step(s)) {}
  else
    while (!m_shifted && try_event(s)) {}
}

bool EngineCore::advance() {
  bool moved = false;
  while (!m_queue.empty() && !m_aborted && !m_shifted) {
    const int32_t s = m_queue.back();
    m_queue.pop_back();
    RankState &st = touch(s);
    st.queued = false;
    if (st.cursor >= static_cast<int64_t>(m_prog[static_cast<size_t>(s)].events.size())) continue;
    const int64_t before = st.cursor, before_step = st.step;
    const bool was_posted = st.posted;
    step(s);
    moved |= st.cursor != before || st.posted != was_posted || st.step != before_step;
    // One engine owning every rank checks its lead now and then (distributed: the driver).
    if (m_converge && !m_distributed && !m_shifted && (m_since_lead_check += st.cursor - before) >= kLeadCheckEvents) {
      m_since_lead_check = 0;
      const Frontier f = frontier();
      if (settled(f) && (m_rest_bound_met || lead_passes_threshold(f.lead))) m_aborted = true;
    }
  }
  // One engine owning every rank decides alone; distributed, the driver sums over engines.
  if (m_shifted) return moved;
  if (!m_distributed && !m_aborted && m_rest_bound_met && settled(frontier())) m_aborted = true;
  if (m_converge && !m_distributed && !m_aborted && back_on_snapshot()) m_converged = true;
  return moved;
}

int64_t EngineCore::release_stuck() {
  int64_t released = 0;
  for (size_t s = 0; s < m_state.size(); ++s) {
    RankState &st = touch(static_cast<int32_t>(s));
    if (st.cursor >= static_cast<int64_t>(m_prog[s].events.size())) continue;
    if (m_sc.resume && !(st.live && st.posted && needed(static_cast<int32_t>(s)))) continue;  // resting, not stuck
    st.release = true;
    ++released;
    wake(m_prog[s].rank);
  }
  m_released += released;
  // Resumed and nothing inside a call: every rank rests where the snapshot holds.
  if (m_converge && released == 0 && !m_distributed) m_converged = true;
  return released;
}

int64_t EngineCore::position(int32_t s) const {
  const int64_t c = m_state[static_cast<size_t>(s)].cursor;
  return c == kCutPending ? cut_of(s) : c;
}

// Whether the replay needs rank slot s to go on: up to its demand, or while it holds
// something off the snapshot.
bool EngineCore::needed(int32_t s) const {
  const RankState &st = m_state[static_cast<size_t>(s)];
  return !m_converge || st.cursor <= st.demand || m_rank_dirty[static_cast<size_t>(s)] || st.pending > 0;
}

// A rank rests while the snapshot holds for it and nobody needs it further.
bool EngineCore::resting(int32_t s) const { return m_converge && !m_state[static_cast<size_t>(s)].ahead && !needed(s); }

int64_t EngineCore::bytes_of(int32_t s, int32_t send_index) const {
  const auto &over = m_sc.send_bytes;
  if (!over.empty() && !over[static_cast<size_t>(s)].empty())
    return over[static_cast<size_t>(s)][static_cast<size_t>(send_index)];
  return m_prog[static_cast<size_t>(s)].sends[static_cast<size_t>(send_index)].bytes;
}

void EngineCore::wake(int32_t rank) {
  const int32_t s = m_slot_of[static_cast<size_t>(rank)];
  RankState &st = touch(s);
  if (!st.queued) {
    st.queued = true;
    m_queue.push_back(s);
  }
}

// A value rank slot s has not used yet differs from the snapshot's.
void EngineCore::differs(int32_t s, bool send, int32_t index, int64_t lead) {
  RankState &st = touch(s);
  st.pending_lead = std::max(st.pending_lead, lead);
  auto &flag = at(s, send ? st.send_differs : st.recv_differs, index, Field::Flag);
  if (flag) return;
  flag = 1;
  ++m_pending;
  ++touch(s).pending;
}

void EngineCore::deliver_send(int32_t dst, int32_t recv_index, int64_t t, int64_t bytes) {
  const int32_t s = m_slot_of[static_cast<size_t>(dst)];
  if (s < 0) {
    if (m_distributed) m_out.sends.push_back({dst, recv_index, t, bytes});
    return;
  }
  if (m_sc.resume) join(s);
  at(s, touch(s).recv_send_start, recv_index, Field::RecvSendStart) = t;
  if (m_converge) {
    const int64_t was =
        m_sc.resume->recv_send_start_at(m_prog, m_slot_of, static_cast<size_t>(s), static_cast<size_t>(recv_index));
    if (t != was && !consumed(dst, m_sc.resume->recv_consumer, recv_index)) differs(s, false, recv_index, was - t);
  }
  if (bytes != m_prog[static_cast<size_t>(s)].recvs[static_cast<size_t>(recv_index)].bytes())
    m_changed_bytes[(static_cast<uint64_t>(s) << 32) | static_cast<uint32_t>(recv_index)] = bytes;
  wake(dst);
}

void EngineCore::deliver_recv(int32_t src, int32_t send_index, int64_t t) {
  const int32_t s = m_slot_of[static_cast<size_t>(src)];
  if (s < 0) {
    if (m_distributed) m_out.recvs.push_back({src, send_index, t});
    return;
  }
  if (m_sc.resume) join(s);
  at(s, touch(s).recv_post, send_index, Field::RecvPost) = t;
  if (m_converge) {
    const int64_t was = m_sc.resume->recv_post[static_cast<size_t>(s)][static_cast<size_t>(send_index)];
    if (t != was && !consumed(src, m_sc.resume->send_consumer, send_index)) differs(s, true, send_index, was - t);
  }
  wake(src);
}

void EngineCore::arrive(int64_t instance, int32_t count, int64_t max_enter, int64_t root_enter, int32_t expected) {
  CollState &c = coll_state(instance);
  if (c.expected == 0) c.expected = expected;
  c.count += count;
  if (max_enter != kUnknown) c.max_enter = std::max(c.max_enter, max_enter);
  if (root_enter != kUnknown) c.root_enter = root_enter;
  check_divergence(c);
  // Wake the waiters only when they can go on: all members arrived, or the root did
  // (waking on every arrival would cost members^2 retries).
  const bool complete = c.expected > 0 && c.count >= c.expected;
  if (!complete && root_enter == kUnknown) return;
  if (auto it = m_coll_waiters.find(instance); it != m_coll_waiters.end()) {
    for (int32_t r : it->second) wake(r);
    m_coll_waiters.erase(it);
  }
}

void EngineCore::apply(const SendPost &p) { deliver_send(p.dst, p.recv_index, p.t, p.bytes); }
void EngineCore::apply(const RecvPost &p) { deliver_recv(p.src, p.send_index, p.t); }
void EngineCore::apply(const Arrival &a) { arrive(a.instance, a.count, a.max_enter, a.root_enter, 0); }

Outbox EngineCore::take_outbox() { return hand_over(m_out, m_out_arrivals); }

void EngineCore::post_items(int32_t s, const Event &e, int64_t enter) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
    const Item &it = p.items[static_cast<size_t>(k)];
    switch (it.type) {
      case ItemType::Send:
      case ItemType::PostSend: {
        const SendMessage &m = p.sends[static_cast<size_t>(it.index)];
        const int64_t b = bytes_of(s, it.index);
        const int64_t start = std::max(enter, st.next_inject);
        const LogGPS &net = m_net.between(p.rank, m.dst);
        st.next_inject = start + net.injection_gap(b);
        at(s, st.send_start, it.index, Field::SendStart) = start;
        if (m_converge) {
          // A later call completes it: until then a start off the snapshot is unused.
          const int64_t was = m_sc.resume->send_start[static_cast<size_t>(s)][static_cast<size_t>(it.index)];
          st.snapshot_inject = was + net.injection_gap(b);
          if (it.type == ItemType::PostSend && start != was) differs(s, true, it.index, was - start);
        }
        if (m.dst >= 0) deliver_send(m.dst, m.recv_index, start, b);
        break;
      }
      case ItemType::Recv:
      case ItemType::PostRecv: {
        const RecvMessage &m = p.recvs[static_cast<size_t>(it.index)];
        at(s, st.recv_posted, it.index, Field::RecvPosted) = enter;
        if (m_converge && it.type == ItemType::PostRecv) {
          const int64_t was = m_sc.resume->recv_posted(static_cast<size_t>(s), static_cast<size_t>(it.index));
          if (enter != was) differs(s, false, it.index, was - enter);
        }
        if (m.src >= 0) deliver_recv(m.src, m.send_index, enter);
        break;
      }
      case ItemType::Collective:
      case ItemType::PostCollective: {
        const Collective &c = p.colls[static_cast<size_t>(it.index)];
        at(s, st.coll_enter, it.index, Field::CollEnter) = enter;
        if (m_converge && m_assumed > 0 && take_assumed(s, c.instance)) {
          // Counted already as in the snapshot: it must arrive so (and now has, or not).
          if (enter != m_sc.resume->coll_enter(static_cast<size_t>(s), static_cast<size_t>(it.index)))
            m_conflict = true;
          break;
        }
        const int64_t root_enter = c.root == p.rank ? enter : kUnknown;
        arrive(c.instance, 1, enter, root_enter, c.members);
        if (m_converge) {
          const int64_t was = m_sc.resume->coll_enter(static_cast<size_t>(s), static_cast<size_t>(it.index));
          if (was > enter) {
            CollState &cs = m_coll[c.instance];
            cs.arrival_lead = std::max(cs.arrival_lead, was - enter);
            list_lead(c.instance, cs);
          }
        }
        if (m_distributed) {
          auto [pos, fresh] = m_out_arrivals.try_emplace(c.instance, Arrival{c.instance, 0, 0, kUnknown, kUnknown});
          Arrival &a = pos->second;
          ++a.count;
          a.max_enter = std::max(a.max_enter, enter);
          if (root_enter != kUnknown) a.root_enter = root_enter;
        }
        break;
      }
      case ItemType::Complete:
        break;
    }
    if (it.slot >= 0) at(s, st.slot_ref, it.slot, Field::SlotRef) = static_cast<int32_t>(k);
  }
}

EngineCore::Done EngineCore::send_done(int32_t s, int32_t i, int64_t start, bool skip_wait) {
  RankState &st = touch(s);
  const int64_t b = bytes_of(s, i);
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  const int32_t dst = p.sends[static_cast<size_t>(i)].dst;
  const bool matched = dst >= 0;
  const LogGPS &net = m_net.between(p.rank, dst);
  const int64_t nowait = send_completion(net, b, matched, start, kUnknown, true);
  if (skip_wait || !send_waits(net, b, matched)) return {nowait, nowait};
  const int64_t posted = at(s, st.recv_post, i, Field::RecvPost);
  if (posted == kUnknown) return {kUnknown, 0};
  return {send_completion(net, b, matched, start, posted, false), nowait};
}

EngineCore::Done EngineCore::recv_done(int32_t s, int32_t i, int64_t post, bool skip_wait) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  const RecvMessage &m = p.recvs[static_cast<size_t>(i)];
  if (m.src < 0) return {post + m.own_unmatched(), post + m.own_unmatched()};
  int64_t b = m.bytes();
  if (!m_changed_bytes.empty())
    if (auto it = m_changed_bytes.find((static_cast<uint64_t>(s) << 32) | static_cast<uint32_t>(i));
        it != m_changed_bytes.end())
      b = it->second;
  const int64_t sent = at(s, st.recv_send_start, i, Field::RecvSendStart);
  if (!skip_wait && sent == kUnknown) return {kUnknown, 0};
  const LogGPS &net = m_net.between(m.src, p.rank);
  const int64_t nowait = recv_completion(net, b, post, sent, true);
  return {skip_wait ? nowait : recv_completion(net, b, post, sent, false), nowait};
}

EngineCore::Done EngineCore::coll_done(int32_t s, const Collective &c, int64_t enter, bool skip_wait) {
  const bool is_root = c.root == m_prog[static_cast<size_t>(s)].rank;
  const int64_t nowait = collective_completion(m_net, c, is_root, enter, 0, 0, true);
  const CollectiveNeeds needs = collective_needs(c.flow, is_root, skip_wait);
  if (needs == CollectiveNeeds::Nothing) return {nowait, nowait};  // what waiting adds is nothing
  if (m_sc.resume) coll_state(c.instance);                         // its earlier arrivals, the first time
  auto it = m_coll.find(c.instance);
  if (it == m_coll.end()) return {kUnknown, 0};
  if (needs == CollectiveNeeds::Root ? it->second.root_enter == kUnknown : it->second.count < c.members)
    return {kUnknown, 0};
  return {collective_completion(m_net, c, is_root, enter, it->second.max_enter, it->second.root_enter, false), nowait};
}

EngineCore::Done EngineCore::item_done(int32_t s, const Item &it, int64_t enter, bool skip_wait) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  const auto both = [](int64_t t) { return Done{t, t}; };
  switch (it.type) {
    case ItemType::Send:
      return send_done(s, it.index, at(s, st.send_start, it.index, Field::SendStart), skip_wait);
    case ItemType::PostSend:
      return both(at(s, st.send_start, it.index, Field::SendStart) +
                  m_net.between(p.rank, p.sends[static_cast<size_t>(it.index)].dst).send_overhead(0));
    case ItemType::Recv:
      return recv_done(s, it.index, enter, skip_wait);
    case ItemType::PostRecv:
      return both(enter + m_net.between(p.recvs[static_cast<size_t>(it.index)].src, p.rank).recv_overhead(0));
    case ItemType::Collective:
      return coll_done(s, p.colls[static_cast<size_t>(it.index)], enter, skip_wait);
    case ItemType::PostCollective:
      return both(enter + m_net.for_collectives().send_overhead(0));
    case ItemType::Complete: {
      // What its request posted is waited for; without waiting the completion costs nothing.
      const int64_t k = at(s, st.slot_ref, it.index, Field::SlotRef);
      if (k < 0 || skip_wait) return both(enter);  // k < 0: the activation was not traced
      const Item &a = p.items[static_cast<size_t>(k)];
      switch (a.type) {
        case ItemType::PostSend:
          return {send_done(s, a.index, at(s, st.send_start, a.index, Field::SendStart), false).wait, enter};
        case ItemType::PostRecv:
          return {recv_done(s, a.index, at(s, st.recv_posted, a.index, Field::RecvPosted), false).wait, enter};
        case ItemType::PostCollective: {
          const Collective &c = p.colls[static_cast<size_t>(a.index)];
          return {coll_done(s, c, at(s, st.coll_enter, a.index, Field::CollEnter), false).wait, enter};
        }
        default:
          return both(enter);
      }
    }
  }
  return both(enter);
}

uint8_t EngineCore::event_flags(int32_t s, int64_t i) const {
  uint8_t flags = m_sc.flags(static_cast<size_t>(s), static_cast<size_t>(i));
  if (m_prog[static_cast<size_t>(s)].rank == m_sc.zero_wait_rank && i == m_sc.zero_wait_event) flags |= kZeroWait;
  return flags;
}

bool EngineCore::complete_event(int32_t s, const Event &e, int64_t enter, uint8_t flags, int64_t &exit,
                                int64_t &nowait_exit) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  exit = nowait_exit = enter;
  if (flags & kZeroEvent) return true;  // the event costs nothing and waits for nothing
  if (e.items == 0) {
    exit = nowait_exit = enter + p.owns[static_cast<size_t>(e.first_item)];
    return true;
  }
  const bool skip_wait = (flags & kZeroWait) || st.release;
  for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
    const Item &it = p.items[static_cast<size_t>(k)];
    const Done d = item_done(s, it, enter, skip_wait);
    if (d.wait == kUnknown) {
      const int32_t a = it.type == ItemType::Complete ? at(s, st.slot_ref, it.index, Field::SlotRef) : -1;
      const Item &waited = a >= 0 ? p.items[static_cast<size_t>(a)] : it;
      if (waited.type == ItemType::Collective || waited.type == ItemType::PostCollective)
        m_coll_waiters[p.colls[static_cast<size_t>(waited.index)].instance].push_back(p.rank);
      // A rank running ahead stops at the first value it lacks; one the replay needs asks
      // the other end to reach its side of the message.
      else if (m_sc.resume && !needed(s))
        touch(s).ahead = false;
      else if (m_sc.resume && (waited.type == ItemType::Recv || waited.type == ItemType::PostRecv)) {
        const RecvMessage &m = p.recvs[static_cast<size_t>(waited.index)];
        pull(m.src, true, m.send_index);
      } else if (m_sc.resume && (waited.type == ItemType::Send || waited.type == ItemType::PostSend)) {
        const SendMessage &m = p.sends[static_cast<size_t>(waited.index)];
        pull(m.dst, false, m.recv_index);
      }
      return false;
    }
    exit = std::max(exit, d.wait);
    nowait_exit = std::max(nowait_exit, d.nowait);
  }
  return true;
}

// Kept whole: the replay's inner loop (bench_replay), whose convergence bookkeeping
// shares the rank's state and its early returns.
bool EngineCore::try_event(int32_t s) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  const size_t i = static_cast<size_t>(st.cursor);
  const Event &e = p.events[i];
  const uint8_t flags = event_flags(s, st.cursor);
  if (!st.posted) {
    if (m_converge && resting(s)) return false;
    const int64_t gap = m_sc.gap(static_cast<size_t>(s), i, e.gap);
    st.enter = st.now + gap;
    post_items(s, e, st.enter);
    st.posted = true;
    if (m_conflict) return false;
  }
  const int64_t enter = st.enter;
  int64_t exit = enter, nowait_exit = enter;
  if (!complete_event(s, e, enter, flags, exit, nowait_exit)) return false;
  if (m_record) m_timings[static_cast<size_t>(s)].push_back({enter, exit, nowait_exit});
  m_sink.see(s, static_cast<int64_t>(i), {enter, exit, nowait_exit});
  if (m_converge) {
    for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
      const Item &it = p.items[static_cast<size_t>(k)];
      switch (it.type) {
        case ItemType::Recv:
          used_recv(s, it.index);
          break;
        case ItemType::Send:
          used_send(s, it.index);
          break;
        case ItemType::Collective:
          used_coll(s, it.index);
          break;
        case ItemType::Complete: {
          const int32_t a = at(s, st.slot_ref, it.index, Field::SlotRef);
          if (a < 0) break;
          const Item &act = p.items[static_cast<size_t>(a)];
          if (act.type == ItemType::PostRecv)
            used_recv(s, act.index);
          else if (act.type == ItemType::PostSend)
            used_send(s, act.index);
          else if (act.type == ItemType::PostCollective)
            used_coll(s, act.index);
          break;
        }
        default:
          break;
      }
    }
    // Off the snapshot: its exit, or an injection horizon that a later send could meet.
    const bool inject_differs =
        st.next_inject != st.snapshot_inject && std::max(st.next_inject, st.snapshot_inject) > exit;
    const uint8_t dirty = exit != m_sc.resume->timings()[static_cast<size_t>(s)].exit(i) || inject_differs;
    m_dirty += static_cast<int64_t>(dirty) - static_cast<int64_t>(m_rank_dirty[static_cast<size_t>(s)]);
    m_rank_dirty[static_cast<size_t>(s)] = dirty;
    if (m_cuts) {
      const auto &cuts = (*m_cuts)[static_cast<size_t>(s)];
      if (st.next_cut < cuts.size() && cuts[st.next_cut] == st.cursor) left_cut(s, st.cursor, exit);
    }
  }
  if (m_sc.rest && exit + (*m_sc.rest)[static_cast<size_t>(s)][i + 1] >= m_sc.abort_at) {
    // The run cannot end before abort_at, if this exit holds: it does unless it follows
    // from a collective arrival assumed and not yet seen (Scenario::assume_resting_arrivals).
    if (!m_distributed && m_assumed == 0) {
      m_aborted = true;
      return false;
    }
    m_rest_bound_met = true;
  }
  st.now = exit;
  st.posted = false;
  st.release = false;
  if (++st.cursor == static_cast<int64_t>(p.events.size())) {
    m_end[static_cast<size_t>(s)] = exit;
    --m_unfinished;
    if (m_converge) rank_finished(s);
    return false;
  }
  return true;
}

// A finished rank's end is known: nothing it holds can move the run any more.
void EngineCore::rank_finished(int32_t s) {
  RankState &st = touch(s);
  m_dirty -= m_rank_dirty[static_cast<size_t>(s)];
  m_rank_dirty[static_cast<size_t>(s)] = 0;
  m_pending -= st.pending;
  st.pending = 0;
  st.pending_lead = 0;
  std::fill(st.recv_differs.v.begin(), st.recv_differs.v.end(), 0);
  std::fill(st.send_differs.v.begin(), st.send_differs.v.end(), 0);
}

bool EngineCore::consumed(int32_t rank, const std::vector<std::vector<int32_t>> &consumer, int32_t index) const {
  const int32_t q = m_slot_of[static_cast<size_t>(rank)];
  return q >= 0 && consumer[static_cast<size_t>(q)][static_cast<size_t>(index)] < position(q);
}

void EngineCore::used_recv(int32_t s, int32_t i) {
  auto &flag = at(s, touch(s).recv_differs, i, Field::Flag);
  if (flag) {
    --m_pending;
    if (RankState &st = touch(s); --st.pending == 0) st.pending_lead = 0;
  }
  flag = 0;
}

void EngineCore::used_send(int32_t s, int32_t i) {
  auto &flag = at(s, touch(s).send_differs, i, Field::Flag);
  if (flag) {
    --m_pending;
    if (RankState &st = touch(s); --st.pending == 0) st.pending_lead = 0;
  }
  flag = 0;
}

void EngineCore::used_coll(int32_t s, int32_t c) {
  const Collective &cl = m_prog[static_cast<size_t>(s)].colls[static_cast<size_t>(c)];
  CollState &cs = m_coll[cl.instance];
  if (++cs.used == cs.local_users && cs.divergent) --m_pending;
}

}  // namespace perfsift::kernels::replay
