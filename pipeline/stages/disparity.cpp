// Stage `disparity` (AutoAnalyzer 4.2.2 and 4.3): which regions cost the most?
// CRNM = (region wall / program wall) x CPI per rank and region, averaged over ranks;
// an exact 1-D k-means puts the averages into five severities (very low 0 .. very
// high 4); high and very high regions are CCRs; a leaf CCR, or a CCR more severe than
// each child, is a CCCR. Without cycle and instruction counters CPI is unknown: where the
// store has the OS's thread CPU time, the counter-free CRNM is the wall share x wall per
// thread-CPU second (bounded to 1..10), so that a region that waits off the CPU
// (descheduled, faulting, in file I/O or asleep) weighs more, as a high CPI would; else
// the CRNM is the wall-time share. The results and report say which.
//
// Cost: O(owned ranks x regions) per process, one reduction of O(regions); the k-means
// is O(5 regions log regions) on every process (identical inputs, identical results).
#include <algorithm>
#include <set>
#include <limits>
#include <cstdio>

#include "kernels/kmeans1d.h"
#include "pipeline/format/text.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/whatif/fix_questions.h"
#include "pipeline/whatif/questions.h"

namespace perfsift::pipeline {

namespace {

// The owned profile rows the stage reads, [owned][nregions].
struct DisparityRows {
  const std::vector<double> &wall, &cyc, &ins, &thread_cpu;
  bool have_cpi;  // from the store, not the slices: a process may own no ranks and hold empty slices
  bool have_os;   // thread CPU time recorded (some rank's is positive): the counter-free CRNM
};

// The counter-free CPI: wall seconds per thread-CPU second, 1 (always on the CPU) to 10.
constexpr double kMaxStall = 10.0;
double stall_factor(double wall, double thread_cpu) {
  if (!(wall > 0)) return 1.0;
  if (!(thread_cpu > 0)) return kMaxStall;
  return std::clamp(wall / thread_cpu, 1.0, kMaxStall);
}

// Collective: whether any rank recorded thread CPU time (stores written before the
// collector did, and imported or synthetic ones, have none or zeros).
bool os_recorded(const Context &ctx) {
  std::vector<int64_t> n(1, 0);
  if (ctx.has_metric(io::kMetricNames[io::kThreadCpu]))
    for (double x : ctx.profile(io::kMetricNames[io::kThreadCpu])) n[0] += x > 0;
  ctx.allreduce_sum(n);
  return n[0] > 0;
}

// What the stage found, per region (the program, region 0, has no CRNM).
struct DisparityResult {
  std::vector<double> crnm;                                   // [nregions - 1]: mean CRNM over ranks
  std::vector<int> sev;                                       // [nregions - 1]: severity 0 very low .. 4 very high
  RegionSeverity severity;                                    // [nregions]: severity and CCR, for later stages
  std::vector<uint8_t> cccr;                                  // [nregions]
  std::vector<double> cpi;                                    // [nregions]: mean CPI over ranks; NaN when unknown
  double cpi_best = std::numeric_limits<double>::infinity();  // the lowest mean CPI of a region
};

// Mean CRNM per region: (region wall / program wall) x CPI, averaged over ranks.
std::vector<double> mean_crnm(const Context &ctx, const DisparityRows &rows) {
  const int32_t nreg = ctx.nregions(), first = ctx.first(), owned = ctx.owned();
  const auto &wall = rows.wall, &cyc = rows.cyc, &ins = rows.ins;
  std::vector<kernels::FixedSum> sum(static_cast<size_t>(nreg));
  std::vector<int64_t> count(static_cast<size_t>(nreg), 0);
  for (int32_t l = 0; l < owned; ++l) {
    if (ctx.missing(first + l)) continue;
    const size_t row = static_cast<size_t>(l) * nreg;
    const double program = wall[row];
    if (!(program > 0)) continue;
    for (int32_t g = 1; g < nreg; ++g) {
      double cpi = 1.0;
      if (rows.have_cpi)
        cpi = ins[row + g] > 0 ? cyc[row + g] / ins[row + g] : 0.0;
      else if (rows.have_os)
        cpi = stall_factor(wall[row + g], rows.thread_cpu[row + g]);
      // A region not on this rank's path counts as zero (the paper's 'if' branches).
      sum[g].add(std::isnan(wall[row + g]) ? 0.0 : wall[row + g] / program * cpi);
      ++count[g];
    }
  }
  ctx.allreduce(sum);
  ctx.allreduce_sum(count);
  std::vector<double> crnm(static_cast<size_t>(std::max(0, nreg - 1)));
  for (int32_t g = 1; g < nreg; ++g) crnm[g - 1] = count[g] ? sum[g].value() / static_cast<double>(count[g]) : 0.0;
  return crnm;
}

// Mean CPI per region, for the time at stake: what the region would save at the CPI
// of the program's most efficient region.
void mean_cpi(const Context &ctx, const DisparityRows &rows, DisparityResult &res) {
  const int32_t nreg = ctx.nregions(), first = ctx.first(), owned = ctx.owned();
  std::vector<kernels::FixedSum> cpi_sum(static_cast<size_t>(nreg));
  std::vector<int64_t> cpi_n(static_cast<size_t>(nreg), 0);
  if (rows.have_cpi)
    for (int32_t l = 0; l < owned; ++l)
      if (!ctx.missing(first + l))
        for (int32_t g = 1; g < nreg; ++g) {
          const size_t i = static_cast<size_t>(l) * nreg + g;
          if (rows.ins[i] > 0) cpi_sum[g].add(rows.cyc[i] / rows.ins[i]), ++cpi_n[g];
        }
  ctx.allreduce(cpi_sum);
  ctx.allreduce_sum(cpi_n);
  res.cpi.assign(static_cast<size_t>(nreg), std::nan(""));
  for (int32_t g = 1; g < nreg; ++g)
    if (cpi_n[g]) {
      res.cpi[g] = cpi_sum[g].value() / static_cast<double>(cpi_n[g]);
      res.cpi_best = std::min(res.cpi_best, res.cpi[g]);
    }
}

DisparityResult compute_disparity(const Context &ctx, const DisparityRows &rows) {
  const int32_t nreg = ctx.nregions();
  DisparityResult res;
  res.crnm = mean_crnm(ctx, rows);
  mean_cpi(ctx, rows, res);
  res.sev = kernels::severity_categories(res.crnm);
  auto &severity = res.severity;
  severity.severity.assign(static_cast<size_t>(nreg), 0);
  severity.ccr.assign(static_cast<size_t>(nreg), 0);
  for (int32_t g = 1; g < nreg; ++g) severity.severity[g] = res.sev[g - 1], severity.ccr[g] = res.sev[g - 1] >= 3;
  res.cccr.assign(static_cast<size_t>(nreg), 0);
  for (int32_t g = 1; g < nreg; ++g) {
    if (!severity.ccr[g]) continue;
    const auto &ch = ctx.children()[g];
    res.cccr[g] =
        std::all_of(ch.begin(), ch.end(), [&](int32_t c) { return severity.severity[g] > severity.severity[c]; });
  }
  return res;
}

void write_disparity(const Context &ctx, const DisparityRows &rows, const DisparityResult &res, StageOutput &out) {
  const bool have_cpi = rows.have_cpi, have_os = rows.have_os;
  const auto &regions = ctx.store().regions();
  std::string fallback;
  if (!have_cpi && have_os)
    fallback =
        "CPI unknown (PAPI_TOT_CYC and PAPI_TOT_INS not recorded): CRNM is the wall-time share x wall per thread-CPU "
        "second (1 to 10), the OS's stand-in for CPI";
  else if (!have_cpi)
    fallback = "CPI unknown (PAPI_TOT_CYC and PAPI_TOT_INS not recorded): CRNM is the wall-time share";
  out.attribute("measure", std::string(have_cpi  ? "CRNM = wall share x CPI"
                                       : have_os ? "wall share x wall per thread-CPU second (no CPI)"
                                                 : "wall share (no CPI)"));
  out.attribute("fallback", fallback);
  io::Table t;
  t.description =
      "per region: mean CRNM over ranks, severity by exact 1-D k-means (0 very low .. 4 very high), CCR and CCCR";
  auto &path = t.strings("path", "region path");
  auto &c = t.floats("crnm", "ratio",
                     have_cpi  ? "mean of (region wall / program wall) x CPI over ranks"
                     : have_os ? "mean of (region wall / program wall) x (region wall / region thread CPU, 1 to 10) "
                                 "over ranks (CPI not recorded)"
                               : "mean of region wall / program wall over ranks (CPI not recorded)");
  auto &sv = t.ints("severity", "", "0 very low, 1 low, 2 medium, 3 high, 4 very high");
  auto &is_ccr = t.ints("ccr", "", "1 for a critical code region (high or very high)");
  auto &is_cccr = t.ints("cccr", "", "1 for a CCR that is a leaf or more severe than each of its children");
  for (int32_t g = 1; g < ctx.nregions(); ++g) {
    path.push_back(regions[g].path);
    c.push_back(res.crnm[g - 1]);
    sv.push_back(res.sev[g - 1]);
    is_ccr.push_back(res.severity.ccr[g]);
    is_cccr.push_back(res.cccr[g]);
  }
  out.table("regions", t);
}

// Each CCCR is a bottleneck, priced by its mean wall time at the best region's CPI.
void disparity_bottlenecks(Context &ctx, const DisparityRows &rows, const DisparityResult &res) {
  const auto &regions = ctx.store().regions();
  const int32_t nreg = ctx.nregions(), first = ctx.first(), owned = ctx.owned();
  const auto &cpi = res.cpi;
  auto &bottlenecks = ctx.products().get_or_publish<Bottlenecks>().items;
  const auto &cpu = ctx.profile(io::kMetricNames[io::kCpu]);
  const auto &read = ctx.profile(io::kMetricNames[io::kIoBytesRead]),
             &written = ctx.profile(io::kMetricNames[io::kIoBytesWritten]),
             &mpi = ctx.profile(io::kMetricNames[io::kMpiTime]);
  // Time off the CPU and outside MPI in a rank's region that moved file bytes: its file I/O
  // (waiting in MPI is not; busy polling counts as CPU, so this is a lower bound).
  auto io_off_cpu = [&](size_t at) {
    const bool did_io = read[at] > 0 || written[at] > 0;
    const double in_mpi = at < mpi.size() && !std::isnan(mpi[at]) ? mpi[at] : 0.0;
    return did_io && !std::isnan(cpu[at]) ? std::max(0.0, rows.wall[at] - in_mpi - cpu[at]) : 0.0;
  };
  // Per region (inclusive): wall time, and file I/O off the CPU; means over ranks with data.
  std::vector<kernels::Summary> wall_of(static_cast<size_t>(nreg)), io_of(static_cast<size_t>(nreg)),
      tcpu_of(static_cast<size_t>(nreg));
  for (int32_t l = 0; l < owned; ++l)
    if (!ctx.missing(first + l))
      for (int32_t g = 0; g < nreg; ++g) {
        const size_t at = static_cast<size_t>(l) * nreg + g;
        wall_of[static_cast<size_t>(g)].add(rows.wall[at], first + l);
        io_of[static_cast<size_t>(g)].add(io_off_cpu(at), first + l);
        if (rows.have_os)
          tcpu_of[static_cast<size_t>(g)].add(std::isnan(rows.thread_cpu[at]) ? 0.0 : rows.thread_cpu[at], first + l);
      }
  ctx.allreduce(wall_of);
  ctx.allreduce(io_of);
  ctx.allreduce(tcpu_of);
  auto mean = [](const kernels::Summary &s) { return s.count ? s.mean() : 0.0; };
  // Where a region's I/O is: down the children that hold at least half of it, so that a
  // parent region does not report its child's I/O as its own.
  const auto &children = ctx.children();
  auto io_holder = [&](int32_t g) {
    for (;;) {
      int32_t best = -1;
      for (int32_t k : children[static_cast<size_t>(g)])
        if (best < 0 || mean(io_of[static_cast<size_t>(k)]) > mean(io_of[static_cast<size_t>(best)])) best = k;
      if (best < 0 || mean(io_of[static_cast<size_t>(best)]) < 0.5 * mean(io_of[static_cast<size_t>(g)])) return g;
      g = best;
    }
  };
  std::set<int32_t> io_reported;
  for (int32_t cccr = 1; cccr < nreg; ++cccr) {
    if (!res.cccr[cccr]) continue;
    char buf[160];
    // A region already at the best CPI has nothing to gain from its instructions; what it
    // may lose is its file I/O's time off the CPU, which the CPI model cannot price.
    const bool cpi_known = rows.have_cpi && !std::isnan(cpi[cccr]) && cpi[cccr] > 0;
    const bool priced = cpi_known && res.cpi_best / cpi[cccr] < 0.999;
    const int32_t g = priced ? cccr : io_holder(cccr);
    if (!priced && !io_reported.insert(g).second) continue;  // two CCCRs above the same I/O
    std::vector<kernels::Summary> w = {wall_of[static_cast<size_t>(g)], io_of[static_cast<size_t>(g)]};
    const double off_cpu = mean(w[1]);
    if (priced)
      std::snprintf(buf, sizeof buf, "CRNM %.3g, CPI %.2f against %.2f at best", res.crnm[g - 1], cpi[g], res.cpi_best);
    else if (cpi_known)
      std::snprintf(buf, sizeof buf, "CRNM %.3g at the best CPI (%.2f); %s per rank off the CPU in file I/O",
                    res.crnm[g - 1], cpi[g], format_seconds(off_cpu).c_str());
    else if (rows.have_os && w[0].mean() > 0)
      std::snprintf(buf, sizeof buf, "CRNM %.3g (no CPI), thread CPU / wall %.2f; %s per rank off the CPU in file I/O",
                    res.crnm[g - 1], mean(tcpu_of[static_cast<size_t>(g)]) / w[0].mean(),
                    format_seconds(off_cpu).c_str());
    else
      std::snprintf(buf, sizeof buf,
                    "wall share %.3g; %s per rank off the CPU in file I/O; CPU time at stake unknown without CPI",
                    res.crnm[g - 1], format_seconds(off_cpu).c_str());
    const double share = w[0].mean() / std::max(1e-300, ctx.program_time_s());
    Finding b;
    b.kind = ProblemKind::Disparity;
    b.place = Place::region(g, regions[g].path);
    b.culprits = Culprits::every_rank();
    b.cause = regions[g].path + " is a " + kernels::severity_name(res.sev[g - 1]) +
              " disparity bottleneck: " + format_percent(share) + " of the run, " + buf;
    b.lost_s = priced ? w[0].mean() * (1 - res.cpi_best / cpi[g]) : off_cpu;
    // The fix: the region at the program's best CPI, i.e. its time scaled by best / own.
    if (priced) {
      char factor[32];
      std::snprintf(factor, sizeof factor, "%.4f", res.cpi_best / cpi[g]);
      b.fix = region_fix(Fix::Action::Scale, g, regions[g].path, factor);
    }
    bottlenecks.push_back(std::move(b));
  }
}

void run_disparity(Context &ctx, const config::Values &, StageOutput &out) {
  const DisparityRows rows{ctx.profile("wall"),
                           ctx.profile("PAPI_TOT_CYC"),
                           ctx.profile("PAPI_TOT_INS"),
                           ctx.profile(io::kMetricNames[io::kThreadCpu]),
                           ctx.has_metric("PAPI_TOT_CYC") && ctx.has_metric("PAPI_TOT_INS"),
                           os_recorded(ctx)};
  const DisparityResult res = compute_disparity(ctx, rows);
  ctx.products().publish(res.severity);
  write_disparity(ctx, rows, res, out);
  disparity_bottlenecks(ctx, rows, res);
}

}  // namespace

StageInfo disparity_stage() {
  StageInfo s{"disparity",
              "AutoAnalyzer's code-region disparity: mean CRNM (wall share x CPI) per region, five severities by exact "
              "1-D k-means, critical code regions (CCR, CCCR); falls back to wall share without counters",
              {},
              run_disparity};
  s.provides_products = {product_name<RegionSeverity>(), product_name<Bottlenecks>()};
  return s;
}

}  // namespace perfsift::pipeline
