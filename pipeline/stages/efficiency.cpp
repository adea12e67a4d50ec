// Stage `efficiency`: the POP Centre of Excellence's efficiencies of the run (load
// balance, serialisation, transfer, communication and parallel efficiency:
// kernels/pop_efficiency.h), for the program and for every region all ranks enter. Useful
// time is computation: a rank's time outside MPI calls (start-up and shut-down are MPI
// calls, so they never count); the program's run time is its window, from the first rank
// out of MPI_Init to the last rank into MPI_Finalize; its time on an ideal network is the
// whatif stage's `ideal-network` replay (asked for on request when the standard questions
// are off). A region's run time is its slowest rank's inclusive time; without a replay of
// the region alone, a region has load balance, communication and parallel efficiency.
//
// Cost: O(owned ranks x regions) from the profile rows, one reduction of one summary per
// region; memory O(regions).
#include <cmath>

#include "kernels/pop_efficiency.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/replay/replay_baseline.h"

namespace perfsift::pipeline {

namespace {

// Per region over the ranks with data: useful (inclusive computation) and wall time, and
// the ranks that entered it.
struct RegionTimes {
  std::vector<kernels::Summary> useful, wall;
  std::vector<int64_t> entered;  // ranks with a visit
};

RegionTimes region_times(const Context &ctx) {
  const auto &wall = ctx.profile(io::kMetricNames[io::kWall]), &mpi = ctx.profile(io::kMetricNames[io::kMpiTime]),
             &visits = ctx.profile(io::kMetricNames[io::kVisits]);
  const auto nreg = static_cast<size_t>(ctx.nregions());
  RegionTimes t{std::vector<kernels::Summary>(nreg), std::vector<kernels::Summary>(nreg),
                std::vector<int64_t>(nreg, 0)};
  // A process that owns no rank has empty rows: it still joins the reductions below.
  const int32_t owned = wall.empty() || mpi.empty() ? 0 : ctx.owned();
  for (int32_t l = 0; l < owned; ++l) {
    const int32_t r = ctx.first() + l;
    if (ctx.missing(r)) continue;
    for (size_t g = 0; g < nreg; ++g) {
      const size_t at = static_cast<size_t>(l) * nreg + g;
      const bool entered = g == 0 || visits.empty() || visits[at] > 0;
      if (!entered || std::isnan(wall[at])) continue;
      ++t.entered[g];
      t.wall[g].add(wall[at], r);
      t.useful[g].add(std::max(0.0, wall[at] - std::max(0.0, mpi[at])), r);
    }
  }
  ctx.allreduce(t.useful);
  ctx.allreduce(t.wall);
  ctx.allreduce_sum(t.entered);
  return t;
}

void write_program(const Context &ctx, const RegionTimes &t, StageOutput &out) {
  const kernels::Summary &u = t.useful[0];
  const auto *replay = ctx.products().find<ProgramReplayTimes>();
  const double ideal = replay ? replay->ideal_network_s : std::nan("");
  const double runtime = ctx.program_time_s();
  const double base = replay ? replay->baseline_s : std::nan("");
  const auto e = kernels::pop_efficiency({u.sum.value(), u.count ? u.max : 0.0, u.count, runtime, ideal, base});
  out.attribute("load_balance", e.load_balance);
  out.attribute("serialisation", e.serialisation);
  out.attribute("transfer", e.transfer);
  out.attribute("communication", e.communication);
  out.attribute("parallel", e.parallel);
  out.attribute("runtime_s", runtime);
  out.attribute("useful_sum_s", u.sum.value());
  out.attribute("useful_max_s", u.count ? u.max : std::nan(""));
  out.attribute("useful_max_rank", u.max_rank);
  out.attribute("ideal_network_runtime_s", ideal);
  out.attribute("baseline_runtime_s", base);
  out.attribute("ranks", u.count);
  std::string note = e.note;
  if (!replay)
    note += std::string(note.empty() ? "" : "; ") +
            "no ideal-network replay (the whatif stage did not run before this one): serialisation and transfer not "
            "computed";
  out.attribute("note", note);
}

// Regions other than the program that every rank with data enters.
void write_regions(const Context &ctx, const RegionTimes &t, StageOutput &out) {
  io::Table tab;
  tab.description = "POP efficiencies per region every rank enters (inclusive times; no replay per region)";
  auto &path = tab.strings("region", "region path");
  auto &lb = tab.floats("load_balance", "ratio", "mean / max of the ranks' computation in the region");
  auto &comm = tab.floats("communication", "ratio", "max computation / the slowest rank's time in the region");
  auto &par = tab.floats("parallel", "ratio", "mean computation / the slowest rank's time in the region");
  auto &time = tab.floats("time_max_s", "s", "the slowest rank's inclusive time in the region");
  auto &maxr = tab.ints("useful_max_rank", "rank", "the rank computing longest in the region");
  const auto &regions = ctx.store().regions();
  const int64_t ranks = t.entered[0];
  for (size_t g = 1; g < t.useful.size(); ++g) {
    if (ranks < 1 || t.entered[g] != ranks || !(t.wall[g].max > 0)) continue;
    const kernels::Summary &u = t.useful[g];
    const auto e = kernels::pop_efficiency({u.sum.value(), u.max, u.count, t.wall[g].max});
    path.push_back(regions[g].path);
    lb.push_back(e.load_balance);
    comm.push_back(e.communication);
    par.push_back(e.parallel);
    time.push_back(t.wall[g].max);
    maxr.push_back(u.max_rank);
  }
  out.table("regions", tab);
}

void run_efficiency(Context &ctx, const config::Values &, StageOutput &out) {
  const RegionTimes t = region_times(ctx);
  write_program(ctx, t, out);
  write_regions(ctx, t, out);
}

}  // namespace

StageInfo efficiency_stage() {
  StageInfo s{"efficiency",
              "POP efficiencies: load balance, serialisation, transfer (the ideal-network replay), communication and "
              "parallel efficiency of the program, and per region every rank enters",
              {},
              run_efficiency};
  s.uses_products = {product_name<ProgramReplayTimes>()};
  // Transfer efficiency needs the ideal-network replay on every run.
  s.requests = [](const config::Values &) {
    return std::vector<ProductRequest>{{product_name<ProgramReplayTimes>(), [](const RunShape &) { return true; }}};
  };
  return s;
}

}  // namespace perfsift::pipeline
