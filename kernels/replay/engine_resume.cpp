// Resumed replays (Scenario::resume): a rank joins at its cut with the snapshot's values
// there, a collective instance first met gathers the snapshot's earlier arrivals, and a
// rank another needs is pulled up to the event that posts what it needs.
#include <algorithm>
#include <ranges>

#include "kernels/replay/engine_core.h"

namespace perfsift::kernels::replay {

int64_t EngineCore::cut_of(int32_t s) const {
  const Snapshot &snap = *m_sc.resume;
  const auto &mx = snap.exit_max[static_cast<size_t>(s)];
  if (!mx.empty()) return std::upper_bound(mx.begin(), mx.end(), m_sc.resume_at) - mx.begin();
  const TimingColumn &t = snap.timings()[static_cast<size_t>(s)];
  const auto events = std::views::iota(size_t{0}, t.size());
  return std::ranges::upper_bound(events, m_sc.resume_at, {}, [&t](size_t i) { return t.exit(i); }) - events.begin();
}

void EngineCore::join(int32_t s) {
  RankState &st = touch(s);
  if (st.live) return;
  st.cursor = position(s);
  st.live = true;
  if (m_converge) m_joined.push_back(s);
  const Snapshot &snap = *m_sc.resume;
  const size_t q = static_cast<size_t>(s);
  const RankProgram &p = m_prog[q];
  const int64_t c = st.cursor;
  st.cut = c;
  st.now = c > 0 ? snap.timings()[q].exit(static_cast<size_t>(c - 1)) : 0;
  if (m_record)
    for (size_t i = 0; i < static_cast<size_t>(c); ++i) m_timings[q].push_back(snap.timings()[q][i]);
  // Each kind's values from its first one posted after the cut less its open lag.
  const auto &lag = snap.open_lag[q];
  auto open = [&](auto &w, const std::vector<int32_t> &posted, size_t n, int64_t kind_lag) {
    const int64_t first = std::lower_bound(posted.begin(), posted.end(), c) - posted.begin();
    w.base = std::max<int64_t>(0, first - kind_lag);
    w.size = static_cast<int64_t>(n);
    return first;
  };
  open(st.slot_ref, snap.slot_event[q], static_cast<size_t>(p.request_slots), lag[0]);
  const int64_t first_send = open(st.send_start, snap.send_event[q], p.sends.size(), lag[1]);
  open(st.recv_post, snap.send_event[q], p.sends.size(), lag[1]);
  open(st.recv_send_start, snap.recv_event[q], p.recvs.size(), lag[2]);
  open(st.recv_posted, snap.recv_event[q], p.recvs.size(), lag[2]);
  open(st.coll_enter, snap.coll_event[q], p.colls.size(), lag[3]);
  if (m_converge) {
    open(st.send_differs, snap.send_event[q], p.sends.size(), lag[1]);
    open(st.recv_differs, snap.recv_event[q], p.recvs.size(), lag[2]);
  }
  // The injection horizon its last send before the cut left.
  if (first_send > 0)
    st.next_inject = snap.send_start[q][static_cast<size_t>(first_send - 1)] +
                     m_net.between(p.rank, p.sends[static_cast<size_t>(first_send - 1)].dst)
                         .injection_gap(bytes_of(s, static_cast<int32_t>(first_send - 1)));
  st.snapshot_inject = st.next_inject;
  if (m_cuts) {
    const auto &cuts = (*m_cuts)[q];
    st.next_cut = static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), c) - cuts.begin());
  }
}

int64_t EngineCore::initial(int32_t s, int64_t k, Field f) const {
  const Snapshot &snap = *m_sc.resume;
  const size_t q = static_cast<size_t>(s), i = static_cast<size_t>(k);
  const int64_t c = m_state[q].cut, at = m_sc.resume_at;
  switch (f) {
    case Field::SlotRef:
      return snap.slot_event[q][i] < c ? snap.slot_ref[q][i] : -1;
    case Field::SendStart:
      return snap.send_event[q][i] < c ? snap.send_start[q][i] : kUnknown;
    case Field::RecvPost:  // a receive its rank posted before its own cut is not posted again
      return snap.send_partner_exit_max_at(m_prog, m_slot_of, q, i) <= at ? snap.recv_post[q][i] : kUnknown;
    case Field::RecvSendStart:
      return snap.recv_partner_exit_max_at(m_prog, m_slot_of, q, i) <= at
                 ? snap.recv_send_start_at(m_prog, m_slot_of, q, i)
                 : kUnknown;
    case Field::RecvPosted:
      return snap.recv_event[q][i] < c ? snap.recv_posted(q, i) : kUnknown;
    case Field::CollEnter:
      return snap.coll_event[q][i] < c ? snap.coll_enter(q, i) : kUnknown;
    case Field::Flag:
      return 0;
  }
  return 0;
}

