// Clean cuts (see replay_cuts.h).
#include "kernels/replay_cuts.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace perfsift::kernels::replay {

namespace {
constexpr int32_t kNoEpoch = std::numeric_limits<int32_t>::max();
}  // namespace

CutPlan::CutPlan(const std::vector<RankProgram> &programs, const Snapshot &snap, int32_t nranks) {
  m_slot_of.assign(static_cast<size_t>(std::max(nranks, 0)), -1);
  m_candidates.resize(programs.size());
  for (size_t q = 0; q < programs.size(); ++q) {
    const RankProgram &p = programs[q];
    if (p.rank >= 0 && p.rank < nranks) m_slot_of[static_cast<size_t>(p.rank)] = static_cast<int32_t>(q);
    int64_t count = 0;
    for (size_t i = 0; i < p.events.size(); ++i) {
      const Event &e = p.events[i];
      if (e.items != 1) continue;
      const Item &it = p.items[static_cast<size_t>(e.first_item)];
      if (it.type != ItemType::Collective) continue;
      const Collective &c = p.colls[static_cast<size_t>(it.index)];
      if (c.members == nranks && c.flow != CollectiveFlow::Finalize) {
        m_candidates[q].push_back(static_cast<int64_t>(i));
        ++count;
      }
    }
    // A rank with several lanes has no single clock to shift.
    if (p.laned()) count = -1;
    m_count = m_count == kNone || m_count == count ? count : -1;
  }
  if (m_count <= 0) return;
  m_instance.assign(static_cast<size_t>(m_count), 0);
  for (size_t q = 0; q < programs.size(); ++q)
    for (size_t k = 0; k < m_instance.size(); ++k) {
      const Event &e = programs[q].events[static_cast<size_t>(m_candidates[q][k])];
      const int64_t instance =
          programs[q].colls[static_cast<size_t>(programs[q].items[static_cast<size_t>(e.first_item)].index)].instance;
      if (q == 0)
        m_instance[k] = instance;
      else if (m_instance[k] != instance)
        m_instance[k] = std::numeric_limits<int64_t>::min();
    }
  m_diff.assign(static_cast<size_t>(m_count) + 1, 0);
  // Each value's epochs: where it is posted and where it is used, on its own rank.
  std::vector<int32_t> epochs;  // the rank's, per event
  auto take_epochs = [&](size_t q) {
    epochs.resize(programs[q].events.size());
    size_t k = 0;
    for (size_t e = 0; e < epochs.size(); ++e) {
      while (k < m_candidates[q].size() && m_candidates[q][k] < static_cast<int64_t>(e)) ++k;
      epochs[e] = static_cast<int32_t>(k);
    }
  };
  auto span = [&](int32_t posted, int32_t used) {
    std::pair<int32_t, int32_t> s{kNoEpoch, std::numeric_limits<int32_t>::min()};
    for (const int32_t e : {posted, used})
      if (e != Snapshot::kNever && static_cast<size_t>(e) < epochs.size()) {
        const int32_t x = epochs[static_cast<size_t>(e)];
        s = {std::min(s.first, x), std::max(s.second, x)};
      }
    return s;
  };
  m_recv_span.resize(programs.size());
  for (size_t q = 0; q < programs.size(); ++q) {
    const RankProgram &p = programs[q];
    take_epochs(q);
    m_recv_span[q].resize(p.recvs.size());
    for (size_t i = 0; i < p.recvs.size(); ++i) {
      m_recv_span[q][i] = span(snap.recv_event[q][i], snap.recv_consumer[q][i]);
      mark(m_recv_span[q][i].first, m_recv_span[q][i].second);
    }
  }
  std::unordered_map<int64_t, std::pair<int32_t, int32_t>> instances;
  for (size_t q = 0; q < programs.size(); ++q) {
    const RankProgram &p = programs[q];
    take_epochs(q);
    for (size_t i = 0; i < p.sends.size(); ++i) {
      auto [lo, hi] = span(snap.send_event[q][i], snap.send_consumer[q][i]);
      mark(lo, hi);
      const SendMessage &m = p.sends[i];
      if (m.dst < 0 || m.dst >= nranks || m.recv_index < 0) continue;
      const int32_t r = m_slot_of[static_cast<size_t>(m.dst)];
      if (r < 0) {
        m_remote.push_back({m.dst, m.recv_index, lo, hi});
      } else {
        const auto &other = m_recv_span[static_cast<size_t>(r)][static_cast<size_t>(m.recv_index)];
        mark(std::min(lo, other.first), std::max(hi, other.second));
      }
    }
    for (size_t i = 0; i < p.colls.size(); ++i) {
      const auto s = span(snap.coll_event[q][i], snap.coll_consumer[q][i]);
      mark(s.first, s.second);
      auto [at, fresh] = instances.try_emplace(p.colls[i].instance, s);
      if (!fresh) at->second = {std::min(at->second.first, s.first), std::max(at->second.second, s.second)};
    }
  }
  for (const auto &[instance, s] : instances) m_spans.push_back({instance, s.first, s.second});
  std::sort(m_spans.begin(), m_spans.end(), [](const Span &a, const Span &b) { return a.instance < b.instance; });
}

