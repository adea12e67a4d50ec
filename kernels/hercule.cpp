// Hercule's model-based diagnosis, the pure part (see hercule.h).
#include "kernels/hercule.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace perfsift::kernels::hercule {

double expected_strong_scaling(double reference, int64_t ranks, int64_t reference_ranks) {
  return reference_ranks > 0 ? reference * static_cast<double>(ranks) / static_cast<double>(reference_ranks) : 0;
}

double difference_percent(double x, double reference) { return reference != 0 ? (x - reference) / reference * 100 : 0; }

const char *scaling_kind(double work_per_rank_ratio, int64_t ranks, int64_t reference_ranks) {
  if (!(work_per_rank_ratio > 0) || reference_ranks <= 0) return "weak";
  const double total = work_per_rank_ratio * static_cast<double>(ranks) / static_cast<double>(reference_ranks);
  return std::fabs(std::log(work_per_rank_ratio)) <= std::fabs(std::log(total)) ? "weak" : "strong";
}

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

int32_t split_level(int32_t a, int32_t b, int32_t nranks) {
  if (a == b || a < 0 || b < 0 || a >= nranks || b >= nranks) return -1;
  const int32_t lo_rank = std::min(a, b), hi_rank = std::max(a, b);
  for (const int32_t round_up : {0, 1}) {
    int32_t lo = 0, hi = nranks;
    while (hi - lo >= 2) {
      const int32_t mid = lo + (hi - lo + round_up) / 2;
      if (lo_rank < mid && hi_rank >= mid) {
        if (hi_rank - lo_rank != mid - lo) break;  // across the halves, but not partners
        int32_t level = 0;
        while ((int64_t{1} << (level + 1)) < hi - lo) ++level;  // ceil(log2(hi - lo)) - 1
        return level;
      }
      (hi_rank < mid ? hi : lo) = mid;
    }
  }
  return -1;
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
    const int32_t l = split_level(p.src, p.dst, nranks);
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
  std::vector<std::set<int32_t>> partners(static_cast<size_t>(nranks));
  std::map<std::pair<int32_t, int32_t>, int64_t> per_pair;
  for (const auto &p : pairs) {
    if (p.src == p.dst || p.src < 0 || p.dst < 0 || p.src >= nranks || p.dst >= nranks) continue;
    partners[static_cast<size_t>(p.src)].insert(p.dst);
    partners[static_cast<size_t>(p.dst)].insert(p.src);
    per_pair[{std::min(p.src, p.dst), std::max(p.src, p.dst)}] += p.messages;
  }
  int32_t split_levels = 0;  // ceil(log2 P)
  while ((int64_t{1} << split_levels) < nranks) ++split_levels;
  int32_t few = 0;
  for (const auto &q : partners) few += static_cast<int32_t>(q.size()) <= split_levels;
  s.few_partners = static_cast<double>(few) / nranks;
  std::vector<int64_t> counts;
  for (const auto &[k, n] : per_pair) counts.push_back(n);
  std::nth_element(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(counts.size() / 2), counts.end());
  s.median_pair_messages = counts[counts.size() / 2];
  s.confidence = s.pow2 * s.levels * s.few_partners;
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

int64_t add_uncovered(int64_t &until, int64_t begin, int64_t end) {
  const int64_t from = std::max(begin, until);
  until = std::max(until, end);
  return std::max<int64_t>(0, end - from);
}

double turn_balance(std::vector<Turn> turns) {
  std::stable_sort(turns.begin(), turns.end(), [](const Turn &a, const Turn &b) {
    return a.worker != b.worker ? a.worker < b.worker : a.time < b.time;
  });
  std::map<int32_t, std::pair<int64_t, int64_t>> runs;  // per worker: turns to, from the master
  for (size_t i = 0; i < turns.size(); ++i)
    if (i == 0 || turns[i].worker != turns[i - 1].worker || turns[i].to_master != turns[i - 1].to_master)
      ++(turns[i].to_master ? runs[turns[i].worker].first : runs[turns[i].worker].second);
  int64_t fewer = 0, more = 0;
  for (const auto &[w, r] : runs) {
    fewer += std::min(r.first, r.second);
    more += std::max(r.first, r.second);
  }
  return more ? static_cast<double>(fewer) / static_cast<double>(more) : 0;
}

namespace {

// Sorted, disjoint spans within [from, to].
std::vector<Span> merged(std::vector<Span> v, int64_t from, int64_t to) {
  std::sort(v.begin(), v.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
  std::vector<Span> out;
  for (Span s : v) {
    s.begin = std::max(s.begin, from);
    s.end = std::min(s.end, to);
    if (s.end <= s.begin) continue;
    if (!out.empty() && s.begin <= out.back().end)
      out.back().end = std::max(out.back().end, s.end);
    else
      out.push_back(s);
  }
  return out;
}

int64_t overlap(int64_t b, int64_t e, int64_t from, int64_t to) {
  return std::max<int64_t>(0, std::min(e, to) - std::max(b, from));
}

int64_t covered(const std::vector<Span> &spans, int64_t b, int64_t e) {
  int64_t t = 0;
  for (const Span &s : spans) t += overlap(b, e, s.begin, s.end);
  return t;
}

// Takes up to `want` out of `from`; returns what is left to take.
int64_t take(int64_t &from, int64_t want) {
  const int64_t x = std::min(from, want);
  from -= x;
  return want - x;
}

}  // namespace

Decomposition decompose(const Worker &w, const Master &m, int64_t last_finish) {
  Decomposition d;
  d.elapsed = std::max<int64_t>(0, w.end - w.start);
  d.tasks = w.tasks;
  const auto mpi = merged(w.mpi, w.start, w.end);
  const auto setup = merged(w.setup, w.start, w.end);
  const int64_t finish = std::max(w.finish, m.ready);
  int64_t in_mpi = 0;
  for (const Span &s : mpi) {
    in_mpi += s.end - s.begin;
    d.seq += overlap(s.begin, s.end, INT64_MIN, m.ready);
    // While the worker still had tasks: the master setting its tasks up, or serving others.
    const int64_t busy = overlap(s.begin, s.end, m.ready, finish);
    const int64_t mine = std::min(busy, covered(setup, std::max(s.begin, m.ready), std::min(s.end, finish)));
    d.setup += mine;
    d.bn += busy - mine;
    // After its last task: the last worker, then the master's finalisation, then the rest.
    const int64_t after = overlap(s.begin, s.end, finish, INT64_MAX);
    const int64_t fin = overlap(s.begin, s.end, finish, std::max(finish, last_finish));
    const int64_t seq = overlap(s.begin, s.end, std::max(finish, last_finish), std::max(finish, m.finalize_enter));
    d.final += fin;
    d.seq += std::min(seq, after - fin);
    d.bn += after - fin - std::min(seq, after - fin);
  }
  // Effective communication is part of the time in MPI: out of bn first, then the others.
  d.comm = std::min(w.comm, in_mpi);
  int64_t rest = take(d.bn, d.comm);
  rest = take(d.setup, rest);
  rest = take(d.final, rest);
  take(d.seq, rest);
  // Task processing lies outside MPI.
  const int64_t outside = d.elapsed - in_mpi;
  d.compute = w.compute >= 0 ? std::min(w.compute, outside) : outside;
  return d;
}

}  // namespace perfsift::kernels::hercule
