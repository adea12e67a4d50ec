#include "pipeline/runs/scaling_analysis.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "io/results_store.h"
#include "io/trace_store.h"
#include "kernels/hercule.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"

namespace perfsift::pipeline {

namespace hc = kernels::hercule;

namespace {

// The program a run ran: its command's first word, without the directory.
std::string program_of(const RunResults &r) {
  const std::string first = r.command.substr(0, r.command.find(' '));
  return std::filesystem::path(first).filename().string();
}

PopEfficiency read_efficiency(const io::ResultsStore &rs) {
  PopEfficiency e;
  e.computation_scalability = e.global = std::nan("");
  if (!has_child(rs, "", "efficiency")) return e;
  const auto a = rs.attributes("efficiency");
  const auto get = [&](const char *name) { return attr_or<double>(a, name, std::nan("")); };
  e.present = true;
  e.load_balance = get("load_balance");
  e.serialisation = get("serialisation");
  e.transfer = get("transfer");
  e.communication = get("communication");
  e.parallel = get("parallel");
  e.runtime_s = get("runtime_s");
  e.useful_sum_s = get("useful_sum_s");
  e.useful_max_s = get("useful_max_s");
  e.ideal_network_runtime_s = get("ideal_network_runtime_s");
  e.ranks = attr_or<int64_t>(a, "ranks", 0);
  return e;
}

double computation_of(const io::ResultsStore &rs) {
  if (!has_child(rs, "profile", "ranks")) return 0;
  double sum = 0;
  const io::Table ranks = rs.table("profile/ranks");
  for (const double c : column<double>(ranks, "comp_s")) sum += c;
  return sum;
}

ScalingRun read_scaling_run(RunResults r) {
  const io::ResultsStore rs(r.path);
  ScalingRun s;
  s.efficiency = read_efficiency(rs);
  s.computation_s = computation_of(rs);
  s.results = std::move(r);
  return s;
}

// The useful computation summed over ranks: the POP group's where present, else the profile's.
double useful_sum(const ScalingRun &r) {
  return r.efficiency.present && r.efficiency.useful_sum_s > 0 ? r.efficiency.useful_sum_s : r.computation_s;
}

void check_runs(const std::vector<RunResults> &runs) {
  if (runs.size() < 2)
    throw io::Error("scaling needs two or more runs of one program at different rank counts (" +
                    std::to_string(runs.size()) + " given)");
  for (const auto &r : runs)
    if (program_of(r) != program_of(runs.front()))
      throw io::Error(r.path + " ran '" + program_of(r) + "', " + runs.front().path + " ran '" +
                      program_of(runs.front()) + "': scaling models runs of one program; give its runs only");
  std::set<int64_t> counts;
  for (const auto &r : runs) {
    if (r.ranks < 1) throw io::Error(r.path + ": no rank count in /run (not a results store of a finished analysis)");
    counts.insert(r.ranks);
  }
  if (counts.size() < 2)
    throw io::Error("every run ran on " + std::to_string(*counts.begin()) +
                    " ranks: scaling needs runs at two or more rank counts");
}

// POP's computation scalability and global efficiency of each run against the first.
void pop_across_runs(ScalingAnalysis &a) {
  const ScalingRun &ref = a.runs.front();
  for (auto &r : a.runs) {
    auto &e = r.efficiency;
    if (!e.present || !ref.efficiency.present || !(e.useful_sum_s > 0)) continue;
    const double scale =
        a.scaling == "weak" ? static_cast<double>(r.results.ranks) / static_cast<double>(ref.results.ranks) : 1;
    e.computation_scalability = ref.efficiency.useful_sum_s * scale / e.useful_sum_s;
    e.global = e.parallel * e.computation_scalability;
  }
}

void fit_and_predict(ScaledQuantity &q, const std::vector<int64_t> &targets) {
  q.model = kernels::scaling::fit(q.ranks, q.measured_s);
  for (const int64_t p : targets) q.predicted_s[p] = q.model.at(static_cast<double>(p));
}

std::vector<ScaledQuantity> region_quantities(const ScalingAnalysis &a) {
  std::map<std::string, ScaledQuantity> by_path;
  std::vector<std::string> order;
  for (const auto &run : a.runs)
    for (const auto &region : run.results.regions) {
      if (region.path == "(program)") continue;  // the program's own time is modelled apart
      auto [it, fresh] = by_path.try_emplace(region.path);
      if (fresh) order.push_back(region.path);
      ScaledQuantity &q = it->second;
      q.name = region.path;
      q.ranks.push_back(static_cast<double>(run.results.ranks));
      q.measured_s.push_back(region.wall_max_s);  // its time on the rank that sets the pace
      q.pace_rank = region.wall_max_rank;
    }
  std::vector<ScaledQuantity> out;
  for (const auto &path : order) out.push_back(std::move(by_path[path]));
  return out;
}

// A problem's time at stake in every run, matched by kind and place (its culprit ranks
// differ from one rank count to the next); 0 in a run that did not report it.
std::vector<ScaledQuantity> problem_quantities(const ScalingAnalysis &a) {
  std::map<std::string, ScaledQuantity> by_identity;
  std::vector<std::string> order;
  for (size_t k = 0; k < a.runs.size(); ++k)
    for (const auto &p : a.runs[k].results.problems) {
      const std::string identity = p.kind + '\x1e' + p.place;
      auto [it, fresh] = by_identity.try_emplace(identity);
      ScaledQuantity &q = it->second;
      if (fresh) {
        order.push_back(identity);
        q.place = identity;
        q.measured_s.assign(a.runs.size(), 0);
        for (const auto &r : a.runs) q.ranks.push_back(static_cast<double>(r.results.ranks));
      }
      q.name = p.kind + " at " + p.where;  // as the largest run names it
      q.measured_s[k] += p.lost_s;
    }
  std::vector<ScaledQuantity> out;
  for (const auto &identity : order) out.push_back(std::move(by_identity[identity]));
  return out;
}

// Hercule's relative diagnosis over the regions: the largest run against the reference,
// each region's expected time under the scaling kind, the one beyond it by most named.
std::string relative_narrative(const ScalingAnalysis &a) {
  const ScalingRun &ref = a.runs.front(), &last = a.runs.back();
  const bool strong = a.scaling == "strong";
  const RegionRow *grew = nullptr;
  double grew_by = 0, grew_expected = 0, grew_ref = 0;
  for (const auto &r : last.results.regions) {
    if (r.path == "(program)") continue;
    const auto it = std::find_if(ref.results.regions.begin(), ref.results.regions.end(),
                                 [&](const RegionRow &x) { return x.path == r.path; });
    if (it == ref.results.regions.end()) continue;
    const double expected =
        strong ? hc::expected_strong_scaling(it->wall_max_s, ref.results.ranks, last.results.ranks) : it->wall_max_s;
    if (r.wall_max_s - expected > grew_by)
      grew_by = r.wall_max_s - expected, grew = &r, grew_expected = expected, grew_ref = it->wall_max_s;
  }
  const std::string against =
      "Against the " + std::to_string(ref.results.ranks) + "-rank run (" + a.scaling +
      " scaling: " + (strong ? "a region's time is expected to shrink as 1/P" : "times are expected to stay") + "): ";
  if (!grew) return against + "no region at " + std::to_string(last.results.ranks) + " ranks took longer than that.";
  char b[160];
  std::snprintf(b, sizeof b, " (%+.0f %%; %s at %lld rank%s)", hc::difference_percent(grew->wall_max_s, grew_expected),
                format_seconds(grew_ref).c_str(), static_cast<long long>(ref.results.ranks),
                ref.results.ranks == 1 ? "" : "s");
  return against + grew->path + " grew most: " + format_seconds(grew->wall_max_s) + " at " +
         std::to_string(last.results.ranks) + " ranks against " + format_seconds(grew_expected) + " expected" + b + ".";
}

// The program: its own model for the growth in words, its predictions composed (the
// top-level regions' and the rest's).
void model_program(ScalingAnalysis &a) {
  a.program_time.name = "(program)";
  a.rest.name = "(outside the top-level regions)";
  for (const auto &r : a.runs) {
    double regions = 0;
    for (const auto &region : r.results.regions)
      if (region.path != "(program)" && region.path.find('/') == std::string::npos) regions += region.wall_max_s;
    a.program_time.ranks.push_back(static_cast<double>(r.results.ranks));
    a.program_time.measured_s.push_back(r.results.program_time_s);
    a.rest.ranks.push_back(static_cast<double>(r.results.ranks));
    a.rest.measured_s.push_back(std::max(0.0, r.results.program_time_s - regions));
  }
  fit_and_predict(a.program_time, a.targets);
  fit_and_predict(a.rest, a.targets);
  for (const int64_t p : a.targets) a.program_time.predicted_s[p] = a.program_at(static_cast<double>(p));
}

}  // namespace

double ScalingAnalysis::program_at(double p) const {
  double sum = rest.model.at(p);
  for (const auto &q : regions)
    if (q.name.find('/') == std::string::npos) sum += q.model.at(p);
  return sum;
}

ScalingAnalysis analyse_scaling(std::vector<RunResults> runs, std::vector<int64_t> targets) {
  check_runs(runs);
  ScalingAnalysis a;
  a.program = program_of(runs.front());
  std::stable_sort(runs.begin(), runs.end(),
                   [](const RunResults &x, const RunResults &y) { return x.ranks < y.ranks; });
  for (auto &r : runs) a.runs.push_back(read_scaling_run(std::move(r)));
  std::set<int64_t> counts;
  for (const auto &r : a.runs) counts.insert(r.results.ranks);
  a.points = counts.size();
  if (targets.empty()) targets.push_back(2 * a.runs.back().results.ranks);
  std::sort(targets.begin(), targets.end());
  targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
  a.targets = targets;

  const ScalingRun &ref = a.runs.front(), &last = a.runs.back();
  const double ref_per_rank = useful_sum(ref) / static_cast<double>(ref.results.ranks);
  const double last_per_rank = useful_sum(last) / static_cast<double>(last.results.ranks);
  a.work_per_rank_ratio = ref_per_rank > 0 ? last_per_rank / ref_per_rank : 0;
  a.scaling = hc::scaling_kind(a.work_per_rank_ratio, last.results.ranks, ref.results.ranks);
  pop_across_runs(a);

  a.regions = region_quantities(a);
  a.problems = problem_quantities(a);
  const int64_t top = a.largest_target();
  for (auto *list : {&a.regions, &a.problems}) {
    for (auto &q : *list) fit_and_predict(q, a.targets);
    std::stable_sort(list->begin(), list->end(), [top](const ScaledQuantity &x, const ScaledQuantity &y) {
      return x.predicted_s.at(top) > y.predicted_s.at(top);
    });
  }
  model_program(a);
  a.relative = relative_narrative(a);
  return a;
}

}  // namespace perfsift::pipeline
