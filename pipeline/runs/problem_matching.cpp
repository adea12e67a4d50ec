#include "pipeline/runs/problem_matching.h"

#include <cmath>
#include <functional>
#include <map>
#include <numeric>

namespace perfsift::pipeline {

namespace {

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
                                           const std::vector<SideProblem> &after) {
  std::vector<std::optional<size_t>> partner(before.size());
  std::vector<bool> taken(after.size(), false);
  std::vector<std::string> how(before.size());
  // One pass per rule, each over the problems the earlier rules left.
  auto pass = [&](const std::function<std::string(const ProblemRow &)> &key, const char *moved) {
    std::multimap<std::string, size_t> open;
    for (size_t a = 0; a < after.size(); ++a)
      if (!taken[a]) open.emplace(key(after[a].row), a);
    for (size_t b = 0; b < before.size(); ++b) {
      if (partner[b]) continue;
      const auto it = open.find(key(before[b].row));
      if (it == open.end()) continue;
      partner[b] = it->second;
      taken[it->second] = true;
      how[b] = moved;
      open.erase(it);
    }
  };
  pass(identity, "");
  pass([](const ProblemRow &p) { return p.kind + '\x1e' + p.place; }, "to other ranks");
  pass([](const ProblemRow &p) { return p.kind + '\x1e' + p.ranks; }, "to another place");
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
