#include "pipeline/runs/problem_matching.h"

#include <cmath>
#include <functional>
#include <map>
#include <cstdio>
#include <numeric>
#include <stdexcept>

#include "kernels/rank_set.h"

namespace perfsift::pipeline {

namespace {

// The culprits as two runs compare them: the ranks as written when both ran on as many ranks
// (nranks 0), else each range as its share of the ranks, [first/n, (last+1)/n).
std::string culprits(const std::string &ranks, int64_t nranks) {
  if (nranks <= 0 || ranks == "all") return ranks;
  std::vector<int32_t> list;
  try {
    list = kernels::parse_ranks(ranks, static_cast<int32_t>(nranks));
  } catch (const std::invalid_argument &) {
    return ranks;  // not a rank list (a store of another writer): as written
  }
  std::string out;
  char share[64];
  for (const auto &[a, b] : kernels::to_ranges(std::move(list))) {
    std::snprintf(share, sizeof share, "[%.6f,%.6f)", static_cast<double>(a) / static_cast<double>(nranks),
                  static_cast<double>(b + 1) / static_cast<double>(nranks));
    out += share;
  }
  return out;
}

// A problem's identity within one side: kind, place and culprits as written.
std::string identity(const ProblemRow &p) { return p.kind + '\x1e' + p.place + '\x1e' + p.ranks; }

}  // namespace

double SideProblem::lost_mean() const {
  return lost_s.empty() ? 0 : std::accumulate(lost_s.begin(), lost_s.end(), 0.0) / static_cast<double>(lost_s.size());
}

double SideProblem::predicted_gain() const {
  if (gains.empty()) return std::nan("");
  return std::accumulate(gains.begin(), gains.end(), 0.0) / static_cast<double>(gains.size());
}

std::vector<SideProblem> problems_of_side(const std::vector<RunResults> &runs) {
  std::vector<SideProblem> out;
  std::map<std::string, size_t> index;
  for (size_t r = 0; r < runs.size(); ++r)
    for (const auto &p : runs[r].problems) {
      auto [it, added] = index.emplace(identity(p), out.size());
      if (added) {
        out.push_back({p, std::vector<double>(runs.size(), 0.0), {}});
      }
      SideProblem &s = out[it->second];
      s.lost_s[r] = std::max(s.lost_s[r], p.lost_s);
      if (p.priced()) s.gains.push_back(p.predicted_gain_s);
    }
  return out;
}

const char *status_word(ProblemStatus s) {
  switch (s) {
    case ProblemStatus::Gone:
      return "gone";
    case ProblemStatus::Persists:
      return "persists";
    case ProblemStatus::New:
      return "new";
    case ProblemStatus::Moved:
      return "moved";
  }
  return "?";
}

std::vector<MatchedProblem> match_problems(const std::vector<SideProblem> &before,
                                           const std::vector<SideProblem> &after, int64_t before_ranks,
                                           int64_t after_ranks) {
  // Culprits by share of the ranks only when the rank counts differ.
  const bool by_share = before_ranks != after_ranks && before_ranks > 0 && after_ranks > 0;
  const int64_t before_n = by_share ? before_ranks : 0, after_n = by_share ? after_ranks : 0;
  std::vector<std::optional<size_t>> partner(before.size());
  std::vector<bool> taken(after.size(), false);
  std::vector<std::string> how(before.size());
  // One pass per rule, each over the problems the earlier rules left.
  // key(problem, its side's rank count or 0)
  auto pass = [&](const std::function<std::string(const ProblemRow &, int64_t)> &key, const char *moved) {
    std::multimap<std::string, size_t> open;
    for (size_t a = 0; a < after.size(); ++a)
      if (!taken[a]) open.emplace(key(after[a].row, after_n), a);
    for (size_t b = 0; b < before.size(); ++b) {
      if (partner[b]) continue;
      const auto it = open.find(key(before[b].row, before_n));
      if (it == open.end()) continue;
      partner[b] = it->second;
      taken[it->second] = true;
      how[b] = moved;
      open.erase(it);
    }
  };
  pass([](const ProblemRow &p, int64_t n) { return p.kind + '\x1e' + p.place + '\x1e' + culprits(p.ranks, n); }, "");
  pass([](const ProblemRow &p, int64_t) { return p.kind + '\x1e' + p.place; }, "to other ranks");
  pass([](const ProblemRow &p, int64_t n) { return p.kind + '\x1e' + culprits(p.ranks, n); }, "to another place");
  std::vector<MatchedProblem> out;
  for (size_t b = 0; b < before.size(); ++b) {
    MatchedProblem m;
    m.before = b;
    m.after = partner[b];
    m.moved = how[b];
    m.status = !partner[b] ? ProblemStatus::Gone : how[b].empty() ? ProblemStatus::Persists : ProblemStatus::Moved;
    out.push_back(m);
  }
  for (size_t a = 0; a < after.size(); ++a)
    if (!taken[a]) out.push_back({ProblemStatus::New, std::nullopt, a, ""});
  return out;
}

}  // namespace perfsift::pipeline