template <class T>
T &EngineCore::grow(int32_t s, Values<T> &w, int64_t k, Field f) {
  if (k < w.base || k >= w.size || !m_sc.resume) {
    w.below = m_sc.resume && k >= 0 && k < w.size ? static_cast<T>(initial(s, k, f)) : T{};
    return w.below;
  }
  const int64_t have = w.base + static_cast<int64_t>(w.v.size());
  const int64_t want = std::min(w.size, std::max(k + 1, have + static_cast<int64_t>(w.v.size()) + 16));
  w.v.reserve(static_cast<size_t>(want - w.base));
  for (int64_t j = have; j < want; ++j) w.v.push_back(static_cast<T>(initial(s, j, f)));
  return w.v[static_cast<size_t>(k - w.base)];
}
// The value types of RankState's tables (at() calls grow from the replay's loop).
template int32_t &EngineCore::grow(int32_t, Values<int32_t> &, int64_t, Field);
template int64_t &EngineCore::grow(int32_t, Values<int64_t> &, int64_t, Field);
template uint8_t &EngineCore::grow(int32_t, Values<uint8_t> &, int64_t, Field);

void EngineCore::need(int32_t s, int64_t event) {
  RankState &st = touch(s);
  if (!st.live) st.cursor = position(s);
  if (st.cursor >= static_cast<int64_t>(m_prog[static_cast<size_t>(s)].events.size())) return;
  join(s);
  if (event <= st.demand) return;
  st.demand = event;
  wake(m_prog[static_cast<size_t>(s)].rank);
}

void EngineCore::pull(int32_t rank, bool send, int64_t index) {
  const int32_t q = m_slot_of[static_cast<size_t>(rank)];
  if (q < 0) {
    if (m_distributed) m_out.pulls.push_back({rank, send ? 1 : 0, index});
    return;
  }
  const Snapshot &snap = *m_sc.resume;
  need(q, (send ? snap.send_event : snap.recv_event)[static_cast<size_t>(q)][static_cast<size_t>(index)]);
  // Distributed, a rank pulled runs on past the event while it has what it needs: the
  // next value asked of it is then often there already, not a round trip away.
  if (m_distributed) touch(q).ahead = true;
}

void EngineCore::apply(const Pull &p) { pull(p.rank, p.send != 0, p.index); }