// Something posted in epoch lo and used in epoch hi crosses cuts lo .. hi - 1.
void CutPlan::mark(int32_t lo, int32_t hi) {
  if (lo >= hi || m_diff.empty()) return;
  ++m_diff[static_cast<size_t>(lo)];
  --m_diff[static_cast<size_t>(std::min<int64_t>(hi, m_count))];
}

void CutPlan::add_remote(const End &e) {
  if (e.rank < 0 || static_cast<size_t>(e.rank) >= m_slot_of.size()) return;
  const int32_t r = m_slot_of[static_cast<size_t>(e.rank)];
  if (r < 0 || e.index < 0 || static_cast<size_t>(e.index) >= m_recv_span[static_cast<size_t>(r)].size()) return;
  const auto &own = m_recv_span[static_cast<size_t>(r)][static_cast<size_t>(e.index)];
  mark(std::min(e.lo, own.first), std::max(e.hi, own.second));
}

void CutPlan::merge_spans(std::vector<Span> spans) {
  std::stable_sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) { return a.instance < b.instance; });
  for (size_t k = 0; k < spans.size();) {
    int32_t lo = spans[k].lo, hi = spans[k].hi;
    size_t j = k + 1;
    for (; j < spans.size() && spans[j].instance == spans[k].instance; ++j) {
      lo = std::min(lo, spans[j].lo);
      hi = std::max(hi, spans[j].hi);
    }
    mark(lo, hi);
    k = j;
  }
}

std::vector<uint8_t> CutPlan::crossed() const {
  std::vector<uint8_t> out(m_count > 0 ? static_cast<size_t>(m_count) : 0, 0);
  int32_t open = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    open += m_diff[k];
    out[k] = open > 0 || m_instance[k] == std::numeric_limits<int64_t>::min();
  }
  return out;
}

std::vector<std::vector<int64_t>> CutPlan::clean(const std::vector<uint8_t> &crossed) const {
  std::vector<std::vector<int64_t>> out(m_candidates.size());
  if (m_count <= 0 || crossed.size() != static_cast<size_t>(m_count)) return out;
  for (size_t q = 0; q < out.size(); ++q)
    for (size_t k = 0; k < crossed.size(); ++k)
      if (!crossed[k]) out[q].push_back(m_candidates[q][k]);
  return out;
}

std::vector<std::vector<int64_t>> clean_cuts(const std::vector<RankProgram> &programs, const Snapshot &snap) {
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  if (static_cast<size_t>(nranks) != programs.size()) return std::vector<std::vector<int64_t>>(programs.size());
  CutPlan plan(programs, snap, nranks);
  plan.merge_spans(plan.spans());
  return plan.clean(plan.crossed());
}

}  // namespace perfsift::kernels::replay
