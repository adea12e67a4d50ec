// Hercule's model-based diagnosis, the pure part (see hercule.h).
#include "kernels/hercule.h"

#include <algorithm>
#include <map>
#include <set>

namespace perfsift::kernels::hercule {

double expected_strong_scaling(double reference, int64_t ranks, int64_t reference_ranks) {
  return reference_ranks > 0 ? reference * static_cast<double>(ranks) / static_cast<double>(reference_ranks) : 0;
}

double difference_percent(double x, double reference) { return reference != 0 ? (x - reference) / reference * 100 : 0; }

int64_t pipeline_depth(int64_t px, int64_t py) { return px + py - 1; }

MasterWorkerScore score_master_worker(const std::vector<PairCount> &pairs, int32_t nranks) {
  MasterWorkerScore s;
  if (nranks < 3) return s;  // one worker is a pair, not a pattern
  std::vector<std::set<int32_t>> partners(static_cast<size_t>(nranks));
  int64_t total = 0;
  for (const auto &p : pairs) {
    if (p.src == p.dst || p.src < 0 || p.dst < 0 || p.src >= nranks || p.dst >= nranks) continue;
    partners[static_cast<size_t>(p.src)].insert(p.dst);
    partners[static_cast<size_t>(p.dst)].insert(p.src);
    total += p.messages;
  }
  if (total == 0) return s;
  int32_t m = 0;
  for (int32_t r = 1; r < nranks; ++r)
    if (partners[static_cast<size_t>(r)].size() > partners[static_cast<size_t>(m)].size()) m = r;
  int64_t touching = 0, to_master = 0, from_master = 0;
  for (const auto &p : pairs) {
    if (p.src == p.dst) continue;
    if (p.src == m || p.dst == m) touching += p.messages;
    if (p.dst == m) to_master += p.messages;
    if (p.src == m) from_master += p.messages;
  }
  const double served = static_cast<double>(partners[static_cast<size_t>(m)].size()) / static_cast<double>(nranks - 1);
  // Request/reply: about as many messages each way.
  const double balance =
      std::min(to_master, from_master) / static_cast<double>(std::max<int64_t>(1, std::max(to_master, from_master)));
  s.master = m;
  s.touching = static_cast<double>(touching) / static_cast<double>(total);
  s.served = served;
  s.balance = balance;
  s.confidence = s.touching * served * balance;
  return s;
}

GridScore best_grid(const std::vector<PairCount> &pairs, int32_t nranks) {
  GridScore best;
  int64_t total = 0;
  for (const auto &p : pairs)
    if (p.src != p.dst) total += p.messages;
  if (total == 0) return best;
  for (int32_t px = 2; px <= nranks / 2; ++px) {
    if (nranks % px) continue;
    const int32_t py = nranks / px;
    int64_t near = 0;
    for (const auto &p : pairs) {
      const int32_t dx = std::abs(p.src % px - p.dst % px), dy = std::abs(p.src / px - p.dst / px);
      if (dx + dy == 1) near += p.messages;
    }
    const double share = static_cast<double>(near) / static_cast<double>(total);
    // Ties go to the squarer grid.
    if (share > best.neighbour_share + 1e-12 ||
        (share > best.neighbour_share - 1e-12 && std::abs(px - py) < std::abs(best.px - best.py))) {
      best.neighbour_share = share;
      best.px = px;
      best.py = py;
    }
  }
  return best;
}

int32_t split_level(int32_t a, int32_t b) {
  const uint32_t x = static_cast<uint32_t>(a ^ b);
  if (x == 0 || (x & (x - 1))) return -1;
  int32_t l = 0;
  while ((1u << l) != x) ++l;
  return l;
}

DivideConquerScore score_divide_and_conquer(const std::vector<PairCount> &pairs, int32_t nranks) {
  DivideConquerScore s;
  if (nranks < 4) return s;
  int32_t depth = 0;
  while ((int64_t{1} << (depth + 1)) <= nranks) ++depth;  // floor(log2 P)
  std::vector<std::set<int32_t>> levels(static_cast<size_t>(nranks));
  int64_t total = 0, pow2 = 0;
  for (const auto &p : pairs) {
    if (p.src == p.dst || p.src < 0 || p.dst < 0 || p.src >= nranks || p.dst >= nranks) continue;
    total += p.messages;
    const int32_t l = split_level(p.src, p.dst);
    if (l < 0) continue;
    pow2 += p.messages;
    levels[static_cast<size_t>(p.src)].insert(l);
    levels[static_cast<size_t>(p.dst)].insert(l);
  }
  if (total == 0) return s;
  double cover = 0;
  for (const auto &l : levels) cover += std::min(1.0, static_cast<double>(l.size()) / depth);
  s.pow2 = static_cast<double>(pow2) / static_cast<double>(total);
  s.levels = cover / nranks;
  s.confidence = s.pow2 * s.levels;
  return s;
}

std::pair<int64_t, int64_t> forwarding_blocks(const std::vector<Completion> &seq) {
  int64_t disjoint = 0, blocks = 0;
  for (size_t i = 0; i < seq.size();) {
    if (seq[i].kind == 'X') {  // an exchange: not forwarding
      ++blocks;
      ++i;
      continue;
    }
    size_t k = i;
    std::set<int32_t> received;
    while (k < seq.size() && seq[k].kind == 'R') received.insert(seq[k++].partner);
    if (received.empty()) {
      ++i;
      continue;
    }
    std::set<int32_t> sent;
    size_t j = k;
    while (j < seq.size() && seq[j].kind == 'S') sent.insert(seq[j++].partner);
    if (!sent.empty()) {
      ++blocks;
      bool overlap = false;
      for (int32_t p : sent) overlap |= received.count(p) != 0;
      disjoint += !overlap;
    }
    i = j;
  }
  return {disjoint, blocks};
}

int64_t task_finish(const Worker &w) { return w.cycles.empty() ? w.start : w.cycles.back().request; }

Decomposition decompose(const Worker &w, const Master &m, int64_t last_finish) {
  Decomposition d;
  d.elapsed = w.end - w.start;
  if (w.cycles.empty()) return d;
  const size_t n = w.cycles.size();
  d.tasks = static_cast<int64_t>(n) - 1;
  for (size_t i = 0; i + 1 < n; ++i) {
    const Cycle &c = w.cycles[i];
    const int64_t wait = std::max<int64_t>(0, c.assigned - c.request - c.comm);
    const int64_t seq = std::clamp<int64_t>(std::min(m.ready, c.assigned) - c.request, 0, wait);
    const int64_t setup =
        std::clamp<int64_t>(c.setup >= 0 ? c.setup : c.replied - std::max(c.received, m.ready), 0, wait - seq);
    d.seq += seq;
    d.setup += setup;
    d.bn += wait - seq - setup;
    d.comm += c.comm;
    d.compute += c.compute >= 0 ? c.compute : std::max<int64_t>(0, w.cycles[i + 1].request - c.assigned);
  }
  // The stop and MPI_Finalize: waiting for the last worker, then for the master's finalisation.
  const Cycle &stop = w.cycles.back();
  d.comm += stop.comm;
  const int64_t fw =
      std::max<int64_t>(0, stop.assigned - stop.request - stop.comm) + std::max<int64_t>(0, w.end - w.finalize_enter);
  const int64_t fin = std::clamp<int64_t>(last_finish - stop.request, 0, fw);
  const int64_t seq = std::clamp<int64_t>(m.finalize_enter - std::max(last_finish, stop.request), 0, fw - fin);
  d.final += fin;
  d.seq += seq;
  d.bn += fw - fin - seq;
  return d;
}

}  // namespace perfsift::kernels::hercule
