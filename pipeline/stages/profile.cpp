// Stage `profile`: where the time goes, per region and rank, per MPI operation, and
// who talks to whom — the data behind RPPA's views — plus the first findings:
// regions whose computation is imbalanced, and a program dominated by MPI.
//
// Cost: O(owned ranks x regions) from the profile slices, one streaming pass over the
// owned events (O(events / threads); none when the matched run's build summed them as it
// read them: operation totals); memory O(owned ranks x (regions + used ops) + messages'
// distinct partners + one read of events). Nothing is O(ranks²): the rank x rank
// message matrix is written sparse, one row per (sender, receiver) pair.

#include <algorithm>
#include <map>
#include <cstdio>

#include "pipeline/engine/op_traits.h"
#include "pipeline/engine/operation_totals.h"
#include "pipeline/format/text.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/whatif/fix_questions.h"
#include "pipeline/engine/place.h"
#include "pipeline/whatif/questions.h"

namespace perfsift::pipeline {

namespace {

// MPI start-up and shut-down dominate short runs and no change to the program removes them.

// The owned profile rows the stage reads, [owned][nregions]; NaN when the store lacks the metric.
struct OwnedRows {
  const std::vector<double> &wall, &visits, &mpi;
  int32_t nreg;
  double at(const std::vector<double> &m, int32_t local, int32_t g) const {
    return m.empty() ? std::nan("") : m[static_cast<size_t>(local) * nreg + g];
  }
};

// What the stage measured: summaries over all ranks, and this process's rows of the
// rank x region, rank x operation and rank x rank data.
struct ProfileResult {
  std::vector<kernels::Summary> wall_s, comp_s, mpi_s, visits_s;  // per region
  std::vector<double> comp_self;                                  // [owned][regions]: self wall minus self MPI time
  std::vector<OpTotals> rank_op;                                  // [owned][store ops]
  std::vector<int64_t> site_sums;                                 // per store call site: calls, time_ns, bytes
  std::vector<int32_t> site_op;                                   // per store call site: its op, -1 none
  std::vector<SentByReceiver> sent;                               // per owned rank
  std::vector<int64_t> op_calls;                                  // per store op, over all ranks
  std::vector<size_t> used;                                       // store ops called anywhere: the operation columns
  std::vector<kernels::Summary> op_time;                          // per used op
  std::vector<int64_t> op_sums;                                   // per used op: time_ns, bytes
  kernels::Summary base;                                          // analysed time per rank: wall time without start-up
  double time_base = 0;                                           // the base of shares: the largest analysed time
};

// Computation outside nested regions: self wall time minus self MPI time.
std::vector<double> computation_self(const Context &ctx, const OwnedRows &rows) {
  const int32_t nreg = rows.nreg, first = ctx.first(), owned = ctx.owned();
  const auto &children = ctx.children();
  std::vector<double> comp_self(static_cast<size_t>(owned) * nreg, std::nan(""));
#pragma omp parallel for schedule(static)
  for (int32_t local = 0; local < owned; ++local) {
    if (ctx.missing(first + local)) continue;
    for (int32_t g = 0; g < nreg; ++g) {
      double w = rows.at(rows.wall, local, g), m = rows.at(rows.mpi, local, g);
      for (int32_t c : children[g]) w -= rows.at(rows.wall, local, c), m -= rows.at(rows.mpi, local, c);
      comp_self[static_cast<size_t>(local) * nreg + g] = std::max(0.0, w - std::max(0.0, m));
    }
  }
  return comp_self;
}

// Per region across all ranks: wall, computation, MPI time and visits.
void summarise_regions(const Context &ctx, const OwnedRows &rows, ProfileResult &res) {
  const int32_t nreg = rows.nreg, first = ctx.first(), owned = ctx.owned();
  for (auto *v : {&res.wall_s, &res.comp_s, &res.mpi_s, &res.visits_s}) v->resize(nreg);
#pragma omp parallel for schedule(static)
  for (int32_t g = 0; g < nreg; ++g)
    for (int32_t local = 0; local < owned; ++local) {
      const int32_t r = first + local;
      if (ctx.missing(r)) continue;
      res.wall_s[g].add(rows.at(rows.wall, local, g), r);
      res.mpi_s[g].add(rows.at(rows.mpi, local, g), r);
      res.visits_s[g].add(rows.at(rows.visits, local, g), r);
      res.comp_s[g].add(res.comp_self[static_cast<size_t>(local) * nreg + g], r);
    }
  for (auto *v : {&res.wall_s, &res.comp_s, &res.mpi_s, &res.visits_s}) ctx.allreduce(*v);
}

// One pass over the owned events: totals per rank and operation, messages per receiver;
// returns the indices of each owned rank's MPI_Start* calls. The matched run's build,
// when it ran first, summed them as it read the events (OperationTotals): taken, not read again.
std::vector<std::vector<int64_t>> scan_operations(Context &ctx, ProfileResult &res) {
  OperationTotals totals;
  if (auto summed = ctx.products().take<OperationTotals>()) {
    totals = std::move(*summed);
  } else {
    OperationTally tally(ctx.store().ops(), ctx.store().callsites().size(), ctx.first(), ctx.owned());
    ctx.scan_events("profile: reading events", [&](int32_t rank, int64_t index, const io::Event *b,
                                                   const io::Event *e) { tally.add(rank, index, b, e); });
    totals = tally.take();
  }
  res.rank_op = std::move(totals.rank_op);
  res.site_sums.reserve(totals.site.size() * 3);
  for (const auto &t : totals.site) res.site_sums.insert(res.site_sums.end(), {t.calls, t.time_ns, t.bytes});
  ctx.allreduce_sum(res.site_sums);
  res.site_op = std::move(totals.site_op);  // a site calls one operation: any process's word for it
  MPI_Allreduce(MPI_IN_PLACE, res.site_op.data(), static_cast<int>(res.site_op.size()), MPI_INT32_T, MPI_MAX,
                ctx.comm());
  res.sent = std::move(totals.sent);
  return std::move(totals.start_events);
}

// Persistent sends: each activation by MPI_Start/Startall is a request row of kind send.
void add_persistent_sends(const Context &ctx, const std::vector<std::vector<int64_t>> &start_events,
                          std::vector<SentByReceiver> &sent) {
  const int32_t first = ctx.first();
  int64_t starts = 0;
  for (const auto &v : start_events) starts += static_cast<int64_t>(v.size());
  MPI_Allreduce(MPI_IN_PLACE, &starts, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  if (starts == 0) return;
  using Rows = std::vector<io::RequestRecord>;
  ctx.scan_requests([&](int32_t a, int32_t b, const Rows &rows, const std::vector<int64_t> &off) {
    for (int32_t r = a; r < b; ++r) {
      const auto &st = start_events[static_cast<size_t>(r - first)];
      if (st.empty()) continue;
      auto &mine = sent[static_cast<size_t>(r - first)];
      std::map<int32_t, Channel> merged(mine.begin(), mine.end());
      for (int64_t k = off[r]; k < off[r + 1]; ++k) {
        const auto &q = rows[static_cast<size_t>(k - off[a])];
        if (q.kind != io::kReqSend || q.peer < 0 || !std::binary_search(st.begin(), st.end(), q.event)) continue;
        auto &c = merged[q.peer];
        ++c.count;
        c.bytes += q.bytes;
      }
      mine.assign(merged.begin(), merged.end());
    }
  });
}

// Operations used anywhere become the columns of the rank x operation matrices.
void summarise_operations(const Context &ctx, size_t nops, ProfileResult &res) {
  const int32_t first = ctx.first(), owned = ctx.owned();
  res.op_calls.assign(nops, 0);
  for (int32_t l = 0; l < owned; ++l)
    for (size_t k = 0; k < nops; ++k) res.op_calls[k] += res.rank_op[static_cast<size_t>(l) * nops + k].calls;
  ctx.allreduce_sum(res.op_calls);
  for (size_t k = 0; k < nops; ++k)
    if (res.op_calls[k] > 0) res.used.push_back(k);
  res.op_time.assign(res.used.size(), kernels::Summary{});
  res.op_sums.assign(res.used.size() * 2, 0);
  for (int32_t l = 0; l < owned; ++l)
    for (size_t u = 0; u < res.used.size(); ++u) {
      const auto &o = res.rank_op[static_cast<size_t>(l) * nops + res.used[u]];
      res.op_time[u].add(o.time_ns * 1e-9, first + l);
      res.op_sums[u * 2] += o.time_ns;
      res.op_sums[u * 2 + 1] += o.bytes;
    }
  ctx.allreduce(res.op_time);
  ctx.allreduce_sum(res.op_sums);
}

// The base of shares: wall time without MPI start-up and shut-down.
void analysed_time(const Context &ctx, const OwnedRows &rows, ProfileResult &res) {
  const auto &ops = ctx.store().ops();
  const size_t nops = ops.size();
  const int32_t first = ctx.first(), owned = ctx.owned();
  std::vector<kernels::Summary> base_s(1);
  for (int32_t l = 0; l < owned; ++l) {
    if (ctx.missing(first + l)) continue;
    int64_t startup = 0;
    for (size_t k : res.used)
      if (is_lifecycle_op(ops[k])) startup += res.rank_op[static_cast<size_t>(l) * nops + k].time_ns;
    base_s[0].add(rows.at(rows.wall, l, 0) - startup * 1e-9, first + l);
  }
  ctx.allreduce(base_s);
  res.base = base_s[0];
  res.time_base = res.base.count ? res.base.max : 0.0;
}

ProfileResult compute_profile(Context &ctx, const OwnedRows &rows) {
  ProfileResult res;
  res.comp_self = computation_self(ctx, rows);
  summarise_regions(ctx, rows, res);
  const auto start_events = scan_operations(ctx, res);
  add_persistent_sends(ctx, start_events, res.sent);
  summarise_operations(ctx, ctx.store().ops().size(), res);
  analysed_time(ctx, rows, res);
  return res;
}

void write_region_table(const Context &ctx, const ProfileResult &res, StageOutput &out) {
  const auto &regions = ctx.store().regions();
  const double time_base = res.time_base;
  io::Table t;
  t.description = "per region across ranks; times inclusive unless named self; computation = self time outside MPI";
  auto &path = t.strings("path", "region path; (program) is the whole run");
  auto &nr = t.ints("ranks", "count", "ranks with data for the region");
  auto &vis = t.floats("visits", "count", "entries summed over ranks");
  auto &wmin = t.floats("wall_min_s", "s", "smallest inclusive wall time of a rank");
  auto &wmean = t.floats("wall_mean_s", "s", "mean inclusive wall time over ranks");
  auto &wmax = t.floats("wall_max_s", "s", "largest inclusive wall time of a rank");
  auto &wminr = t.ints("wall_min_rank", "rank", "rank with the smallest wall time");
  auto &wmaxr = t.ints("wall_max_rank", "rank", "rank with the largest wall time");
  auto &wimb = t.floats("wall_imbalance", "ratio", "max / mean - 1 of inclusive wall time");
  auto &mmean = t.floats("mpi_mean_s", "s", "mean inclusive MPI time over ranks");
  auto &mshare = t.floats("mpi_share", "ratio", "MPI time / wall time, summed over ranks");
  auto &cmin = t.floats("comp_min_s", "s", "smallest self computation time of a rank");
  auto &cmean = t.floats("comp_mean_s", "s", "mean self computation time");
  auto &cmax = t.floats("comp_max_s", "s", "largest self computation time");
  auto &cmaxr = t.ints("comp_max_rank", "rank", "rank with the largest computation time");
  auto &cimb = t.floats("comp_imbalance", "ratio", "max / mean - 1 of self computation time");
  auto &waste =
      t.floats("imbalance_waste_s", "s", "comp_max_s - comp_mean_s: wall time balancing could remove at most");
  auto &wshare = t.floats("imbalance_waste_share", "ratio", "imbalance_waste_s / analysed_time_s");
  for (int32_t g = 0; g < ctx.nregions(); ++g) {
    const auto &wall = res.wall_s[g], &comp = res.comp_s[g], &mpi = res.mpi_s[g];
    path.push_back(regions[g].path);
    nr.push_back(wall.count);
    vis.push_back(res.visits_s[g].sum.value());
    const bool any = wall.count > 0;
    wmin.push_back(any ? wall.min : std::nan(""));
    wmean.push_back(wall.mean());
    wmax.push_back(any ? wall.max : std::nan(""));
    wminr.push_back(wall.min_rank);
    wmaxr.push_back(wall.max_rank);
    wimb.push_back(wall.imbalance());
    mmean.push_back(mpi.mean());
    const double wsum = wall.sum.value();
    mshare.push_back(wsum > 0 ? mpi.sum.value() / wsum : 0.0);
    cmin.push_back(any ? comp.min : std::nan(""));
    cmean.push_back(comp.mean());
    cmax.push_back(any ? comp.max : std::nan(""));
    cmaxr.push_back(comp.max_rank);
    cimb.push_back(comp.imbalance());
    const double w = any ? comp.max - comp.mean() : 0.0;
    waste.push_back(w);
    wshare.push_back(time_base > 0 ? w / time_base : 0.0);
  }
  out.table("regions", t);
}

void write_op_table(const Context &ctx, const ProfileResult &res, StageOutput &out) {
  const auto &ops = ctx.store().ops();
  const auto &used = res.used;
  const auto &op_sums = res.op_sums;
  io::Table t;
  t.description = "per MPI operation, summed over ranks";
  auto &name = t.strings("op", "operation");
  auto &calls = t.ints("calls", "count", "calls over all ranks");
  auto &time = t.floats("time_s", "s", "time inside the operation, summed over ranks");
  auto &bytes = t.ints("bytes", "bytes", "bytes moved (sent plus received), summed over ranks");
  auto &share = t.floats("mpi_share", "ratio", "share of all MPI time");
  auto &maxr = t.ints("max_rank", "rank", "rank spending the most time in the operation");
  auto &maxt = t.floats("max_rank_time_s", "s", "that rank's time in the operation");
  int64_t total_ns = 0;
  for (size_t u = 0; u < used.size(); ++u) total_ns += op_sums[u * 2];
  for (size_t u = 0; u < used.size(); ++u) {
    name.push_back(ops[used[u]]);
    calls.push_back(res.op_calls[used[u]]);
    time.push_back(op_sums[u * 2] * 1e-9);
    bytes.push_back(op_sums[u * 2 + 1]);
    share.push_back(total_ns ? static_cast<double>(op_sums[u * 2]) / static_cast<double>(total_ns) : 0.0);
    maxr.push_back(res.op_time[u].max_rank);
    maxt.push_back(res.op_time[u].count ? res.op_time[u].max : 0.0);
  }
  out.table("ops", t);
}

// Per call site called anywhere, summed over ranks: named as a problem's call site is
// (function, file:line, offset; module and module offset when stripped), so that two runs'
// sites compare by name, not by their index into one store's /callsites.
void write_callsite_table(const Context &ctx, const ProfileResult &res, StageOutput &out) {
  const auto &sites = ctx.store().callsites();
  io::Table t;
  t.description = "per MPI call site, summed over ranks";
  auto &op = t.strings("op", "the MPI operation called there");
  auto &function = t.strings("function", "the calling function (the module when unknown)");
  auto &file = t.strings("file", "source file; empty: unknown");
  auto &line = t.ints("line", "", "source line; 0: unknown");
  auto &offset = t.ints("offset", "B", "bytes into the function (into the module when the function is unknown)");
  auto &calls = t.ints("calls", "count", "calls over all ranks");
  auto &time = t.floats("time_s", "s", "time inside the calls, summed over ranks");
  auto &bytes = t.ints("bytes", "bytes", "bytes moved (sent plus received), summed over ranks");
  auto &via = t.strings("via", "the program's own MPI wrapper the calls went through (empty: called directly)");
  for (size_t k = 0; k < sites.size() && 3 * k + 2 < res.site_sums.size(); ++k) {
    if (res.site_sums[3 * k] == 0) continue;
    const CallSiteName name = call_site_name(sites[k]);
    const int32_t o = k < res.site_op.size() ? res.site_op[k] : -1;
    op.push_back(o >= 0 && static_cast<size_t>(o) < ctx.store().ops().size() ? ctx.store().ops()[o] : "");
    function.push_back(name.function);
    file.push_back(name.file);
    line.push_back(name.line);
    offset.push_back(name.offset);
    calls.push_back(res.site_sums[3 * k]);
    time.push_back(static_cast<double>(res.site_sums[3 * k + 1]) * 1e-9);
    bytes.push_back(res.site_sums[3 * k + 2]);
    const auto &w = sites[k].via;
    via.push_back(w.empty()               ? ""
                  : w[0].function.empty() ? site_words(w[0].module, "", 0, w[0].offset)
                                          : site_words(w[0].function, "", 0, w[0].fn_offset));
  }
  out.table("callsites", t);
}

// Rank x region and rank x operation matrices: each process writes its rows.
void write_matrices(const Context &ctx, const OwnedRows &rows, const ProfileResult &res, StageOutput &out) {
  const int32_t nreg = rows.nreg, first = ctx.first(), owned = ctx.owned();
  std::vector<std::string> region_paths;
  for (const auto &r : ctx.store().regions()) region_paths.push_back(r.path);
  auto region_matrix = [&](const std::string &name, const std::string &units, const std::string &desc, auto value) {
    io::MatrixBlock m{units, desc, "rank", "region", region_paths, ctx.nranks(), first, {}};
    m.values.resize(static_cast<size_t>(owned) * nreg);
    for (int32_t l = 0; l < owned; ++l)
      for (int32_t g = 0; g < nreg; ++g)
        m.values[static_cast<size_t>(l) * nreg + g] = ctx.missing(first + l) ? std::nan("") : value(l, g);
    out.matrix(name, m);
  };
  region_matrix("rank_region_wall_s", "s", "inclusive wall time per [rank][region]; NaN: no data",
                [&](int32_t l, int32_t g) { return rows.at(rows.wall, l, g); });
  region_matrix("rank_region_visits", "count", "entries per [rank][region]",
                [&](int32_t l, int32_t g) { return rows.at(rows.visits, l, g); });
  region_matrix("rank_region_mpi_s", "s", "inclusive MPI time per [rank][region]",
                [&](int32_t l, int32_t g) { return rows.at(rows.mpi, l, g); });
  region_matrix("rank_region_comp_s", "s", "self computation time (self wall minus self MPI) per [rank][region]",
                [&](int32_t l, int32_t g) { return res.comp_self[static_cast<size_t>(l) * nreg + g]; });
  const auto &ops = ctx.store().ops();
  const size_t nops = ops.size();
  std::vector<std::string> used_names;
  for (size_t k : res.used) used_names.push_back(ops[k]);
  auto op_matrix = [&](const std::string &name, const std::string &units, const std::string &desc, auto value) {
    io::MatrixBlock m{units, desc, "rank", "op", used_names, ctx.nranks(), first, {}};
    for (int32_t l = 0; l < owned; ++l)
      for (size_t k : res.used) m.values.push_back(value(res.rank_op[static_cast<size_t>(l) * nops + k]));
    out.matrix(name, m);
  };
  op_matrix("rank_op_calls", "count", "calls per [rank][operation]",
            [](const OpTotals &o) { return static_cast<double>(o.calls); });
  op_matrix("rank_op_time_s", "s", "time inside each operation per [rank][operation]",
            [](const OpTotals &o) { return o.time_ns * 1e-9; });
  op_matrix("rank_op_bytes", "bytes", "bytes moved per [rank][operation]",
            [](const OpTotals &o) { return static_cast<double>(o.bytes); });
}

void write_message_table(const Context &ctx, const ProfileResult &res, StageOutput &out) {
  io::Table t;
  t.description = "point-to-point messages per (sender, receiver): the rank x rank matrix, sparse";
  auto &src = t.ints("sender", "rank", "sending rank");
  auto &dst = t.ints("receiver", "rank", "receiving rank");
  auto &cnt = t.ints("messages", "count", "messages sent (blocking, nonblocking and persistent sends, Sendrecv)");
  auto &byt = t.ints("bytes", "bytes", "payload bytes sent");
  for (int32_t l = 0; l < ctx.owned(); ++l)
    for (const auto &[d, c] : res.sent[static_cast<size_t>(l)]) {
      src.push_back(ctx.first() + l);
      dst.push_back(d);
      cnt.push_back(c.count);
      byt.push_back(c.bytes);
    }
  out.table_rows("messages", t);
}

void write_rank_table(const Context &ctx, const OwnedRows &rows, const ProfileResult &res, StageOutput &out) {
  io::Table t;
  t.description = "per rank: the program's totals";
  auto &rank = t.ints("rank", "rank", "application rank");
  auto &w = t.floats("wall_s", "s", "wall time of the program region; NaN: no data");
  auto &m = t.floats("mpi_s", "s", "time in MPI");
  auto &c = t.floats("comp_s", "s", "wall time outside MPI");
  auto &ev = t.ints("events", "count", "MPI calls recorded");
  auto &msg = t.ints("messages_sent", "count", "point-to-point messages sent");
  auto &byt = t.ints("bytes_sent", "bytes", "point-to-point payload bytes sent");
  const auto &off = ctx.store().event_offsets();
  for (int32_t l = 0; l < ctx.owned(); ++l) {
    const int32_t r = ctx.first() + l;
    rank.push_back(r);
    const double wr = ctx.missing(r) ? std::nan("") : rows.at(rows.wall, l, 0);
    const double mr = ctx.missing(r) ? std::nan("") : rows.at(rows.mpi, l, 0);
    w.push_back(wr);
    m.push_back(mr);
    c.push_back(wr - mr);
    ev.push_back(off[r + 1] - off[r]);
    int64_t nm = 0, nb = 0;
    for (const auto &[d, ch] : res.sent[static_cast<size_t>(l)]) nm += ch.count, nb += ch.bytes;
    msg.push_back(nm);
    byt.push_back(nb);
  }
  out.table_rows("ranks", t);
}

void write_profile(const Context &ctx, const OwnedRows &rows, const ProfileResult &res, StageOutput &out) {
  out.attribute("wall_time_s", ctx.wall_time_s());
  out.attribute("program_time_s", ctx.program_time_s());
  out.attribute("analysed_time_s", res.time_base);
  out.attribute("ranks_with_data", res.wall_s[0].count);
  out.attribute("regions", static_cast<int64_t>(ctx.nregions()));
  write_region_table(ctx, res, out);
  write_op_table(ctx, res, out);
  write_callsite_table(ctx, res, out);
  write_matrices(ctx, rows, res, out);
  write_message_table(ctx, res, out);
  write_rank_table(ctx, rows, res, out);
}

// Regions whose computation is imbalanced enough to waste min_waste_share of the run.
void imbalance_findings(Context &ctx, const ProfileResult &res, double min_waste_share) {
  const auto &regions = ctx.store().regions();
  const int32_t nreg = ctx.nregions(), first = ctx.first(), owned = ctx.owned();
  const double time_base = res.time_base;
  for (int32_t g = 0; g < nreg; ++g) {
    const auto &s = res.comp_s[g];
    if (s.count < 2 || time_base <= 0) continue;
    const double mean = s.mean(), waste = s.max - mean;
    if (waste / time_base < min_waste_share) continue;
    // The ranks carrying the excess: in the upper half between mean and max.
    const double cut = mean + 0.5 * waste;
    std::vector<int32_t> heavy;
    for (int32_t l = 0; l < owned; ++l) {
      const double v = res.comp_self[static_cast<size_t>(l) * nreg + g];
      if (!std::isnan(v) && v >= cut) heavy.push_back(first + l);
    }
    const auto ranges = ctx.allgather(kernels::to_ranges(heavy));
    Finding f;
    f.kind = ProblemKind::LoadImbalance;
    f.place = Place::region(g, regions[g].path);
    f.fix = g == 0 ? fix_everywhere(Fix::Action::Balance) : region_fix(Fix::Action::Balance, g, regions[g].path);
    f.culprits.ranks = ranges;
    f.lost_s = waste;
    f.cause = (g == 0 ? std::string("computation outside any region") : "computation in " + regions[g].path) +
              " takes up to " + format_seconds(s.max) + " (rank " + std::to_string(s.max_rank) + ") against " +
              format_seconds(mean) + " on average (imbalance " + format_percent(s.imbalance()) + "); " +
              std::to_string(kernels::count_ranks(ranges)) + " of " + std::to_string(s.count) +
              (kernels::count_ranks(ranges) == 1 ? " ranks carries" : " ranks carry") +
              " the excess and the others wait";
    ctx.findings.push_back(f);
  }
}

// A run where even the rank least in MPI spends min_mpi_share of the run there.
void mpi_time_finding(Context &ctx, const ProfileResult &res, double min_mpi_share) {
  const auto &ops = ctx.store().ops();
  const size_t nops = ops.size();
  const int32_t first = ctx.first(), owned = ctx.owned();
  const auto &used = res.used;
  const auto &op_sums = res.op_sums;
  const double time_base = res.time_base;
  // Start-up and shut-down (MPI_Init, MPI_Finalize) are not communication a program can tune.
  int64_t comm_ns = 0;
  std::vector<size_t> order;
  for (size_t u = 0; u < used.size(); ++u) {
    if (is_lifecycle_op(ops[used[u]])) continue;
    comm_ns += op_sums[u * 2];
    order.push_back(u);
  }
  // The rank least in MPI spends that time communicating, not waiting for others: that
  // much a faster network or fewer messages could save. The rest is waiting (imbalance).
  std::vector<kernels::Summary> comm_rank(1);
  for (int32_t l = 0; l < owned; ++l) {
    if (ctx.missing(first + l)) continue;
    int64_t t = 0;
    for (size_t u : order) t += res.rank_op[static_cast<size_t>(l) * nops + used[u]].time_ns;
    comm_rank[0].add(t * 1e-9, first + l);
  }
  ctx.allreduce(comm_rank);
  const double base_sum = res.base.sum.value();
  const double mpi_share = base_sum > 0 ? comm_ns * 1e-9 / base_sum : 0.0;
  // Communication-bound: even the rank that waits least spends the share in MPI. A
  // high mean share with a low minimum is waiting, reported as imbalance instead.
  if (!(res.wall_s[0].count > 0 && time_base > 0 && comm_rank[0].min / time_base >= min_mpi_share)) return;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return op_sums[a * 2] != op_sums[b * 2] ? op_sums[a * 2] > op_sums[b * 2] : a < b;
  });
  const double ranks_with_data = static_cast<double>(res.wall_s[0].count);
  std::string top;
  for (size_t i = 0; i < order.size() && i < 3; ++i)
    top += (i ? ", " : "") + ops[used[order[i]]] + " " +
           format_seconds(op_sums[order[i] * 2] * 1e-9 / ranks_with_data) + "/rank";
  std::vector<int32_t> present;
  for (int32_t l = 0; l < owned; ++l)
    if (!ctx.missing(first + l)) present.push_back(first + l);
  Finding f;
  f.kind = ProblemKind::MpiTime;
  f.place = Place::program(io::kRootRegionPath);
  f.fix = fix_everywhere(Fix::Action::IdealNetwork);
  f.culprits.ranks = ctx.allgather(kernels::to_ranges(present));
  f.lost_s = comm_rank[0].min;
  f.cause = format_percent(mpi_share) + " of the run is spent in MPI (" +
            format_seconds(comm_ns * 1e-9 / ranks_with_data) + " per rank on average, start-up excluded), most in " +
            top + "; rank " + std::to_string(comm_rank[0].min_rank) + " spends the least, " +
            format_seconds(comm_rank[0].min) + ": communication itself; the rest is waiting for other ranks";
  ctx.findings.push_back(f);
}

void run_profile(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const int32_t nreg = ctx.nregions();
  const OwnedRows rows{ctx.profile(io::kMetricNames[io::kWall]), ctx.profile(io::kMetricNames[io::kVisits]),
                       ctx.profile(io::kMetricNames[io::kMpiTime]), nreg};
  const ProfileResult res = compute_profile(ctx, rows);
  write_profile(ctx, rows, res, out);
  imbalance_findings(ctx, res, cfg.get_float("profile.min_waste_share"));
  mpi_time_finding(ctx, res, cfg.get_float("profile.min_mpi_share"));
}

}  // namespace

StageInfo profile_stage() {
  using config::Type;
  StageInfo s{
      "profile",
      "time per region and rank (min, mean, max, imbalance, MPI share), per MPI operation, and the rank x rank "
      "message matrix; imbalanced regions and MPI-bound runs become findings",
      {
          {"min_waste_share", Type::Float, 0.05, "",
           "report a region whose imbalance wastes at least this share of the run (wall time without MPI start-up)", 0,
           1},
          {"min_mpi_share", Type::Float, 0.25, "",
           "report the run as communication-bound when even the rank least in MPI spends this share of the run "
           "(without MPI start-up) there",
           0, 1},
      },
      run_profile};
  // The matched run's build sums the operations as it reads the events: when a later stage
  // needs the matched run, it is built before this stage (plan_pipeline).
  s.uses_products = {product_name<OperationTotals>()};
  return s;
}

}  // namespace perfsift::pipeline
