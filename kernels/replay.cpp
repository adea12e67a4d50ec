// Replay engine (see replay.h for the model). Per event: compute the enter time from the
// previous exit and the (scenario's) computation gap, post the event's messages and
// collective arrivals once, then evaluate each item's completion; a missing dependency
// parks the rank until a delivery wakes it.
#include "kernels/replay.h"

#include <algorithm>
#include <ranges>
#include <stdexcept>
#include <string>

namespace perfsift::kernels::replay {

BlockDeltaColumn::BlockDeltaColumn(const std::vector<int64_t> &values) {
  reserve(values.size());
  for (const int64_t v : values) push_back(v);
}

void BlockDeltaColumn::push_back(int64_t v) {
  if (!m_full.empty()) {
    m_full.push_back(v);
    return;
  }
  if (m_diff.size() % kBlock == 0) {
    m_block.push_back(v);
    m_diff.push_back(0);
    return;
  }
  int64_t d = 0;
  if (__builtin_sub_overflow(v, m_block.back(), &d) || d < std::numeric_limits<int32_t>::min() ||
      d > std::numeric_limits<int32_t>::max()) {
    widen();
    m_full.push_back(v);
    return;
  }
  m_diff.push_back(static_cast<int32_t>(d));
}

void BlockDeltaColumn::widen() {
  std::vector<int64_t> full;
  full.reserve(std::max(m_diff.capacity(), m_diff.size() + 1));
  for (size_t i = 0; i < m_diff.size(); ++i) full.push_back((*this)[i]);
  std::vector<int64_t>().swap(m_block);
  std::vector<int32_t>().swap(m_diff);
  m_full = std::move(full);
}

void BlockDeltaColumn::reserve(size_t n) {
  if (!m_full.empty()) {
    m_full.reserve(n);
    return;
  }
  m_block.reserve((n + kBlock - 1) / kBlock);
  m_diff.reserve(n);
}

void BlockDeltaColumn::shrink_to_fit() {
  m_block.shrink_to_fit();
  m_diff.shrink_to_fit();
  m_full.shrink_to_fit();
}

uint32_t TimingColumn::narrow(int64_t exit, int64_t value, std::vector<Wide> &wide, size_t i) {
  const uint64_t d = static_cast<uint64_t>(exit) - static_cast<uint64_t>(value);
  if (d < kWide) return static_cast<uint32_t>(d);
  wide.push_back({i, value});
  return kWide;
}

int64_t TimingColumn::wide_value(const std::vector<Wide> &wide, size_t i) {
  return std::lower_bound(wide.begin(), wide.end(), i, [](const Wide &w, size_t e) { return w.event < e; })->value;
}

void TimingColumn::push_back(const EventTiming &t) {
  const size_t i = size();
  m_exit.push_back(t.exit);
  m_duration.push_back(narrow(t.exit, t.enter, m_wide_enter, i));
  m_waiting.push_back(narrow(t.exit, t.nowait_exit, m_wide_nowait_exit, i));
}

void TimingColumn::reserve(size_t n) {
  m_exit.reserve(n);
  m_duration.reserve(n);
  m_waiting.reserve(n);
}

void TimingColumn::shrink_to_fit() {
  m_exit.shrink_to_fit();
  m_duration.shrink_to_fit();
  m_waiting.shrink_to_fit();
  m_wide_enter.shrink_to_fit();
  m_wide_nowait_exit.shrink_to_fit();
}

Engine::Engine(const std::vector<RankProgram> &programs, const Scenario &scenario, int32_t nranks, bool record_timings,
               bool distributed)
    : m_prog(programs),
      m_sc(scenario),
      m_net(scenario.network()),
      m_record(record_timings),
      m_distributed(distributed) {
  m_slot_of.assign(static_cast<size_t>(nranks), -1);
  if (scenario.resume) {
    auto &spare = spare_states();
    for (auto it = spare.begin(); it != spare.end(); ++it)
      if (it->size() == programs.size()) {
        m_state = std::move(*it);
        spare.erase(it);
        break;
      }
    m_recycled = true;
    m_touched_flag.assign(programs.size(), 0);
  }
  m_state.resize(programs.size());
  m_end.assign(programs.size(), 0);
  if (m_record) m_timings.resize(programs.size());
  if (m_record) m_lane_timings.resize(programs.size());
  m_converge = scenario.resume && scenario.stop_when_converged;
  for (size_t s = 0; s < programs.size(); ++s) {
    const RankProgram &p = programs[s];
    m_slot_of[static_cast<size_t>(p.rank)] = static_cast<int32_t>(s);
    if (p.laned() && scenario.resume)
      throw std::logic_error("replay: resuming is for single-stream programs (rank " + std::to_string(p.rank) +
                             " has several lanes)");
  }
  if (m_converge) m_rank_dirty.assign(programs.size(), 0);
  // Clean cuts stop a replay only where nothing but the zeroed wait changed.
  if (m_converge && scenario.cuts && scenario.cuts->size() == programs.size() && scenario.gaps.empty() &&
      scenario.send_bytes.empty() && scenario.event_flags.empty())
    m_cuts = scenario.cuts;
  for (size_t s = 0; s < programs.size(); ++s) {
    const RankProgram &p = programs[s];
    RankState &st = m_state[s];
    if (scenario.resume) {
      // Resumed: every rank rests at its cut until the replay needs it (join).
      // Its cut is found when it joins (a binary search per rank and candidate was a
      // tenth of the domino search): until then only whether it ended by the resume time.
      // (A recycled state is fresh but for these two, set here for every rank.)
      st.live = false;
      st.cursor = 0;
      if (p.events.empty()) continue;
      if (scenario.resume->last_exit_max(s) > scenario.resume_at) {
        st.cursor = kCutPending;
        ++m_unfinished;
      } else {
        st.cursor = static_cast<int64_t>(p.events.size());
        m_end[s] = scenario.resume->end[s];
      }
      continue;
    }
    st.slot_ref.assign(static_cast<size_t>(p.request_slots), -1);
    st.send_start.assign(p.sends.size(), kUnknown);
    st.recv_post.assign(p.sends.size(), kUnknown);  // per send: the receiver's post time
    st.coll_enter.assign(p.colls.size(), kUnknown);
    st.recv_send_start.assign(p.recvs.size(), kUnknown);
    st.recv_posted.assign(p.recvs.size(), kUnknown);
    if (m_record && !p.laned()) m_timings[s].reserve(p.events.size());
    if (p.laned()) {
      const size_t lanes = static_cast<size_t>(*std::max_element(p.lane.begin(), p.lane.end())) + 1;
      st.lane_now.assign(lanes, 0);
      st.lane_enter.assign(lanes, 0);
      st.lane_started.assign(lanes, 0);
      st.lane_started[0] = 1;
      if (m_record) m_lane_timings[s].resize(p.events.size());  // completed out of event order
    }
    if (!p.events.empty()) ++m_unfinished;
    st.queued = true;
    m_queue.push_back(static_cast<int32_t>(s));
  }
  if (scenario.resume) {
    if (!scenario.resume->coll_members.empty() &&
        scenario.resume->member_begin.size() != scenario.resume->member_instances.size() + 1)
      throw std::logic_error("replay: resuming from a snapshot whose collective members are not indexed");
    if (!m_converge) {
      // Every rank replays from its cut to its end.
      for (size_t s = 0; s < programs.size(); ++s) need(static_cast<int32_t>(s), INT64_MAX);
    } else if (scenario.zero_wait_rank >= 0 && scenario.zero_wait_rank < nranks) {
      if (const int32_t z = m_slot_of[static_cast<size_t>(scenario.zero_wait_rank)]; z >= 0)
        need(z, scenario.zero_wait_event);
    }
  }
}

int64_t Engine::cut_of(int32_t s) const {
  const Snapshot &snap = *m_sc.resume;
  const auto &mx = snap.exit_max[static_cast<size_t>(s)];
  if (!mx.empty()) return std::upper_bound(mx.begin(), mx.end(), m_sc.resume_at) - mx.begin();
  const TimingColumn &t = snap.timings()[static_cast<size_t>(s)];
  const auto events = std::views::iota(size_t{0}, t.size());
  return std::ranges::upper_bound(events, m_sc.resume_at, {}, [&t](size_t i) { return t.exit(i); }) - events.begin();
}

Engine::~Engine() {
  if (!m_recycled) return;
  constexpr size_t kSpare = 16;  // a domino search batch's engines (kernels/domino.cpp)
  auto &spare = spare_states();
  if (spare.size() >= kSpare || m_state.size() != m_prog.size()) return;
  for (const int32_t s : m_touched) m_state[static_cast<size_t>(s)] = RankState{};
  spare.push_back(std::move(m_state));
}

bool Engine::spare_states_fresh() {
  for (const auto &states : spare_states())
    for (const RankState &st : states) {
      RankState fresh;
      fresh.live = st.live;
      fresh.cursor = st.cursor;
      if (!(st == fresh)) return false;
    }
  return true;
}

std::vector<std::vector<Engine::RankState>> &Engine::spare_states() {
  thread_local std::vector<std::vector<RankState>> spare;
  return spare;
}

int64_t Engine::position(int32_t s) const {
  const int64_t c = m_state[static_cast<size_t>(s)].cursor;
  return c == kCutPending ? cut_of(s) : c;
}

void Engine::join(int32_t s) {
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
                     m_net.injection_gap(bytes_of(s, static_cast<int32_t>(first_send - 1)));
  st.snapshot_inject = st.next_inject;
  if (m_cuts) {
    const auto &cuts = (*m_cuts)[q];
    st.next_cut = static_cast<size_t>(std::lower_bound(cuts.begin(), cuts.end(), c) - cuts.begin());
  }
}

int64_t Engine::initial(int32_t s, int64_t k, Field f) const {
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
T &Engine::grow(int32_t s, Values<T> &w, int64_t k, Field f) {
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

void Engine::need(int32_t s, int64_t event) {
  RankState &st = touch(s);
  if (!st.live) st.cursor = position(s);
  if (st.cursor >= static_cast<int64_t>(m_prog[static_cast<size_t>(s)].events.size())) return;
  join(s);
  if (event <= st.demand) return;
  st.demand = event;
  wake(m_prog[static_cast<size_t>(s)].rank);
}

void Engine::pull(int32_t rank, bool send, int64_t index) {
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

// Whether the replay needs rank slot s to go on: up to its demand, or while it holds
// something off the snapshot.
bool Engine::needed(int32_t s) const {
  const RankState &st = m_state[static_cast<size_t>(s)];
  return !m_converge || st.cursor <= st.demand || m_rank_dirty[static_cast<size_t>(s)] || st.pending > 0;
}

void Engine::apply(const Pull &p) { pull(p.rank, p.send != 0, p.index); }

// A rank rests while the snapshot holds for it and nobody needs it further.
bool Engine::resting(int32_t s) const { return m_converge && !m_state[static_cast<size_t>(s)].ahead && !needed(s); }

Engine::CollState &Engine::coll_state(int64_t instance) {
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

bool Engine::take_assumed(int32_t s, int64_t instance) {
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
void Engine::check_divergence(CollState &c) {
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

namespace {
int32_t slot_in(const std::vector<int32_t> &slot_of, int32_t rank) {
  return rank >= 0 && static_cast<size_t>(rank) < slot_of.size() ? slot_of[static_cast<size_t>(rank)] : -1;
}
}  // namespace

// What a snapshot holds beyond the replay's values (its timings and ends, each message's
// send start and posts, request slots' items, collectives' arrivals): what follows from
// them and the programs. Shared by Engine::take_snapshot and snapshot_from_timings.
// Each collective call of owned rank s: its instance's latest and root arrival, from what
// the replay gathered per instance (`by_instance`: a value with max_enter and root_enter).
template <class ByInstance>
static void take_collective_arrivals(Snapshot &snap, size_t s, const RankProgram &p, const ByInstance &by_instance) {
  snap.coll_max_enter[s].assign(p.colls.size(), kUnknown);
  snap.coll_root_enter[s].assign(p.colls.size(), kUnknown);
  for (size_t k = 0; k < p.colls.size(); ++k)
    if (const auto c = by_instance.find(p.colls[k].instance); c != by_instance.end()) {
      snap.coll_max_enter[s][k] = c->second.max_enter;
      snap.coll_root_enter[s][k] = c->second.root_enter;
    }
}

static void complete_snapshot(Snapshot &snap, const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                              std::array<PostingEvents::Borrowed, 3> lent_tables) {
  const size_t n = prog.size();
  const auto &timings = snap.timings();
  for (const int64_t t : snap.end) snap.run_end = std::max(snap.run_end, t);
  snap.exit_max.resize(n);
  // The posting events: borrowed when lent (each checked against the programs below).
  const bool lent = !lent_tables[0].empty() || n == 0;
  if (lent && (lent_tables[0].size() != n || lent_tables[1].size() != n || lent_tables[2].size() != n))
    throw std::logic_error("replay: posting events lent for another number of ranks than the engine's");
  if (lent) {
    snap.send_event.borrow(std::move(lent_tables[0]));
    snap.recv_event.borrow(std::move(lent_tables[1]));
    snap.coll_event.borrow(std::move(lent_tables[2]));
  } else {
    for (auto *v : {&snap.send_event, &snap.recv_event, &snap.coll_event}) v->own().resize(n);
  }
  const auto posted_at = [&](PostingEvents &table, size_t s, size_t index, int32_t event) {
    if (!lent) {
      table.own()[s][index] = event;
    } else if (table[s][index] != event) {
      throw std::logic_error("replay: a lent posting event differs from the program's (rank " +
                             std::to_string(prog[s].rank) + ")");
    }
  };
  for (auto *v : {&snap.slot_event, &snap.recv_consumer, &snap.send_consumer, &snap.coll_consumer}) v->resize(n);
  snap.slot_ref.resize(n);
  snap.open_lag.resize(n);
  std::vector<int64_t> before;  // open lags: per event, how many were posted before it
  for (size_t s = 0; s < n; ++s) {
    const RankProgram &p = prog[s];
    const TimingColumn &t = timings[s];
    bool falls = false;
    for (size_t i = 1; i < t.size() && !falls; ++i) falls = t.exit(i) < t.exit(i - 1);
    if (falls) {
      auto &mx = snap.exit_max[s];
      int64_t top = std::numeric_limits<int64_t>::min();
      mx.reserve(t.size());
      for (size_t i = 0; i < t.size(); ++i) mx.push_back(top = std::max(top, t.exit(i)));
    }
    if (!lent) {
      snap.send_event.own()[s].assign(p.sends.size(), Snapshot::kNever);
      snap.recv_event.own()[s].assign(p.recvs.size(), Snapshot::kNever);
      snap.coll_event.own()[s].assign(p.colls.size(), Snapshot::kNever);
    } else if (snap.send_event[s].size() != p.sends.size() || snap.recv_event[s].size() != p.recvs.size() ||
               snap.coll_event[s].size() != p.colls.size()) {
      throw std::logic_error("replay: lent posting events of another size than the program's (rank " +
                             std::to_string(p.rank) + ")");
    }
    snap.slot_event[s].assign(static_cast<size_t>(p.request_slots), Snapshot::kNever);
    snap.recv_consumer[s].assign(p.recvs.size(), Snapshot::kNever);
    snap.send_consumer[s].assign(p.sends.size(), Snapshot::kNever);
    snap.coll_consumer[s].assign(p.colls.size(), Snapshot::kNever);
    std::vector<int32_t> slot_used(static_cast<size_t>(p.request_slots), Snapshot::kNever);  // the call completing it
    for (int32_t i = 0; i < static_cast<int32_t>(p.events.size()); ++i) {
      const Event &e = p.events[static_cast<size_t>(i)];
      for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
        const Item &it = p.items[static_cast<size_t>(k)];
        if (it.type == ItemType::Send || it.type == ItemType::PostSend)
          posted_at(snap.send_event, s, static_cast<size_t>(it.index), i);
        if (it.type == ItemType::Recv || it.type == ItemType::PostRecv)
          posted_at(snap.recv_event, s, static_cast<size_t>(it.index), i);
        if (it.type == ItemType::Collective || it.type == ItemType::PostCollective)
          posted_at(snap.coll_event, s, static_cast<size_t>(it.index), i);
        if (it.slot >= 0) snap.slot_event[s][static_cast<size_t>(it.slot)] = i;
        if (it.type == ItemType::Complete && it.index >= 0 && it.index < p.request_slots)
          slot_used[static_cast<size_t>(it.index)] = i;
        const Item *used = &it;
        if (it.type == ItemType::Complete) {
          const int32_t a = snap.slot_ref[s][static_cast<size_t>(it.index)];
          used = a >= 0 ? &p.items[static_cast<size_t>(a)] : nullptr;
        }
        if (!used) continue;
        if (used->type == ItemType::Recv || (used->type == ItemType::PostRecv && it.type == ItemType::Complete))
          snap.recv_consumer[s][static_cast<size_t>(used->index)] = i;
        if (used->type == ItemType::Send || (used->type == ItemType::PostSend && it.type == ItemType::Complete))
          snap.send_consumer[s][static_cast<size_t>(used->index)] = i;
        if (used->type == ItemType::Collective ||
            (used->type == ItemType::PostCollective && it.type == ItemType::Complete))
          snap.coll_consumer[s][static_cast<size_t>(used->index)] = i;
      }
    }
    for (size_t k = 0; k < p.colls.size(); ++k) {
      Snapshot::Member m{p.colls[k].instance, static_cast<int32_t>(s), static_cast<int32_t>(k)};
      m.enter = snap.coll_enter(s, k);
      if (const int32_t e = snap.coll_event[s][k]; e != Snapshot::kNever)
        m.posted_by = snap.exit_max_at(s, static_cast<size_t>(e));
      if (const int32_t e = snap.coll_consumer[s][k]; e != Snapshot::kNever) {
        m.used_by = snap.exit_max_at(s, static_cast<size_t>(e));
        m.has_user = true;
      }
      m.root = p.colls[k].root == p.rank;
      snap.coll_members.push_back(m);
    }
    // Posting events are in index order: one sweep gives, per event, how many were posted
    // before it (a binary search per use was most of the snapshot's time).
    auto lag = [&before, n_events = p.events.size()](const std::vector<int32_t> &posted,
                                                     const std::vector<int32_t> &used) {
      const bool sorted = std::is_sorted(posted.begin(), posted.end());
      if (sorted) {
        before.resize(n_events + 1);
        size_t j = 0;
        for (size_t e = 0; e <= n_events; ++e) {
          while (j < posted.size() && static_cast<size_t>(posted[j]) < e) ++j;
          before[e] = static_cast<int64_t>(j);
        }
      }
      int64_t most = 0;
      for (size_t k = 0; k < used.size(); ++k) {
        if (used[k] == Snapshot::kNever) continue;
        const int64_t later = sorted && static_cast<size_t>(used[k]) <= n_events
                                  ? before[static_cast<size_t>(used[k])]
                                  : std::lower_bound(posted.begin(), posted.end(), used[k]) - posted.begin();
        most = std::max(most, later - static_cast<int64_t>(k));
      }
      return most;
    };
    snap.open_lag[s] = {lag(snap.slot_event[s], slot_used), lag(snap.send_event[s], snap.send_consumer[s]),
                        lag(snap.recv_event[s], snap.recv_consumer[s]), lag(snap.coll_event[s], snap.coll_consumer[s])};
  }
  snap.index_members();
  // The other ends' values: read from the partners for a rank whose partners are all this
  // engine's (when each receive's send start is its sender's, as every delivery makes it);
  // held otherwise, for the partners this engine owns (a distributed snapshot gets the
  // others' from their owners: replay_model.cpp).
  snap.send_partner_exit_max.resize(n);
  snap.recv_partner_exit_max.resize(n);
  const auto owned = [&](int32_t rank) { return rank < 0 || slot_in(slot_of, rank) >= 0; };
  for (size_t s = 0; s < n; ++s) {
    const RankProgram &p = prog[s];
    bool partners_here =
        std::all_of(p.sends.begin(), p.sends.end(), [&](const SendMessage &m) { return owned(m.dst); }) &&
        std::all_of(p.recvs.begin(), p.recvs.end(), [&](const RecvMessage &m) { return owned(m.src); });
    for (size_t k = 0; k < p.recvs.size() && partners_here; ++k)
      partners_here = snap.recv_send_start[s][k] == snap.senders_start(prog, slot_of, s, k);
    if (partners_here)
      std::vector<int64_t>().swap(snap.recv_send_start[s]);
    else
      snap.hold_partners_of(prog, slot_of, s);
  }
}

Snapshot Engine::take_snapshot() {
  Snapshot snap;
  const size_t n = m_prog.size();
  if (!m_record) throw std::logic_error("replay: a snapshot needs the replay's recorded timings");
  snap.own_timings = take_timings();
  snap.end = m_end;
  for (auto *v :
       {&snap.send_start, &snap.recv_post, &snap.recv_send_start, &snap.coll_max_enter, &snap.coll_root_enter})
    v->resize(n);
  snap.slot_ref.resize(n);
  for (size_t s = 0; s < n; ++s) {
    const RankProgram &p = m_prog[s];
    RankState &st = touch(static_cast<int32_t>(s));
    snap.send_start[s] = std::move(st.send_start.v);
    snap.recv_post[s] = std::move(st.recv_post.v);
    snap.recv_send_start[s] = std::move(st.recv_send_start.v);
    // The posting times are the posting events' enters (Snapshot::recv_posted, coll_enter).
    std::vector<int64_t>().swap(st.recv_posted.v);
    std::vector<int64_t>().swap(st.coll_enter.v);
    snap.slot_ref[s] = std::move(st.slot_ref.v);
    take_collective_arrivals(snap, s, p, m_coll);
  }
  complete_snapshot(snap, m_prog, m_slot_of, std::move(m_lent));
  return snap;
}

int64_t Snapshot::posted_exit_max(int32_t slot, const PostingEvents &event_of, int32_t index) const {
  if (slot < 0 || index < 0) return INT64_MAX;
  const int32_t e = event_of[static_cast<size_t>(slot)][static_cast<size_t>(index)];
  return e == kNever ? INT64_MAX : exit_max_at(static_cast<size_t>(slot), static_cast<size_t>(e));
}

int64_t Snapshot::send_partner_exit_max_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                           size_t slot, size_t k) const {
  if (!send_partner_exit_max[slot].empty()) return send_partner_exit_max[slot][k];
  const SendMessage &m = prog[slot].sends[k];
  return posted_exit_max(slot_in(slot_of, m.dst), recv_event, m.recv_index);
}

int64_t Snapshot::recv_partner_exit_max_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                           size_t slot, size_t k) const {
  if (!recv_partner_exit_max[slot].empty()) return recv_partner_exit_max[slot][k];
  const RecvMessage &m = prog[slot].recvs[k];
  return posted_exit_max(slot_in(slot_of, m.src), send_event, m.send_index);
}

int64_t Snapshot::recv_send_start_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                     size_t slot, size_t k) const {
  return recv_send_start[slot].empty() ? senders_start(prog, slot_of, slot, k) : recv_send_start[slot][k];
}

int64_t Snapshot::senders_start(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of, size_t slot,
                                size_t k) const {
  const RecvMessage &m = prog[slot].recvs[k];
  const int32_t q = slot_in(slot_of, m.src);
  return q < 0 || m.send_index < 0 ? kUnknown : send_start[static_cast<size_t>(q)][static_cast<size_t>(m.send_index)];
}

void Snapshot::hold_partners_of(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                size_t slot) {
  // Read first (from the partners where the rank holds nothing yet), then held.
  const RankProgram &p = prog[slot];
  std::vector<int64_t> sends(p.sends.size()), recvs(p.recvs.size()), starts(p.recvs.size());
  for (size_t k = 0; k < sends.size(); ++k) sends[k] = send_partner_exit_max_at(prog, slot_of, slot, k);
  for (size_t k = 0; k < recvs.size(); ++k) {
    recvs[k] = recv_partner_exit_max_at(prog, slot_of, slot, k);
    starts[k] = recv_send_start_at(prog, slot_of, slot, k);
  }
  send_partner_exit_max[slot] = std::move(sends);
  recv_partner_exit_max[slot] = std::move(recvs);
  recv_send_start[slot] = std::move(starts);
}

void Snapshot::hold_partner_values(const std::vector<RankProgram> &prog) {
  int32_t nranks = 0;
  for (const auto &p : prog) nranks = std::max(nranks, p.rank + 1);
  std::vector<int32_t> slot_of(static_cast<size_t>(nranks), -1);
  for (size_t s = 0; s < prog.size(); ++s) slot_of[static_cast<size_t>(prog[s].rank)] = static_cast<int32_t>(s);
  for (size_t s = 0; s < prog.size(); ++s) {
    if (send_partner_exit_max[s].empty() && recv_partner_exit_max[s].empty() && recv_send_start[s].empty() &&
        !(prog[s].sends.empty() && prog[s].recvs.empty()))
      hold_partners_of(prog, slot_of, s);
  }
}

void Snapshot::index_members() {
  std::sort(coll_members.begin(), coll_members.end());
  member_instances.clear();
  member_begin.clear();
  for (size_t k = 0; k < coll_members.size(); ++k)
    if (k == 0 || coll_members[k].instance != coll_members[k - 1].instance) {
      member_instances.push_back(coll_members[k].instance);
      member_begin.push_back(static_cast<int64_t>(k));
    }
  member_begin.push_back(static_cast<int64_t>(coll_members.size()));
}

int64_t Engine::bytes_of(int32_t s, int32_t send_index) const {
  const auto &over = m_sc.send_bytes;
  if (!over.empty() && !over[static_cast<size_t>(s)].empty())
    return over[static_cast<size_t>(s)][static_cast<size_t>(send_index)];
  return m_prog[static_cast<size_t>(s)].sends[static_cast<size_t>(send_index)].bytes;
}

void Engine::wake(int32_t rank) {
  const int32_t s = m_slot_of[static_cast<size_t>(rank)];
  RankState &st = touch(s);
  if (!st.queued) {
    st.queued = true;
    m_queue.push_back(s);
  }
}

// A value rank slot s has not used yet differs from the snapshot's.
void Engine::differs(int32_t s, bool send, int32_t index, int64_t lead) {
  RankState &st = touch(s);
  st.pending_lead = std::max(st.pending_lead, lead);
  auto &flag = at(s, send ? st.send_differs : st.recv_differs, index, Field::Flag);
  if (flag) return;
  flag = 1;
  ++m_pending;
  ++touch(s).pending;
}

void Engine::deliver_send(int32_t dst, int32_t recv_index, int64_t t, int64_t bytes) {
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

void Engine::deliver_recv(int32_t src, int32_t send_index, int64_t t) {
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

void Engine::arrive(int64_t instance, int32_t count, int64_t max_enter, int64_t root_enter, int32_t expected) {
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

void Engine::apply(const SendPost &p) { deliver_send(p.dst, p.recv_index, p.t, p.bytes); }
void Engine::apply(const RecvPost &p) { deliver_recv(p.src, p.send_index, p.t); }
void Engine::apply(const Arrival &a) { arrive(a.instance, a.count, a.max_enter, a.root_enter, 0); }

Engine::Outbox Engine::take_outbox() { return hand_over(m_out, m_out_arrivals); }

void Engine::post_items(int32_t s, const Event &e, int64_t enter) {
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
        st.next_inject = start + m_net.injection_gap(b);
        at(s, st.send_start, it.index, Field::SendStart) = start;
        if (m_converge) {
          // A later call completes it: until then a start off the snapshot is unused.
          const int64_t was = m_sc.resume->send_start[static_cast<size_t>(s)][static_cast<size_t>(it.index)];
          st.snapshot_inject = was + m_net.injection_gap(b);
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

Engine::Done Engine::send_done(int32_t s, int32_t i, int64_t start, bool skip_wait) {
  RankState &st = touch(s);
  const int64_t b = bytes_of(s, i);
  const bool matched = m_prog[static_cast<size_t>(s)].sends[static_cast<size_t>(i)].dst >= 0;
  const int64_t nowait = send_completion(m_net, b, matched, start, kUnknown, true);
  if (skip_wait || !send_waits(m_net, b, matched)) return {nowait, nowait};
  const int64_t posted = at(s, st.recv_post, i, Field::RecvPost);
  if (posted == kUnknown) return {kUnknown, 0};
  return {send_completion(m_net, b, matched, start, posted, false), nowait};
}

Engine::Done Engine::recv_done(int32_t s, int32_t i, int64_t post, bool skip_wait) {
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
  const int64_t nowait = recv_completion(m_net, b, post, sent, true);
  return {skip_wait ? nowait : recv_completion(m_net, b, post, sent, false), nowait};
}

Engine::Done Engine::coll_done(int32_t s, const Collective &c, int64_t enter, bool skip_wait) {
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

Engine::Done Engine::item_done(int32_t s, const Item &it, int64_t enter, bool skip_wait) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  const auto both = [](int64_t t) { return Done{t, t}; };
  switch (it.type) {
    case ItemType::Send:
      return send_done(s, it.index, at(s, st.send_start, it.index, Field::SendStart), skip_wait);
    case ItemType::PostSend:
      return both(at(s, st.send_start, it.index, Field::SendStart) + m_net.send_overhead(0));
    case ItemType::Recv:
      return recv_done(s, it.index, enter, skip_wait);
    case ItemType::PostRecv:
      return both(enter + m_net.recv_overhead(0));
    case ItemType::Collective:
      return coll_done(s, p.colls[static_cast<size_t>(it.index)], enter, skip_wait);
    case ItemType::PostCollective:
      return both(enter + m_net.send_overhead(0));
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

uint8_t Engine::event_flags(int32_t s, int64_t i) const {
  uint8_t flags = m_sc.flags(static_cast<size_t>(s), static_cast<size_t>(i));
  if (m_prog[static_cast<size_t>(s)].rank == m_sc.zero_wait_rank && i == m_sc.zero_wait_event) flags |= kZeroWait;
  return flags;
}

bool Engine::complete_event(int32_t s, const Event &e, int64_t enter, uint8_t flags, int64_t &exit,
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
bool Engine::try_event(int32_t s) {
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

// Rank slot s left its next clean cut at `exit`. The replay is max-plus with no absolute
// time in it: once every rank left the same cut exactly delta ahead of the snapshot, and
// nothing the rest reads was posted before it (replay_cuts.h), the rest is the snapshot's
// less delta. Serially that ends the replay; split, each owner reports its run of such
// cuts and all stop together (round_end).
void Engine::left_cut(int32_t s, int64_t event, int64_t exit) {
  RankState &st = touch(s);
  const int64_t k = static_cast<int64_t>(st.next_cut++);
  const int64_t base_exit = m_sc.resume->timings()[static_cast<size_t>(s)].exit(static_cast<size_t>(event));
  const int64_t lead = base_exit - exit;
  // The injection horizon matters after the cut only where it lies past the exit.
  const bool inject_even =
      (st.next_inject <= exit && st.snapshot_inject <= base_exit) || st.snapshot_inject - st.next_inject == lead;
  const bool even = inject_even && !st.release &&
                    (m_prog[static_cast<size_t>(s)].rank != m_sc.zero_wait_rank || event > m_sc.zero_wait_event);
  CutTally &t = m_cut_tally[k];
  if (t.count++ == 0) {
    t.lead = lead;
    t.even = even;
  } else {
    t.even = t.even && even && lead == t.lead;
  }
  if (t.count < static_cast<int64_t>(m_prog.size())) return;
  const CutTally left = t;
  m_cut_tally.erase(k);
  if (!left.even) {
    m_cut_first = std::numeric_limits<int64_t>::max();
    m_cut_last = std::numeric_limits<int64_t>::min();
    return;
  }
  if (m_cut_first <= m_cut_last && m_cut_lead == left.lead) {
    m_cut_last = k;
  } else {
    m_cut_first = m_cut_last = k;
    m_cut_lead = left.lead;
  }
  if (!m_distributed && m_assumed == 0 && zero_wait_done()) stop_shifted(left.lead);
}

// A finished rank's end is known: nothing it holds can move the run any more.
void Engine::rank_finished(int32_t s) {
  RankState &st = touch(s);
  m_dirty -= m_rank_dirty[static_cast<size_t>(s)];
  m_rank_dirty[static_cast<size_t>(s)] = 0;
  m_pending -= st.pending;
  st.pending = 0;
  st.pending_lead = 0;
  std::fill(st.recv_differs.v.begin(), st.recv_differs.v.end(), 0);
  std::fill(st.send_differs.v.begin(), st.send_differs.v.end(), 0);
}

bool Engine::consumed(int32_t rank, const std::vector<std::vector<int32_t>> &consumer, int32_t index) const {
  const int32_t q = m_slot_of[static_cast<size_t>(rank)];
  return q >= 0 && consumer[static_cast<size_t>(q)][static_cast<size_t>(index)] < position(q);
}

void Engine::used_recv(int32_t s, int32_t i) {
  auto &flag = at(s, touch(s).recv_differs, i, Field::Flag);
  if (flag) {
    --m_pending;
    if (RankState &st = touch(s); --st.pending == 0) st.pending_lead = 0;
  }
  flag = 0;
}

void Engine::used_send(int32_t s, int32_t i) {
  auto &flag = at(s, touch(s).send_differs, i, Field::Flag);
  if (flag) {
    --m_pending;
    if (RankState &st = touch(s); --st.pending == 0) st.pending_lead = 0;
  }
  flag = 0;
}

void Engine::used_coll(int32_t s, int32_t c) {
  const Collective &cl = m_prog[static_cast<size_t>(s)].colls[static_cast<size_t>(c)];
  CollState &cs = m_coll[cl.instance];
  if (++cs.used == cs.local_users && cs.divergent) --m_pending;
}

bool Engine::zero_wait_done() const {
  if (m_sc.zero_wait_rank < 0) return true;
  const int32_t q = m_slot_of[static_cast<size_t>(m_sc.zero_wait_rank)];
  return q < 0 || position(q) > m_sc.zero_wait_event;
}

int64_t Engine::converged_makespan() const {
  int64_t t = 0;
  for (size_t s = 0; s < m_prog.size(); ++s) {
    if (m_prog[s].events.empty()) continue;
    const bool done = m_state[s].cursor >= static_cast<int64_t>(m_prog[s].events.size());
    t = std::max(t, done ? m_end[s] : m_sc.resume->end[s]);
  }
  return t;
}

void Engine::list_lead(int64_t instance, CollState &c) {
  if (c.lead_listed) return;
  c.lead_listed = true;
  m_lead_colls.push_back(instance);
}

Engine::Frontier Engine::frontier() const {
  const Snapshot &snap = *m_sc.resume;
  Frontier f{0, std::numeric_limits<int64_t>::max()};
  if (!zero_wait_done()) f.horizon = m_sc.resume_at;
  for (const int32_t s : m_joined) {
    const size_t q = static_cast<size_t>(s);
    const RankState &st = m_state[q];
    const auto &base = snap.timings()[q];
    if (st.cursor >= static_cast<int64_t>(m_prog[q].events.size())) {
      f.lead = std::max(f.lead, snap.end[q] - m_end[q]);  // a finished rank's end
      continue;
    }
    const auto c = static_cast<size_t>(st.cursor);
    int64_t lead = std::max(st.snapshot_inject - st.next_inject, st.pending_lead);
    if (st.cursor > st.cut) lead = std::max(lead, base.exit(c - 1) - st.now);
    if (st.posted) lead = std::max(lead, base.enter(c) - st.enter);
    f.lead = std::max(f.lead, lead);
    // What it holds off the baseline reaches its next event and later ones.
    if (lead != 0 || m_rank_dirty[q] || st.pending > 0) f.horizon = std::min(f.horizon, base.enter(c));
  }
  // Collectives: an owned member's early arrival until every member is in and every owned
  // user used the outcome; a divergent outcome until every owned user used it. Either
  // reaches the members' exits, no earlier than the baseline's latest or root arrival.
  for (size_t k = 0; k < m_lead_colls.size();) {
    const auto found = m_coll.find(m_lead_colls[k]);
    const CollState &c = found->second;
    const bool complete = c.expected > 0 && c.count >= c.expected;
    if (complete && c.used >= c.local_users) {
      m_lead_colls[k] = m_lead_colls.back();
      m_lead_colls.pop_back();
      continue;
    }
    const size_t q = static_cast<size_t>(c.member_slot), i = static_cast<size_t>(c.member_index);
    f.lead = std::max(f.lead, c.arrival_lead);
    if (c.divergent) {
      if (c.max_enter != kUnknown && snap.coll_max_enter[q][i] != kUnknown)
        f.lead = std::max(f.lead, snap.coll_max_enter[q][i] - c.max_enter);
      if (c.root_enter != kUnknown && snap.coll_root_enter[q][i] != kUnknown)
        f.lead = std::max(f.lead, snap.coll_root_enter[q][i] - c.root_enter);
    }
    int64_t reach = std::numeric_limits<int64_t>::min();  // no baseline time known: from the start
    if (snap.coll_max_enter[q][i] != kUnknown) reach = snap.coll_max_enter[q][i];
    if (snap.coll_root_enter[q][i] != kUnknown)
      reach = reach == std::numeric_limits<int64_t>::min() ? snap.coll_root_enter[q][i]
                                                           : std::min(reach, snap.coll_root_enter[q][i]);
    f.horizon = std::min(f.horizon, reach);
    ++k;
  }
  return f;
}

bool Engine::lead_passes_threshold(int64_t lead) const {
  return m_converge && m_sc.abort_at != std::numeric_limits<int64_t>::max() && zero_wait_done() &&
         m_sc.resume->run_end - lead >= m_sc.abort_at;
}

Engine::RoundReport Engine::round_report(bool moved) const {
  const Frontier f = m_converge ? frontier() : Frontier{0, std::numeric_limits<int64_t>::max()};
  constexpr int64_t lowest = std::numeric_limits<int64_t>::min(), highest = std::numeric_limits<int64_t>::max();
  // An owner without clean cuts or ranks does not hold a stop back; one without a run does.
  const bool vacuous = !m_cuts || m_prog.empty();
  const bool run = m_cut_first <= m_cut_last;
  // Off the snapshot counts what the exchange just woke or left to send: it may yet differ.
  return {moved ? 1 : 0,
          m_unfinished,
          off_snapshot() + (idle() ? 0 : 1),
          zero_wait_done() ? 0 : 1,
          m_aborted || m_conflict ? 1 : 0,
          zero_wait_done() ? f.lead : 0,
          m_assumed,
          m_rest_bound_met ? 1 : 0,
          f.horizon,
          m_assumed == 0 ? std::numeric_limits<int64_t>::min() : m_assumed_latest,
          vacuous ? lowest : m_cut_first,
          vacuous ? highest : m_cut_last,
          vacuous || !run ? highest : m_cut_lead,
          vacuous || !run ? lowest : m_cut_lead};
}

static_assert(sizeof(Engine::RoundReport) ==
              (Engine::RoundReport::kSums + Engine::RoundReport::kMaxima) * sizeof(int64_t));

void Engine::RoundReport::encode(int64_t *sums, int64_t *maxima) const {
  const int64_t summed[kSums] = {moved,   unfinished, off_snapshot, changed_pending,
                                 stopped, lead,       assumed,      rest_bound_met};
  const int64_t maxed[kMaxima] = {~horizon, assumed_latest, cut_first, ~cut_last, ~shift_low, shift_high};
  std::copy(summed, summed + kSums, sums);
  std::copy(maxed, maxed + kMaxima, maxima);
}

Engine::RoundReport Engine::RoundReport::decode(const int64_t *s, const int64_t *m) {
  return {s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], ~m[0], m[1], m[2], ~m[3], ~m[4], m[5]};
}

void Engine::combine(RoundReport &into, const RoundReport &from) {
  int64_t sums[2][RoundReport::kSums], maxima[2][RoundReport::kMaxima];
  into.encode(sums[0], maxima[0]);
  from.encode(sums[1], maxima[1]);
  for (size_t k = 0; k < RoundReport::kSums; ++k) sums[0][k] += sums[1][k];
  for (size_t k = 0; k < RoundReport::kMaxima; ++k) maxima[0][k] = std::max(maxima[0][k], maxima[1][k]);
  into = RoundReport::decode(sums[0], maxima[0]);
}

Engine::RoundEnd Engine::round_end(const RoundReport &sum) const {
  const bool replayed = sum.changed_pending == 0 && sum.stopped == 0;
  if (m_converge && replayed && sum.off_snapshot == 0) return RoundEnd::Converged;
  // Every owner left cut_first equally ahead, with no unseen assumed arrival behind it.
  if (m_converge && replayed && sum.assumed == 0 && sum.cut_first <= sum.cut_last && sum.shift_low == sum.shift_high)
    return RoundEnd::Shifted;
  // Bounds prove the threshold out of reach only on values no unseen assumed arrival shaped.
  const bool settled = sum.assumed == 0 || sum.horizon > sum.assumed_latest;
  if (replayed && settled && (sum.rest_bound_met > 0 || (m_converge && lead_passes_threshold(sum.lead))))
    return RoundEnd::Abort;
  if (sum.stopped > 0 || sum.unfinished == 0) return RoundEnd::Finished;
  return sum.moved == 0 ? RoundEnd::Stuck : RoundEnd::Continue;
}

bool Engine::back_on_snapshot() const { return m_dirty == 0 && m_pending == 0 && zero_wait_done(); }

bool Engine::try_lane_step(int32_t s) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  const int32_t code = p.steps[static_cast<size_t>(st.step)];
  const size_t i = static_cast<size_t>(code >> 1);
  const Event &e = p.events[i];
  const size_t lane = p.lane[i];
  if (!(code & 1)) {               // post
    if (!st.lane_started[lane]) {  // a thread's first call: from lane 0's latest entry
      st.lane_now[lane] = st.lane_enter[0];
      st.lane_started[lane] = 1;
    }
    const int64_t gap = m_sc.gap(static_cast<size_t>(s), i, e.gap);
    st.lane_enter[lane] = st.lane_now[lane] + gap;
    post_items(s, e, st.lane_enter[lane]);
    ++st.step;
    return true;
  }
  const int64_t enter = st.lane_enter[lane];
  int64_t exit = enter, nowait_exit = enter;
  if (!complete_event(s, e, enter, event_flags(s, static_cast<int64_t>(i)), exit, nowait_exit)) return false;
  if (m_record) m_lane_timings[static_cast<size_t>(s)][i] = {enter, exit, nowait_exit};
  m_sink.see(s, static_cast<int64_t>(i), {enter, exit, nowait_exit});
  st.lane_now[lane] = exit;
  st.release = false;
  m_end[static_cast<size_t>(s)] = std::max(m_end[static_cast<size_t>(s)], exit);
  ++st.step;
  if (++st.cursor == static_cast<int64_t>(p.events.size())) {
    --m_unfinished;
    return false;
  }
  return true;
}

void Engine::settle_lanes() {
  for (size_t s = 0; s < m_lane_timings.size(); ++s) {
    if (m_lane_timings[s].empty()) continue;
    m_timings[s].reserve(m_lane_timings[s].size());
    for (const EventTiming &t : m_lane_timings[s]) m_timings[s].push_back(t);
    std::vector<EventTiming>().swap(m_lane_timings[s]);
  }
}

void Engine::step(int32_t s) {
  if (m_prog[static_cast<size_t>(s)].laned())
    while (try_lane_step(s)) {}
  else
    while (!m_shifted && try_event(s)) {}
}

bool Engine::advance() {
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

int64_t Engine::release_stuck() {
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

namespace {
std::vector<int32_t> slots_of(const std::vector<RankProgram> &programs, int32_t nranks) {
  std::vector<int32_t> slot_of(static_cast<size_t>(nranks), -1);
  for (size_t s = 0; s < programs.size(); ++s)
    if (programs[s].rank >= 0 && programs[s].rank < nranks)
      slot_of[static_cast<size_t>(programs[s].rank)] = static_cast<int32_t>(s);
  return slot_of;
}

int64_t sent_bytes(const Scenario &sc, const RankProgram &p, size_t s, size_t k) {
  return !sc.send_bytes.empty() && !sc.send_bytes[s].empty() ? sc.send_bytes[s][k] : p.sends[k].bytes;
}

bool is_send(ItemType t) { return t == ItemType::Send || t == ItemType::PostSend; }
bool is_recv(ItemType t) { return t == ItemType::Recv || t == ItemType::PostRecv; }
bool is_coll(ItemType t) { return t == ItemType::Collective || t == ItemType::PostCollective; }

// Per instance: its latest arrival and its root's, as Engine::arrive gathers them.
// A second root (members naming different roots: an erroneous program) makes the root's
// arrival the replay's order to resolve: `roots` counts them.
struct Arrivals {
  int64_t max_enter = kUnknown, root_enter = kUnknown;
  int32_t roots = 0;
  void add(int64_t max, int64_t root) {
    if (max != kUnknown) max_enter = std::max(max_enter, max);
    if (root != kUnknown) root_enter = root, ++roots;
  }
};

// The owned ranks' collective arrivals per instance (their members' enters).
std::unordered_map<int64_t, Arrivals> own_arrivals(const std::vector<RankProgram> &programs,
                                                   const std::vector<TimingColumn> &timings) {
  std::unordered_map<int64_t, Arrivals> by_instance;
  for (size_t s = 0; s < programs.size() && s < timings.size(); ++s) {
    const RankProgram &p = programs[s];
    for (size_t i = 0; i < p.events.size() && i < timings[s].size(); ++i) {
      const Event &e = p.events[i];
      for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
        const Item &it = p.items[static_cast<size_t>(k)];
        if (!is_coll(it.type)) continue;
        const Collective &c = p.colls[static_cast<size_t>(it.index)];
        const int64_t enter = timings[s].enter(i);
        by_instance[c.instance].add(enter, c.root == p.rank ? enter : kUnknown);
      }
    }
  }
  return by_instance;
}
}  // namespace

std::vector<std::vector<int64_t>> replayed_send_starts(const std::vector<RankProgram> &programs,
                                                       const std::vector<TimingColumn> &timings,
                                                       const Scenario &scenario) {
  const LogGPS net = scenario.network();
  std::vector<std::vector<int64_t>> start(programs.size());
  if (timings.size() != programs.size()) return {};  // not this replay's: snapshot_from_timings refuses
  for (size_t s = 0; s < programs.size(); ++s) {
    const RankProgram &p = programs[s];
    start[s].assign(p.sends.size(), kUnknown);
    int64_t next_inject = std::numeric_limits<int64_t>::min() / 4;  // as Engine's RankState
    for (size_t i = 0; i < p.events.size() && i < timings[s].size(); ++i) {
      const Event &e = p.events[i];
      for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
        const Item &it = p.items[static_cast<size_t>(k)];
        if (!is_send(it.type)) continue;
        const int64_t t = std::max(timings[s].enter(i), next_inject);
        next_inject = t + net.injection_gap(sent_bytes(scenario, p, s, static_cast<size_t>(it.index)));
        start[s][static_cast<size_t>(it.index)] = t;
      }
    }
  }
  return start;
}

Engine::Outbox delivered_elsewhere(const std::vector<RankProgram> &programs, const std::vector<TimingColumn> &timings,
                                   const std::vector<std::vector<int64_t>> &send_start, int32_t nranks,
                                   const Scenario &scenario) {
  const auto slot_of = slots_of(programs, nranks);
  Engine::Outbox out;
  for (size_t s = 0; s < programs.size() && s < timings.size() && s < send_start.size(); ++s) {
    const RankProgram &p = programs[s];
    for (size_t i = 0; i < p.events.size() && i < timings[s].size(); ++i) {
      const Event &e = p.events[i];
      for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
        const Item &it = p.items[static_cast<size_t>(k)];
        const auto index = static_cast<size_t>(it.index);
        if (is_send(it.type) && p.sends[index].dst >= 0 && slot_in(slot_of, p.sends[index].dst) < 0)
          out.sends.push_back(
              {p.sends[index].dst, p.sends[index].recv_index, send_start[s][index], sent_bytes(scenario, p, s, index)});
        if (is_recv(it.type) && p.recvs[index].src >= 0 && slot_in(slot_of, p.recvs[index].src) < 0)
          out.recvs.push_back({p.recvs[index].src, p.recvs[index].send_index, timings[s].enter(i)});
      }
    }
  }
  for (const auto &[instance, a] : own_arrivals(programs, timings))
    out.arrivals.push_back({instance, 1, 0, a.max_enter, a.root_enter});
  std::sort(out.arrivals.begin(), out.arrivals.end(),
            [](const Engine::Arrival &a, const Engine::Arrival &b) { return a.instance < b.instance; });
  return out;
}

std::optional<Snapshot> snapshot_from_timings(const std::vector<RankProgram> &programs,
                                              std::vector<TimingColumn> timings,
                                              std::vector<std::vector<int64_t>> send_start, int32_t nranks,
                                              const Engine::Outbox &from_elsewhere,
                                              std::array<PostingEvents::Borrowed, 3> lent) {
  const size_t n = programs.size();
  if (timings.size() != n || send_start.size() != n) return std::nullopt;
  for (size_t s = 0; s < n; ++s)
    if (programs[s].laned() || timings[s].size() != programs[s].events.size()) return std::nullopt;
  const auto slot_of = slots_of(programs, nranks);
  Snapshot snap;
  snap.own_timings = std::move(timings);
  snap.send_start = std::move(send_start);
  snap.end.assign(n, 0);
  for (auto *v : {&snap.recv_post, &snap.recv_send_start, &snap.coll_max_enter, &snap.coll_root_enter}) v->resize(n);
  snap.slot_ref.resize(n);
  for (size_t s = 0; s < n; ++s) {
    const RankProgram &p = programs[s];
    snap.recv_post[s].assign(p.sends.size(), kUnknown);  // per send: its receiver's post
    snap.recv_send_start[s].assign(p.recvs.size(), kUnknown);
    snap.slot_ref[s].assign(static_cast<size_t>(p.request_slots), -1);
    if (!p.events.empty()) snap.end[s] = snap.own_timings[s].back().exit;
  }
  // What each end delivered to the other, into `table` (per slot, per index) at `rank`'s
  // entry `index`: written once (a value written twice would be the replay's order to
  // resolve); false when the rank is not here or has no such entry.
  bool once = true;
  const auto deliver = [&](std::vector<std::vector<int64_t>> &table, int32_t rank, int64_t index, int64_t value) {
    const int32_t q = slot_in(slot_of, rank);
    if (q < 0 || index < 0 || static_cast<size_t>(index) >= table[static_cast<size_t>(q)].size()) return false;
    int64_t &to = table[static_cast<size_t>(q)][static_cast<size_t>(index)];
    once = once && to == kUnknown;
    to = value;
    return true;
  };
  const auto here = [&](int32_t rank) { return slot_in(slot_of, rank) >= 0; };
  for (size_t s = 0; s < n; ++s) {
    const RankProgram &p = programs[s];
    const TimingColumn &t = snap.own_timings[s];
    for (size_t i = 0; i < p.events.size(); ++i) {
      const Event &e = p.events[i];
      for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
        const Item &it = p.items[static_cast<size_t>(k)];
        const auto index = static_cast<size_t>(it.index);
        if (is_send(it.type) && here(p.sends[index].dst) &&
            !deliver(snap.recv_send_start, p.sends[index].dst, p.sends[index].recv_index, snap.send_start[s][index]))
          return std::nullopt;
        if (is_recv(it.type) && here(p.recvs[index].src) &&
            !deliver(snap.recv_post, p.recvs[index].src, p.recvs[index].send_index, t.enter(i)))
          return std::nullopt;
        if (it.slot >= 0) {
          if (static_cast<size_t>(it.slot) >= snap.slot_ref[s].size()) return std::nullopt;
          snap.slot_ref[s][static_cast<size_t>(it.slot)] = k;
        }
      }
    }
  }
  for (const auto &x : from_elsewhere.sends)
    if (!deliver(snap.recv_send_start, x.dst, x.recv_index, x.t)) return std::nullopt;
  for (const auto &x : from_elsewhere.recvs)
    if (!deliver(snap.recv_post, x.src, x.send_index, x.t)) return std::nullopt;
  if (!once) return std::nullopt;
  auto arrivals = own_arrivals(programs, snap.own_timings);
  for (const auto &a : from_elsewhere.arrivals) arrivals[a.instance].add(a.max_enter, a.root_enter);
  for (const auto &[instance, a] : arrivals)
    if (a.roots > 1) return std::nullopt;
  for (size_t s = 0; s < n; ++s) take_collective_arrivals(snap, s, programs[s], arrivals);
  complete_snapshot(snap, programs, slot_of, std::move(lent));
  return snap;
}

Snapshot replay_snapshot(const std::vector<RankProgram> &programs, const Scenario &scenario) {
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  Engine engine(programs, scenario, nranks, true);
  while (true) {
    engine.advance();
    if (engine.finished()) break;
    engine.release_stuck();
  }
  return engine.take_snapshot();
}

SerialResult replay_serial(const std::vector<RankProgram> &programs, const Scenario &scenario, bool record_timings) {
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  Engine engine(programs, scenario, nranks, record_timings);
  while (true) {
    engine.advance();
    if (engine.finished()) break;
    engine.release_stuck();
  }
  SerialResult r;
  r.end_times = engine.end_times();
  for (int64_t t : r.end_times) r.makespan = std::max(r.makespan, t);
  if (engine.converged()) r.makespan = engine.converged_makespan();
  if (engine.shifted()) r.makespan = engine.shifted_makespan();
  r.shifted = engine.shifted();
  if (engine.aborted()) r.makespan = std::numeric_limits<int64_t>::max();
  if (record_timings) r.timings = engine.take_timings();
  r.released = engine.released();
  if (engine.conflict()) {
    // A rested member's assumed arrival came otherwise: again, every member replayed.
    Scenario careful = scenario;
    careful.assume_resting_arrivals = false;
    r = replay_serial(programs, careful, record_timings);
    r.repeated = true;
  }
  return r;
}

}  // namespace perfsift::kernels::replay
