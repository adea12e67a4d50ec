// Stage `bounds` (PerWiz F3): lower bounds per parallel region from the time breakdown
// alone — no DAG, so they hold for any reordering of the region's messages. For each
// region (the whole program, every step region, `bounds.regions`) and each of its steps,
// every rank's time splits into computation, communication and waiting (from the
// baseline replay). Q1 zeroes waiting, Q2 gives every rank the mean computation, Q3 the
// mean communication (a rank given more than it had waits that much less); a step lasts as
// long as its slowest rank, a region as its steps. No figure exceeds the replayed step.
//
// Cost: O(owned events x regions) per process and one reduction of 8 values per step.
#include <algorithm>
#include <cstdio>

#include "pipeline/engine/stage_info.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/replay/replay_baseline.h"
#include "pipeline/whatif/scenarios.h"

namespace perfsift::pipeline {

namespace {

// The 8 conjunctions of Q1 (zero wait), Q2 (balance work), Q3 (balance messages); bit k = Q(k+1).
const char *kCombo[8] = {"none", "Q1", "Q2", "Q1 and Q2", "Q3", "Q1 and Q3", "Q2 and Q3", "Q1 and Q2 and Q3"};
const char *kMeaning[8] = {"as replayed",
                           "no waiting",
                           "balanced computation",
                           "no waiting, balanced computation",
                           "balanced communication",
                           "no waiting, balanced communication",
                           "balanced computation and communication",
                           "no waiting, balanced computation and communication"};

// A parallel region: the program, a step region (its steps are the groups), or the user's.
struct Target {
  std::string name;
  Selector sel;
  int64_t groups = 1;
};

// What the stage found for one region: the 8 bounds and its time breakdown.
struct RegionBounds {
  std::string name;
  int64_t steps = 1;
  int64_t predicted_ns[8] = {};   // per conjunction (kCombo): sum over steps of the slowest rank
  int64_t clamped_steps[8] = {};  // steps where the hypothesis alone would lengthen the step
  double computation_s = 0, communication_s = 0, waiting_s = 0;  // mean per rank, summed over steps
};

// The parallel regions: the program, step regions, and the user's (collective).
std::vector<Target> bound_targets(const Context &ctx, const config::Values &cfg, const ReplayModel &model) {
  const auto &regions = ctx.store().regions();
  std::vector<std::string> paths;
  for (const auto &r : regions) paths.push_back(r.path);
  std::vector<Target> targets;
  targets.push_back({io::kRootRegionPath, Selector{}, 1});
  std::vector<int64_t> top(regions.size(), -1);
  for (const auto &side : model.side)
    for (const auto &x : side.executions)
      if (x.step >= 0 && x.region >= 0 && static_cast<size_t>(x.region) < top.size())
        top[static_cast<size_t>(x.region)] = std::max<int64_t>(top[static_cast<size_t>(x.region)], x.step);
  MPI_Allreduce(MPI_IN_PLACE, top.data(), static_cast<int>(top.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  for (size_t g = 0; g < top.size(); ++g)
    if (top[g] >= 0) {
      Selector s;
      s.kind = Selector::Kind::Steps;
      s.region = paths[g];
      s.region_id = static_cast<int32_t>(g);
      targets.push_back({paths[g], s, top[g] + 1});
    }
  for (const auto &name : cfg.get_list("bounds.regions")) {
    auto it = std::find(paths.begin(), paths.end(), name);
    if (it == paths.end())
      throw std::runtime_error("bounds.regions (" + cfg.where("bounds.regions") + "): no region '" + name +
                               "' in the store (did you mean '" + config::nearest(name, paths) + "'?)");
    Selector s;
    s.kind = Selector::Kind::Region;
    s.region = name;
    s.region_id = static_cast<int32_t>(it - paths.begin());
    targets.push_back({name, s, 1});
  }
  return targets;
}

// Each owned rank's time in a region, per group (index rank slot x groups + group).
struct RankTimes {
  std::vector<int64_t> calc, comm, wait;
  std::vector<uint8_t> part;  // the rank executed the group
};

RankTimes rank_times(const ReplayBaseline &base, const Target &t) {
  const ReplayModel &model = *base.model;
  const auto &baseline = *base.timings;
  const size_t ng = static_cast<size_t>(t.groups);
  const size_t owned = model.programs.size();
  RankTimes r;
  r.calc.assign(owned * ng, 0);
  r.comm.assign(owned * ng, 0);
  r.wait.assign(owned * ng, 0);
  r.part.assign(owned * ng, 0);
  for (size_t s = 0; s < owned; ++s) {
    const auto &p = model.programs[s];
    if (p.events.empty() || baseline.size() <= s) continue;
    const Located L = locate(t.sel, p, model.side[s], static_cast<int32_t>(ng));
    for (size_t g = 0; g < ng; ++g) r.part[s * ng + g] = L.participates[g];
    for (const auto &part : L.parts) r.calc[s * ng + static_cast<size_t>(part.group)] += part.ns;
    for (size_t i = 0; i < p.events.size(); ++i) {
      if (L.call[i] < 0) continue;
      const size_t g = s * ng + static_cast<size_t>(L.call[i]);
      const kernels::replay::EventTiming x = baseline[s][i];
      // A negative gap (an event that starts before the previous one ended, after clock
      // correction) is no computation to balance, but the replay starts the event that much
      // earlier: counting it keeps the breakdown equal to the replayed time.
      if (p.events[i].gap < 0) r.calc[g] += p.events[i].gap;
      if (p.events[i].items == 0)
        r.calc[g] += x.exit - x.enter;  // local calls are not communication
      else {
        r.comm[g] += x.nowait_exit - x.enter;
        r.wait[g] += x.exit - x.nowait_exit;
      }
    }
  }
  return r;
}

// One region's bounds and breakdown (collective: one sum and one max reduction).
RegionBounds bound_region(const Context &ctx, const ReplayBaseline &base, const Target &t) {
  const size_t ng = static_cast<size_t>(t.groups);
  const size_t owned = base.model->programs.size();
  const RankTimes r = rank_times(base, t);
  std::vector<int64_t> sums(4 * ng, 0);  // calc, comm, wait, ranks per group
  for (size_t s = 0; s < owned; ++s)
    for (size_t g = 0; g < ng; ++g)
      if (r.part[s * ng + g]) {
        sums[g] += r.calc[s * ng + g];
        sums[ng + g] += r.comm[s * ng + g];
        sums[2 * ng + g] += r.wait[s * ng + g];
        ++sums[3 * ng + g];
      }
  ctx.allreduce_sum(sums);
  std::vector<int64_t> worst(8 * ng, 0);
  for (size_t s = 0; s < owned; ++s)
    for (size_t g = 0; g < ng; ++g) {
      if (!r.part[s * ng + g]) continue;
      const int64_t n = std::max<int64_t>(1, sums[3 * ng + g]);
      const int64_t mean_calc = sums[g] / n, mean_comm = sums[ng + g] / n;
      const int64_t calc = r.calc[s * ng + g], comm = r.comm[s * ng + g], wait = r.wait[s * ng + g];
      for (int c = 0; c < 8; ++c) {
        // A rank given more computation or communication than it had waits that much less:
        // it waited for the ranks that had more.
        const int64_t added = ((c & 2) ? std::max<int64_t>(0, mean_calc - calc) : 0) +
                              ((c & 4) ? std::max<int64_t>(0, mean_comm - comm) : 0);
        const int64_t v = ((c & 2) ? mean_calc : calc) + ((c & 4) ? mean_comm : comm) +
                          ((c & 1) ? 0 : std::max<int64_t>(0, wait - added));
        worst[g * 8 + static_cast<size_t>(c)] = std::max(worst[g * 8 + static_cast<size_t>(c)], v);
      }
    }
  MPI_Allreduce(MPI_IN_PLACE, worst.data(), static_cast<int>(worst.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  RegionBounds b;
  b.name = t.name;
  b.steps = t.groups;
  // A bound never exceeds the step as replayed. The breakdown keeps each rank's communication
  // and waiting when it gives the rank the mean computation; a rank that gains computation
  // while its communication is not balanced can then come out slower than the replay —
  // the assumption that breaks is that its waiting absorbs the added computation. Such a
  // step keeps its replayed time, and the step is counted.
  for (int c = 0; c < 8; ++c)
    for (size_t g = 0; g < ng; ++g) {
      const int64_t as_replayed = worst[g * 8], v = worst[g * 8 + static_cast<size_t>(c)];
      b.predicted_ns[c] += std::min(v, as_replayed);
      b.clamped_steps[c] += v > as_replayed;
    }
  for (size_t g = 0; g < ng; ++g) {
    const double n = static_cast<double>(std::max<int64_t>(1, sums[3 * ng + g]));
    b.computation_s += static_cast<double>(sums[g]) / n * 1e-9;
    b.communication_s += static_cast<double>(sums[ng + g]) / n * 1e-9;
    b.waiting_s += static_cast<double>(sums[2 * ng + g]) / n * 1e-9;
  }
  return b;
}

std::vector<RegionBounds> compute_bounds(const Context &ctx, const config::Values &cfg) {
  const ReplayBaseline &base = ctx.products().get<ReplayBaseline>();
  std::vector<RegionBounds> found;
  for (const Target &t : bound_targets(ctx, cfg, *base.model)) found.push_back(bound_region(ctx, base, t));
  return found;
}

void write_bounds(const std::vector<RegionBounds> &found, StageOutput &out) {
  io::Table bt, br;
  bt.description =
      "PerWiz F3 lower bounds per parallel region: Q1 zero wait, Q2 balanced computation, Q3 balanced communication";
  auto &b_region = bt.strings("region", "parallel region");
  auto &b_question = bt.strings("question", "none, Q1, Q2, Q3 or a conjunction");
  auto &b_meaning = bt.strings("meaning", "the hypothesis in words");
  auto &b_pred = bt.floats("predicted_s", "s", "sum over the region's steps of the slowest rank's time");
  auto &b_clamped = bt.ints("clamped_steps", "",
                            "steps where the hypothesis would lengthen the replayed step (its added computation is "
                            "not absorbed by waiting): the step counts as replayed");
  br.description = "time breakdown per parallel region (baseline replay), mean per rank summed over steps";
  auto &r_region = br.strings("region", "parallel region");
  auto &r_steps = br.ints("steps", "", "parallel steps (1 for a plain region)");
  auto &r_calc = br.floats("computation_s", "s", "computation, mean per rank");
  auto &r_comm = br.floats("communication_s", "s", "time in MPI not waiting, mean per rank");
  auto &r_wait = br.floats("waiting_s", "s", "waiting in MPI, mean per rank");
  for (const RegionBounds &b : found) {
    for (int c = 0; c < 8; ++c) {
      b_region.push_back(b.name);
      b_question.push_back(kCombo[c]);
      b_meaning.push_back(kMeaning[c]);
      b_pred.push_back(static_cast<double>(b.predicted_ns[c]) * 1e-9);
      b_clamped.push_back(b.clamped_steps[c]);
    }
    r_region.push_back(b.name);
    r_steps.push_back(b.steps);
    r_calc.push_back(b.computation_s);
    r_comm.push_back(b.communication_s);
    r_wait.push_back(b.waiting_s);
  }
  out.table("bounds", bt);
  out.table("breakdown", br);
}

// No findings: the bounds are read from the report.
void run_bounds(Context &ctx, const config::Values &cfg, StageOutput &out) {
  write_bounds(compute_bounds(ctx, cfg), out);
}

}  // namespace

StageInfo bounds_stage() {
  StageInfo s{
      "bounds",
      "PerWiz's lower bounds per parallel region (F3): the time breakdown with waiting zeroed (Q1), computation "
      "balanced (Q2), communication balanced (Q3) and their conjunctions, step by step",
      {{"regions", config::Type::StringList, std::vector<std::string>{}, "",
        "further regions to bound besides the program and the step regions"}},
      run_bounds};
  s.requires_products = {product_name<ReplayBaseline>(), product_name<RegionExecutions>()};
  return s;
}

}  // namespace perfsift::pipeline
