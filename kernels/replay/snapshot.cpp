// Snapshots: taken from an engine that recorded its timings, or rebuilt from the timings
// alone; what both hold beyond the replay's values follows from them and the programs.
#include "kernels/replay/snapshot.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels/replay/engine_core.h"

namespace perfsift::kernels::replay {

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

namespace {
// The posting events: borrowed when lent (each checked against the programs in
// index_calls), else the snapshot's own. Returns whether they were lent.
bool take_posting_tables(Snapshot &snap, size_t n, std::array<PostingEvents::Borrowed, 3> &lent_tables) {
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
  return lent;
}

// Rank s's largest exit up to each event, held only when its exits ever fall.
void hold_exit_max(Snapshot &snap, size_t s) {
  const TimingColumn &t = snap.timings()[s];
  bool falls = false;
  for (size_t i = 1; i < t.size() && !falls; ++i) falls = t.exit(i) < t.exit(i - 1);
  if (!falls) return;
  auto &mx = snap.exit_max[s];
  int64_t top = std::numeric_limits<int64_t>::min();
  mx.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) mx.push_back(top = std::max(top, t.exit(i)));
}

// Rank s's posting events (checked against lent ones), the events activating its request
// slots and completing them (`slot_used`), and the events using each message end and
// collective call.
void index_calls(Snapshot &snap, const RankProgram &p, size_t s, bool lent, std::vector<int32_t> &slot_used) {
  const auto posted_at = [&](PostingEvents &table, size_t index, int32_t event) {
    if (!lent) {
      table.own()[s][index] = event;
    } else if (table[s][index] != event) {
      throw std::logic_error("replay: a lent posting event differs from the program's (rank " + std::to_string(p.rank) +
                             ")");
    }
  };
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
  slot_used.assign(static_cast<size_t>(p.request_slots), Snapshot::kNever);
  for (int32_t i = 0; i < static_cast<int32_t>(p.events.size()); ++i) {
    const Event &e = p.events[static_cast<size_t>(i)];
    for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
      const Item &it = p.items[static_cast<size_t>(k)];
      if (it.type == ItemType::Send || it.type == ItemType::PostSend)
        posted_at(snap.send_event, static_cast<size_t>(it.index), i);
      if (it.type == ItemType::Recv || it.type == ItemType::PostRecv)
        posted_at(snap.recv_event, static_cast<size_t>(it.index), i);
      if (it.type == ItemType::Collective || it.type == ItemType::PostCollective)
        posted_at(snap.coll_event, static_cast<size_t>(it.index), i);
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
}

// Rank s's collective calls as members of their instances (Snapshot::coll_members).
void add_members(Snapshot &snap, const RankProgram &p, size_t s) {
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
}

// How many later ones were posted while one was still open (Snapshot::open_lag), from the
// events posting each (`posted`) and using each (`used`). Posting events are in index
// order: one sweep gives, per event, how many were posted before it (`before`, reused
// over calls; a binary search per use was most of the snapshot's time).
int64_t open_lag(const std::vector<int32_t> &posted, const std::vector<int32_t> &used, size_t n_events,
                 std::vector<int64_t> &before) {
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
}

// The other ends' values: read from the partners for a rank whose partners are all this
// engine's (when each receive's send start is its sender's, as every delivery makes it);
// held otherwise, for the partners this engine owns (a distributed snapshot gets the
// others' from their owners: replay_model.cpp).
void settle_partner_values(Snapshot &snap, const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of) {
  const size_t n = prog.size();
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
}  // namespace

static void complete_snapshot(Snapshot &snap, const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                              std::array<PostingEvents::Borrowed, 3> lent_tables) {
  const size_t n = prog.size();
  for (const int64_t t : snap.end) snap.run_end = std::max(snap.run_end, t);
  snap.exit_max.resize(n);
  const bool lent = take_posting_tables(snap, n, lent_tables);
  for (auto *v : {&snap.slot_event, &snap.recv_consumer, &snap.send_consumer, &snap.coll_consumer}) v->resize(n);
  snap.slot_ref.resize(n);
  snap.open_lag.resize(n);
  std::vector<int64_t> before;
  std::vector<int32_t> slot_used;  // per request slot: the call completing it
  for (size_t s = 0; s < n; ++s) {
    const RankProgram &p = prog[s];
    hold_exit_max(snap, s);
    index_calls(snap, p, s, lent, slot_used);
    add_members(snap, p, s);
    const size_t events = p.events.size();
    snap.open_lag[s] = {open_lag(snap.slot_event[s], slot_used, events, before),
                        open_lag(snap.send_event[s], snap.send_consumer[s], events, before),
                        open_lag(snap.recv_event[s], snap.recv_consumer[s], events, before),
                        open_lag(snap.coll_event[s], snap.coll_consumer[s], events, before)};
  }
  snap.index_members();
  settle_partner_values(snap, prog, slot_of);
}

Snapshot EngineCore::take_snapshot() {
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

// Per instance: its latest arrival and its root's, as the engine's arrive() gathers them.
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
        next_inject = t + net.between(p.rank, p.sends[static_cast<size_t>(it.index)].dst)
                              .injection_gap(sent_bytes(scenario, p, s, static_cast<size_t>(it.index)));
        start[s][static_cast<size_t>(it.index)] = t;
      }
    }
  }
  return start;
}

Outbox delivered_elsewhere(const std::vector<RankProgram> &programs, const std::vector<TimingColumn> &timings,
                           const std::vector<std::vector<int64_t>> &send_start, int32_t nranks,
                           const Scenario &scenario) {
  const auto slot_of = slots_of(programs, nranks);
  Outbox out;
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
            [](const Arrival &a, const Arrival &b) { return a.instance < b.instance; });
  return out;
}

std::optional<Snapshot> snapshot_from_timings(const std::vector<RankProgram> &programs,
                                              std::vector<TimingColumn> timings,
                                              std::vector<std::vector<int64_t>> send_start, int32_t nranks,
                                              const Outbox &from_elsewhere,
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

}  // namespace perfsift::kernels::replay