EngineCore::CollState &EngineCore::coll_state(int64_t instance) {
  CollState &c = m_coll[instance];
  if (!m_sc.resume || c.gathered) return c;
  // First met in a resumed replay: the owned members' arrivals before their cuts count
  // (and travel to the other owners, telling them to add theirs); the others are needed
  // up to the call that uses the arrivals.
  c.gathered = true;
  const Snapshot &snap = *m_sc.resume;
  const int64_t at = m_sc.resume_at;
  Arrival before{instance, 0, 0, kUnknown, kUnknown};
  const auto range = snap.members_of(instance);
  const bool may_assume = m_converge && m_sc.assume_resting_arrivals;
  if (range.first != range.second) {
    const Snapshot::Member &first = *range.first;
    if (c.member_slot < 0) {
      c.member_slot = first.slot;
      c.member_index = first.index;
    }
    if (c.expected == 0)
      c.expected = m_prog[static_cast<size_t>(first.slot)].colls[static_cast<size_t>(first.index)].members;
  }
  for (auto m = range.first; m != range.second; ++m) {
    const size_t q = static_cast<size_t>(m->slot);
    if (m->has_user) ++c.local_users;
    const bool ended = m->posted_by <= at;
    const RankState &st = m_state[q];
    // A member resting where the snapshot holds (not yet joined, or clean and needed no
    // further) arrives as in the snapshot; one replaying is needed up to its arrival.
    bool assumed = false;
    if (may_assume && !ended) {
      const int64_t ev = snap.coll_event[q][static_cast<size_t>(m->index)];
      assumed = !st.live || (!st.posted && st.cursor <= ev && resting(m->slot));
    }
    if (ended || assumed) {
      ++before.count;
      before.max_enter = std::max(before.max_enter, m->enter);
      if (m->root) before.root_enter = m->enter;
      if (m->used_by <= at) ++c.used;
      if (assumed) {
        const size_t bit = static_cast<size_t>(m - range.first);
        if (c.assumed.empty()) c.assumed.assign((static_cast<size_t>(range.second - range.first) + 63) / 64, 0);
        c.assumed[bit / 64] |= uint64_t{1} << (bit % 64);
        ++m_assumed;
        m_assumed_latest = std::max(m_assumed_latest, m->enter);
      }
    } else if (!ended) {
      const int64_t ev = snap.coll_event[q][static_cast<size_t>(m->index)];
      if (!st.live || st.cursor < ev || (st.cursor == ev && !st.posted)) need(m->slot, ev);
    }
  }
  c.count += before.count;
  if (before.max_enter != kUnknown) c.max_enter = std::max(c.max_enter, before.max_enter);
  if (before.root_enter != kUnknown) c.root_enter = before.root_enter;
  if (!m_converge) {
    // Replaying every rank to its end: each member uses the arrivals in turn.
    for (auto m = range.first; m != range.second; ++m) {
      const int64_t user = snap.coll_consumer[static_cast<size_t>(m->slot)][static_cast<size_t>(m->index)];
      if (user != Snapshot::kNever) need(m->slot, user);
    }
  }
  if (m_distributed) {
    auto [pos, fresh] = m_out_arrivals.try_emplace(instance, Arrival{instance, 0, 0, kUnknown, kUnknown});
    Arrival &a = pos->second;
    a.count += before.count;
    a.max_enter = std::max(a.max_enter, before.max_enter);
    if (before.root_enter != kUnknown) a.root_enter = before.root_enter;
  }
  check_divergence(c);
  return c;
}

bool EngineCore::take_assumed(int32_t s, int64_t instance) {
  const auto found = m_coll.find(instance);
  if (found == m_coll.end() || found->second.assumed.empty()) return false;
  const auto range = m_sc.resume->members_of(instance);
  const auto m = std::lower_bound(range.first, range.second, s,
                                  [](const Snapshot::Member &x, int32_t slot) { return x.slot < slot; });
  if (m == range.second || m->slot != s) return false;
  const size_t bit = static_cast<size_t>(m - range.first);
  uint64_t &word = found->second.assumed[bit / 64];
  const uint64_t mask = uint64_t{1} << (bit % 64);
  if (!(word & mask)) return false;
  word &= ~mask;
  --m_assumed;
  return true;
}

// Once what the members wait for is known and differs from the snapshot, every owned
// member must use it again: each is needed up to its using call.
void EngineCore::check_divergence(CollState &c) {
  if (!m_converge || c.divergent || c.member_slot < 0) return;
  const Snapshot &snap = *m_sc.resume;
  const size_t q = static_cast<size_t>(c.member_slot), k = static_cast<size_t>(c.member_index);
  const bool all_in = c.expected > 0 && c.count >= c.expected;
  if (!(all_in && c.max_enter != snap.coll_max_enter[q][k]) &&
      !(c.root_enter != kUnknown && c.root_enter != snap.coll_root_enter[q][k]))
    return;
  c.divergent = true;
  if (c.used < c.local_users) ++m_pending;
  list_lead(m_prog[q].colls[k].instance, c);
  const int64_t instance = m_prog[q].colls[k].instance;
  const auto range = snap.members_of(instance);
  for (auto m = range.first; m != range.second; ++m)
    if (m->has_user && m->used_by > m_sc.resume_at)
      need(m->slot, snap.coll_consumer[static_cast<size_t>(m->slot)][static_cast<size_t>(m->index)]);
}

}  // namespace perfsift::kernels::replay
