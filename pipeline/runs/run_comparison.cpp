#include "pipeline/runs/run_comparison.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "pipeline/engine/op_traits.h"

namespace perfsift::pipeline {

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
// A fix is judged held within this share of its prediction at least (and the noise).
constexpr double kHeldShare = 0.10;

std::vector<double> program_times(const std::vector<RunResults> &runs) {
  std::vector<double> out;
  for (const auto &r : runs) out.push_back(r.program_time_s);
  return out;
}

// Per run, a value keyed by name (0 where a run lacks the name), for every name of either side.
template <class Row, class Name, class Value>
std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> per_name(
    const std::vector<RunResults> &before, const std::vector<RunResults> &after, Name name, Value value,
    const std::vector<Row> RunResults::*rows) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> out;
  auto fill = [&](const std::vector<RunResults> &runs, bool is_after) {
    for (size_t r = 0; r < runs.size(); ++r)
      for (const auto &row : runs[r].*rows) {
        auto &slot = out[name(row)];
        auto &v = is_after ? slot.second : slot.first;
        v.resize(runs.size(), 0.0);
        v[r] += value(runs[r], row);
      }
  };
  fill(before, false);
  fill(after, true);
  for (auto &[k, v] : out) {
    v.first.resize(before.size(), 0.0);
    v.second.resize(after.size(), 0.0);
  }
  return out;
}

