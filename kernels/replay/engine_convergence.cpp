// Resumed replays that stop once back on the snapshot (Scenario::stop_when_converged):
// what is still off it, how far ahead it can be (frontier), and clean cuts left equally
// ahead (Scenario::cuts).
#include <algorithm>
#include <limits>

#include "kernels/replay/engine_core.h"

namespace perfsift::kernels::replay {

// Rank slot s left its next clean cut at `exit`. The replay is max-plus with no absolute
// time in it: once every rank left the same cut exactly delta ahead of the snapshot, and
// nothing the rest reads was posted before it (replay_cuts.h), the rest is the snapshot's
// less delta. Serially that ends the replay; split, each owner reports its run of such
// cuts and all stop together (round_end).
void EngineCore::left_cut(int32_t s, int64_t event, int64_t exit) {
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

bool EngineCore::zero_wait_done() const {
  if (m_sc.zero_wait_rank < 0) return true;
  const int32_t q = m_slot_of[static_cast<size_t>(m_sc.zero_wait_rank)];
  return q < 0 || position(q) > m_sc.zero_wait_event;
}

int64_t EngineCore::converged_makespan() const {
  int64_t t = 0;
  for (size_t s = 0; s < m_prog.size(); ++s) {
    if (m_prog[s].events.empty()) continue;
    const bool done = m_state[s].cursor >= static_cast<int64_t>(m_prog[s].events.size());
    t = std::max(t, done ? m_end[s] : m_sc.resume->end[s]);
  }
  return t;
}

void EngineCore::list_lead(int64_t instance, CollState &c) {
  if (c.lead_listed) return;
  c.lead_listed = true;
  m_lead_colls.push_back(instance);
}

EngineCore::Frontier EngineCore::frontier() const {
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

bool EngineCore::lead_passes_threshold(int64_t lead) const {
  return m_converge && m_sc.abort_at != std::numeric_limits<int64_t>::max() && zero_wait_done() &&
         m_sc.resume->run_end - lead >= m_sc.abort_at;
}

bool EngineCore::back_on_snapshot() const { return m_dirty == 0 && m_pending == 0 && zero_wait_done(); }

}  // namespace perfsift::kernels::replay