double mean_of(const std::vector<double> &v) {
  double s = 0;
  for (const double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

std::vector<RegionChange> compare_regions(const std::vector<RunResults> &before, const std::vector<RunResults> &after) {
  const auto name = [](const RegionRow &r) { return r.path; };
  const auto wall = per_name(
      before, after, name, [](const RunResults &, const RegionRow &r) { return r.wall_mean_s; }, &RunResults::regions);
  const auto mpi = per_name(
      before, after, name, [](const RunResults &, const RegionRow &r) { return r.mpi_mean_s; }, &RunResults::regions);
  const auto visits = per_name(
      before, after, name, [](const RunResults &, const RegionRow &r) { return r.visits; }, &RunResults::regions);
  std::vector<RegionChange> out;
  for (const auto &[path, w] : wall) {
    const auto &m = mpi.at(path), &v = visits.at(path);
    out.push_back({path, compare_samples(w.first, w.second), compare_samples(m.first, m.second), mean_of(v.first),
                   mean_of(v.second)});
  }
  std::stable_sort(out.begin(), out.end(), [](const RegionChange &a, const RegionChange &b) {
    return std::abs(a.wall.change) > std::abs(b.wall.change);
  });
  return out;
}

// Rows of time, calls and bytes (operations or call sites) by name, the largest change of
// time first; `keep` says which names count.
template <class Row>
std::vector<CallsChange> compare_calls(const std::vector<RunResults> &before, const std::vector<RunResults> &after,
                                       const std::vector<Row> RunResults::*rows, std::string Row::*name_of,
                                       bool per_rank, const std::function<bool(const std::string &)> &keep) {
  const auto name = [name_of](const Row &r) { return r.*name_of; };
  const auto scale = [per_rank](const RunResults &run) {
    return per_rank && run.ranks > 0 ? 1.0 / static_cast<double>(run.ranks) : 1.0;
  };
  const auto time = per_name(
      before, after, name, [&](const RunResults &run, const Row &o) { return o.time_s * scale(run); }, rows);
  const auto calls = per_name(
      before, after, name, [&](const RunResults &run, const Row &o) { return o.calls * scale(run); }, rows);
  const auto bytes = per_name(
      before, after, name, [&](const RunResults &run, const Row &o) { return o.bytes * scale(run); }, rows);
  std::vector<CallsChange> out;
  for (const auto &[n, t] : time) {
    if (!keep(n)) continue;
    const auto &c = calls.at(n), &b = bytes.at(n);
    out.push_back({n, compare_samples(t.first, t.second), mean_of(c.first), mean_of(c.second), mean_of(b.first),
                   mean_of(b.second)});
  }
  std::stable_sort(out.begin(), out.end(), [](const CallsChange &a, const CallsChange &b) {
    return std::abs(a.time.change) > std::abs(b.time.change);
  });
  return out;
}

// The problems side by side, a verdict for each fixed one that was priced.
void compare_problems(Comparison &c) {
  for (const auto &m : match_problems(c.before_problems, c.after_problems, c.before_ranks, c.after_ranks)) {
    ProblemComparison p;
    p.match = m;
    const SideProblem *b = c.before_of(p), *a = c.after_of(p);
    p.lost_before_s = b ? b->lost_mean() : 0;
    p.lost_after_s = a ? a->lost_mean() : 0;
    p.predicted_gain_s = b ? b->predicted_gain() : kNan;
    p.realised_at_problem_s = b ? p.lost_before_s - p.lost_after_s : kNan;
    p.fixed = b && (!a || p.lost_after_s <= 0.5 * p.lost_before_s);
    c.fixed_problems += p.fixed;
    c.problems.push_back(p);
  }
  for (auto &p : c.problems) {
    p.realised_gain_s = p.fixed && c.fixed_problems == 1 ? -c.program.change : kNan;
    if (!c.before_of(p) || !std::isfinite(p.predicted_gain_s)) {
      p.verdict = PredictionVerdict::Unpriced;
      continue;
    }
    if (!p.fixed) {
      p.verdict = PredictionVerdict::NotFixed;
      continue;
    }
    const double realised = std::isfinite(p.realised_gain_s) ? p.realised_gain_s : p.realised_at_problem_s;
    p.tolerance_s = std::max(c.program.half_width(), kHeldShare * std::abs(p.predicted_gain_s));
    p.verdict = std::abs(realised - p.predicted_gain_s) <= p.tolerance_s ? PredictionVerdict::Held
                : realised < p.predicted_gain_s                          ? PredictionVerdict::FellShort
                                                                         : PredictionVerdict::Exceeded;
  }
  std::stable_sort(c.problems.begin(), c.problems.end(), [](const ProblemComparison &x, const ProblemComparison &y) {
    return std::max(x.lost_before_s, x.lost_after_s) > std::max(y.lost_before_s, y.lost_after_s);
  });
}

}  // namespace

const char *verdict_words(PredictionVerdict v) {
  switch (v) {
    case PredictionVerdict::Unpriced:
      return "unpriced";
    case PredictionVerdict::NotFixed:
      return "not fixed";
    case PredictionVerdict::Held:
      return "held";
    case PredictionVerdict::FellShort:
      return "fell short";
    case PredictionVerdict::Exceeded:
      return "exceeded";
  }
  return "?";
}

double ProblemComparison::ratio() const {
  const double realised = std::isfinite(realised_gain_s) ? realised_gain_s : realised_at_problem_s;
  return predicted_gain_s != 0 && std::isfinite(predicted_gain_s) ? realised / predicted_gain_s : kNan;
}

const SideProblem *Comparison::before_of(const ProblemComparison &p) const {
  return p.match.before ? &before_problems[*p.match.before] : nullptr;
}

const SideProblem *Comparison::after_of(const ProblemComparison &p) const {
  return p.match.after ? &after_problems[*p.match.after] : nullptr;
}

Comparison compare_runs(std::vector<RunResults> before, std::vector<RunResults> after) {
  Comparison c;
  c.before = std::move(before);
  c.after = std::move(after);
  c.program = compare_samples(program_times(c.before), program_times(c.after));
  c.before_ranks = c.before.empty() ? 0 : c.before.front().ranks;
  c.after_ranks = c.after.empty() ? 0 : c.after.front().ranks;
  for (const auto &r : c.before) c.per_rank |= r.ranks != c.before_ranks;
  for (const auto &r : c.after) c.per_rank |= r.ranks != c.before_ranks;
  c.before_problems = problems_of_side(c.before);
  c.after_problems = problems_of_side(c.after);
  compare_problems(c);
  c.regions = compare_regions(c.before, c.after);
  // Start-up and shut-down are outside the program.
  c.operations = compare_calls(c.before, c.after, &RunResults::operations, &OperationRow::op, c.per_rank,
                               [](const std::string &op) { return !is_lifecycle_op(op); });
  std::set<std::string> lifecycle_sites;  // MPI_Init's and MPI_Finalize's: outside the program too
  for (const auto *side : {&c.before, &c.after})
    for (const auto &run : *side)
      for (const auto &site : run.callsites)
        if (is_lifecycle_op(site.op)) lifecycle_sites.insert(site.name);
  c.callsites = compare_calls(c.before, c.after, &RunResults::callsites, &CallSiteRow::name, c.per_rank,
                              [&](const std::string &name) { return !lifecycle_sites.count(name); });
  return c;
}

}  // namespace perfsift::pipeline
