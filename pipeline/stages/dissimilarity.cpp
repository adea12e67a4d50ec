// Stage `dissimilarity` (AutoAnalyzer 4.2.1 and Algorithm 2): do the ranks behave
// alike? One performance vector per rank over the code regions (CPU time or computation
// outside MPI, whichever reflects the work: see vector_metric),
// clustered by the simplified OPTICS (Algorithm 1). More than one cluster means a
// dissimilarity bottleneck; the top-down search zeroes each depth-1 region's column
// (then composites of s adjacent ones when none matters), restores children one by one
// and keeps the regions that decide the clustering: CCRs, and the deepest, CCCRs.
//
// Cost: each clustering is O(clusters x ranks / K) per process with cached pivot
// distances (one term updated per changed column, never recomputed) and three small
// collectives per cluster; the search runs O(regions) clusterings. Memory:
// O(owned ranks x regions) plus one cached distance vector per pivot. The full
// distance matrix is written only for small runs (max_matrix_ranks).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "pipeline/format/text.h"
#include "pipeline/engine/mpi_reducer.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/whatif/fix_questions.h"
#include "pipeline/whatif/questions.h"

namespace perfsift::pipeline {

namespace {

struct Search {
  MPI_Comm comm;  // the processes sharing the rows: the analysis's, or this one alone (local search)
  Context &ctx;
  kernels::PivotDistances &pd;
  const std::vector<int64_t> &ids;
  const kernels::OpticsParams &params;
  MpiReducer red;
  std::vector<int64_t> baseline;
  int64_t clusterings = 0;
  // Full OPTICS instead of the simplified one (option): distances recomputed per clustering.
  bool full = false;
  kernels::FullOpticsParams full_params{};
  std::vector<uint8_t> base{};
  kernels::OpticsOrdering ordering{};  // of the last full clustering

  std::vector<int64_t> cluster(const kernels::ColumnChange &change) {
    ++clusterings;
    if (!full) return kernels::simplified_optics(pd, ids, change, params, red);
    std::vector<uint8_t> active = base;
    for (int j : change.off) active[j] = 0;
    for (int j : change.on) active[j] = 1;
    return kernels::full_optics(pd.points(), active, ids, full_params, red, &ordering);
  }
  bool differs(const std::vector<int64_t> &labels) {
    int d = labels != baseline;
    MPI_Allreduce(MPI_IN_PLACE, &d, 1, MPI_INT, MPI_MAX, comm);
    return d != 0;
  }
};

// The measure of the rank vectors and why. "auto" takes CPU time (the paper's) when the
// program's work burns CPU: in the top-level user regions, CPU time beyond the time in MPI
// is at least 5 % of the computation time (wall outside MPI; the excess over MPI time keeps
// an MPI library's busy polling from passing for work; 5 %, not all, because oversubscribed
// or descheduled ranks get a share of a core, while sleeping ranks use almost none). Otherwise (ranks that sleep
// or wait off the CPU) it takes computation outside MPI, so that sleeping and waiting never
// split ranks. Without user regions the columns are call sites, measured in wall time.
struct VectorMetric {
  std::string name, why;
};

VectorMetric vector_metric(Context &ctx, const config::Values &cfg) {
  const std::string m = cfg.get_string("dissimilarity.metric");
  if (m != "auto") return {m, "configured (dissimilarity.metric)"};
  const int32_t nreg = ctx.nregions();
  const auto &wall = ctx.profile(io::kMetricNames[io::kWall]), &cpu = ctx.profile(io::kMetricNames[io::kCpu]),
             &mpi = ctx.profile(io::kMetricNames[io::kMpiTime]);
  std::vector<kernels::FixedSum> sum(2);  // CPU beyond MPI, computation
  for (int32_t l = 0; l < ctx.owned(); ++l)
    for (int32_t g = 1; g < nreg; ++g) {
      const size_t at = static_cast<size_t>(l) * static_cast<size_t>(nreg) + static_cast<size_t>(g);
      if (ctx.depth(g) != 1 || std::isnan(wall[at]) || std::isnan(cpu[at]) || std::isnan(mpi[at])) continue;
      sum[0].add(std::max(0.0, cpu[at] - mpi[at]));
      sum[1].add(std::max(0.0, wall[at] - mpi[at]));
    }
  ctx.allreduce(sum);
  const double share = sum[1].value() > 0 ? sum[0].value() / sum[1].value() : 0.0;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", 100 * share);
  if (share >= 0.05)
    return {"cpu", std::string("auto: CPU time, because CPU time beyond MPI is ") + pct +
                       " of the computation time (the work burns CPU)"};
  return {"comp", std::string("auto: computation outside MPI (wall minus MPI time), because CPU time beyond MPI is "
                              "only ") +
                      pct +
                      " of it (ranks sleep, wait on I/O or are descheduled): waiting and sleeping must not "
                      "split ranks"};
}

int64_t count_clusters(MPI_Comm comm, const std::vector<int64_t> &labels, const std::vector<int64_t> &ids) {
  int64_t pivots = 0;  // a cluster's pivot is its own label
  for (size_t i = 0; i < labels.size(); ++i) pivots += labels[i] == ids[i];
  MPI_Allreduce(MPI_IN_PLACE, &pivots, 1, MPI_INT64_T, MPI_SUM, comm);
  return pivots;
}

// The columns of the rank vectors: code regions, or — for a program without user
// regions (an uninstrumented binary) — regions derived from its MPI call sites: the
// computation burst that ends at each call site, and the time inside it.
struct Columns {
  std::vector<std::string> names;          // [0] is the whole program
  std::vector<Place> places;               // per column: where it is (names: its label)
  std::vector<Fix> fixes;                  // per column: the fix that balances it
  std::vector<std::vector<int32_t>> kids;  // children per column
  std::vector<int> depth;
  std::vector<double> values;  // [owned][names.size()]
  std::string measure;
  bool derived = false;
};

Columns user_regions(Context &ctx, const std::string &metric) {
  Columns c;
  for (const auto &r : ctx.store().regions()) {
    c.names.push_back(r.path);
    c.places.push_back(Place::region(r.id, r.path));
    c.fixes.push_back(r.id == 0 ? fix_everywhere(Fix::Action::Balance)
                                : region_fix(Fix::Action::Balance, r.id, r.path));
  }
  c.kids = ctx.children();
  for (size_t g = 0; g < c.names.size(); ++g) c.depth.push_back(ctx.depth(static_cast<int32_t>(g)));
  if (metric == "comp") {
    // Computation outside MPI: wall minus MPI time, both inclusive. Unlike CPU time it does
    // not count an MPI library's busy polling as work.
    const auto &wall = ctx.profile(io::kMetricNames[io::kWall]), &mpi = ctx.profile(io::kMetricNames[io::kMpiTime]);
    c.values.resize(wall.size());
    for (size_t i = 0; i < wall.size(); ++i)
      c.values[i] = std::isnan(wall[i]) ? wall[i] : std::max(0.0, wall[i] - mpi[i]);
  } else {
    if (!ctx.has_metric(metric)) throw std::runtime_error("dissimilarity: the store has no '" + metric + "' metric");
    c.values = ctx.profile(metric);
  }
  c.measure = metric;
  return c;
}

// With metric cpu a call-site region is the computation burst before the call (wall
// time outside MPI, the CPU time of a rank that does not oversubscribe); with wall, the
// time inside each call site is a region too.
Columns call_site_regions(Context &ctx, bool with_mpi) {
  Columns c;
  const int per = with_mpi ? 2 : 1;
  const auto &sites = ctx.store().callsites();
  const int32_t nsites = static_cast<int32_t>(sites.size()) + 1;  // the last: calls without a site
  c.names.push_back(io::kRootRegionPath);
  c.places.push_back(Place::program(io::kRootRegionPath));
  c.fixes.push_back(fix_everywhere(Fix::Action::Balance));
  for (int32_t k = 0; k < nsites; ++k) {
    // named as every report names a call site: a stripped binary's sites stay distinct
    const std::string where = k + 1 < nsites ? site_label(sites, static_cast<uint64_t>(k)) : "unknown";
    c.names.push_back("compute before #" + std::to_string(k) + " " + where);
    c.places.push_back(
        Place::call_site(sites, static_cast<uint64_t>(k), c.names.back(), Place::Span::ComputationBefore));
    c.fixes.push_back(callsite_fix(Fix::Action::Balance, sites, k));
    if (with_mpi) {
      c.names.push_back("MPI at #" + std::to_string(k) + " " + where);
      c.places.push_back(Place::call_site(sites, static_cast<uint64_t>(k), c.names.back()));
      c.fixes.push_back(callsite_fix(Fix::Action::ZeroWait, sites, k));
    }
  }
  const size_t n = c.names.size();
  c.kids.assign(n, {});
  c.depth.assign(n, 1);
  c.depth[0] = 0;
  for (size_t g = 1; g < n; ++g) c.kids[0].push_back(static_cast<int32_t>(g));
  c.values.assign(static_cast<size_t>(ctx.owned()) * n, 0.0);
  std::vector<int64_t> prev_exit(static_cast<size_t>(ctx.owned()), -1);
  ctx.scan_events(
      "dissimilarity: call-site regions", [&](int32_t rank, int64_t, const io::Event *b, const io::Event *e) {
        const size_t l = static_cast<size_t>(rank - ctx.first());
        for (const io::Event *x = b; x < e; ++x) {
          const int64_t site = static_cast<int64_t>(x->site);
          const size_t k = site >= 0 && site + 1 < nsites ? static_cast<size_t>(site) : static_cast<size_t>(nsites - 1);
          if (prev_exit[l] >= 0)
            c.values[l * n + 1 + per * k] += std::max<int64_t>(0, x->t_enter - prev_exit[l]) * 1e-9;
          if (with_mpi) c.values[l * n + 2 + per * k] += (x->t_exit - x->t_enter) * 1e-9;
          prev_exit[l] = x->t_exit;
        }
      });
  c.measure = with_mpi ? "wall" : "computation (wall time between MPI calls)";
  c.derived = true;
  return c;
}

// The rank vectors this process holds: owned ranks with data, not excluded; columns:
// regions 1..nreg-1, an excluded region's zero.
struct RankVectors {
  std::vector<int64_t> ids;              // the clustered owned ranks, ascending
  kernels::RowMatrix points;             // [ids][regions 1..nreg-1]
  std::vector<uint8_t> base;             // per column: 1 for the depth-1 regions in the search
  std::vector<int32_t> top;              // depth-1 regions in the search
  std::vector<uint8_t> region_excluded;  // per region
};

RankVectors rank_vectors(Context &ctx, const config::Values &cfg, const Columns &cols) {
  const int32_t first = ctx.first(), owned = ctx.owned();
  const auto &names = cols.names;
  const int32_t nreg = static_cast<int32_t>(names.size());
  RankVectors v;
  std::vector<int32_t> excluded_ranks;
  if (!cfg.get_string("dissimilarity.exclude_ranks").empty())
    excluded_ranks = kernels::parse_ranks(cfg.get_string("dissimilarity.exclude_ranks"), ctx.nranks());
  v.region_excluded.assign(static_cast<size_t>(nreg), 0);
  for (const auto &p : cfg.get_list("dissimilarity.exclude_regions")) {
    bool found = false;
    for (int32_t g = 1; g < nreg; ++g)
      if (names[g] == p || names[g].rfind(p + "/", 0) == 0) v.region_excluded[g] = 1, found = true;
    if (!found) ctx.warnings.push_back("dissimilarity.exclude_regions: no region '" + p + "' in this store");
  }
  for (int32_t l = 0; l < owned; ++l) {
    const int32_t r = first + l;
    if (!ctx.missing(r) && !std::binary_search(excluded_ranks.begin(), excluded_ranks.end(), r)) v.ids.push_back(r);
  }
  const int32_t ncol = std::max(0, nreg - 1);
  v.points.resize(static_cast<Eigen::Index>(v.ids.size()), ncol);
  for (size_t i = 0; i < v.ids.size(); ++i)
    for (int32_t g = 1; g < nreg; ++g) {
      const double x = cols.values[static_cast<size_t>(v.ids[i] - first) * nreg + g];
      v.points(static_cast<Eigen::Index>(i), g - 1) = v.region_excluded[g] || std::isnan(x) ? 0.0 : x;
    }
  v.base.assign(static_cast<size_t>(ncol), 0);
  for (int32_t g = 1; g < nreg; ++g)
    if (cols.depth[g] == 1 && !v.region_excluded[g]) v.base[g - 1] = 1, v.top.push_back(g);
  return v;
}

struct Composite {
  std::vector<int32_t> members;
  bool ccr = false;
};

// Algorithm 2's answer: the critical code regions, and the composites of adjacent
// depth-1 regions tried when no single one decides.
struct CriticalRegions {
  std::vector<uint8_t> ccr, cccr;  // per region
  std::vector<Composite> composites;
  int64_t composite_size = 0;
};

// Algorithm 2 over the baseline clustering of `s` (which has more than one cluster).
struct CriticalSearch {
  Search &s;
  const Columns &cols;
  const std::vector<uint8_t> &region_excluded;
  CriticalRegions found;

  // `g` is a CCR with the columns `zeroed` off; a CCCR when none of its children is a CCR.
  void mark(int32_t g, const std::vector<int> &zeroed) {
    found.ccr[g] = 1;
    if (!analyse_children(g, zeroed)) found.cccr[g] = 1;  // a leaf, or no child is a CCR
  }
  // Below a CCR whose columns `zeroed` are off: a child whose column alone restores the
  // baseline clustering is a CCR; recurse into it.
  bool analyse_children(int32_t node, const std::vector<int> &zeroed) {
    bool any = false;
    for (int32_t k : cols.kids[node]) {
      if (region_excluded[k]) continue;
      if (!s.differs(s.cluster({zeroed, {k - 1}}))) {
        any = true;
        mark(k, zeroed);
      }
    }
    return any;
  }
  void single_regions(Context &ctx, const std::vector<int32_t> &top) {
    ctx.progress().begin("dissimilarity: searching critical code regions");
    for (size_t t = 0; t < top.size(); ++t) {
      const int32_t j = top[t];
      if (s.differs(s.cluster({{j - 1}, {}}))) mark(j, {j - 1});
      ctx.progress().update(static_cast<double>(t + 1) / static_cast<double>(top.size()));
    }
    ctx.progress().end();
  }
  // No single region decides: composites of sz adjacent depth-1 regions, sz = 2 .. r-1.
  void composites(const std::vector<int32_t> &top) {
    for (int64_t sz = 2; sz < static_cast<int64_t>(top.size()); ++sz) {
      if (composites_of_size(top, sz)) {
        found.composite_size = sz;
        return;
      }
      found.composites.clear();
    }
  }
  bool composites_of_size(const std::vector<int32_t> &top, int64_t sz) {
    bool any = false;
    for (size_t a = 0; a < top.size(); a += static_cast<size_t>(sz)) {
      Composite c;
      std::vector<int> columns;
      for (size_t b = a; b < std::min(top.size(), a + static_cast<size_t>(sz)); ++b)
        c.members.push_back(top[b]), columns.push_back(top[b] - 1);
      if (c.members.size() < 2) continue;
      if (s.differs(s.cluster({columns, {}}))) {
        c.ccr = any = true;
        for (int32_t m : c.members) {  // a member that alone restores the baseline
          std::vector<int> others;
          for (int col : columns)
            if (col != m - 1) others.push_back(col);
          if (!s.differs(s.cluster({others, {}}))) mark(m, columns);
        }
      }
      found.composites.push_back(std::move(c));
    }
    return any;
  }
};

CriticalRegions critical_regions(Context &ctx, Search &s, const Columns &cols, const RankVectors &v,
                                 int64_t nclusters) {
  const size_t nreg = cols.names.size();
  CriticalSearch search{s, cols, v.region_excluded, {}};
  search.found.ccr.assign(nreg, 0);
  search.found.cccr.assign(nreg, 0);
  if (nclusters <= 1) return search.found;
  search.single_regions(ctx, v.top);
  const auto &ccr = search.found.ccr;
  if (std::none_of(ccr.begin(), ccr.end(), [](uint8_t c) { return c != 0; })) search.composites(v.top);
  return search.found;
}

// Cluster sizes by pivot, gathered (small: the number of clusters), and the largest.
struct ClusterSizes {
  std::map<int64_t, int64_t> sizes;
  int64_t major = -1, major_size = 0;
};

ClusterSizes cluster_sizes(Context &ctx, const std::vector<int64_t> &labels) {
  ClusterSizes c;
  std::map<int64_t, int64_t> mine;
  for (int64_t l : labels) ++mine[l];
  for (auto [k, v] : ctx.allgatherv(std::vector<std::pair<int64_t, int64_t>>(mine.begin(), mine.end())))
    c.sizes[k] += v;
  for (auto [k, v] : c.sizes)
    if (v > c.major_size) c.major = k, c.major_size = v;
  return c;
}

// The share of region time that deviates from the largest cluster (sum over ranks
// outside it of |V_i - centroid| / sum over all ranks of |V_i|, L1).
double severity(Context &ctx, const RankVectors &v, const std::vector<int64_t> &labels, const ClusterSizes &c,
                int64_t nclusters) {
  const int32_t ncol = static_cast<int32_t>(v.points.cols());
  std::vector<kernels::FixedSum> centroid(static_cast<size_t>(ncol));
  for (size_t i = 0; i < v.ids.size(); ++i)
    if (labels[i] == c.major)
      for (int32_t col = 0; col < ncol; ++col)
        if (v.base[col]) centroid[col].add(v.points(static_cast<Eigen::Index>(i), col));
  ctx.allreduce(centroid);
  std::vector<kernels::FixedSum> dev(2);  // deviation outside the major cluster, total
  for (size_t i = 0; i < v.ids.size(); ++i)
    for (int32_t col = 0; col < ncol; ++col) {
      if (!v.base[col]) continue;
      const double x = v.points(static_cast<Eigen::Index>(i), col);
      dev[1].add(std::fabs(x));
      if (labels[i] != c.major) dev[0].add(std::fabs(x - centroid[col].value() / static_cast<double>(c.major_size)));
    }
  ctx.allreduce(dev);
  return nclusters > 1 && dev[1].value() > 0 ? dev[0].value() / dev[1].value() : 0.0;
}

// What the stage found: the ranks' clusters and the regions that decide them.
struct DissimilarityResult {
  Columns cols;
  RankVectors vectors;
  std::vector<int64_t> labels;  // per clustered owned rank: its cluster (the pivot)
  int64_t nclusters = 0, npoints = 0, clusterings = 0;
  CriticalRegions critical;
  ClusterSizes clusters;
  double severity = 0;
  bool full = false;                 // full OPTICS: the ordering and extract radius below
  kernels::OpticsOrdering ordering;  // of the baseline clustering
  double extract_radius = 0;
  std::string metric_why;
  double radius_floor = 0;    // the scale-free part of the radius (spread_fraction x spread)
  bool local_search = false;  // every process searched all rows alone (local_max_cells)
};

// Every process's rank vectors on every process, in rank order, and where this process's
// rows begin among them.
struct RowsOnAll {
  kernels::RowMatrix points;
  std::vector<int64_t> ids;
  int64_t first = 0;
};

RowsOnAll rows_on_all(Context &ctx, const kernels::RowMatrix &points, const std::vector<int64_t> &ids) {
  RowsOnAll all;
  const Eigen::Index ncol = points.cols();
  std::vector<double> mine(static_cast<size_t>(points.rows() * ncol));
  for (Eigen::Index i = 0; i < points.rows(); ++i)
    for (Eigen::Index c = 0; c < ncol; ++c) mine[static_cast<size_t>(i * ncol + c)] = points(i, c);
  const std::vector<double> values = ctx.allgatherv(mine);
  all.ids = ctx.allgatherv(ids);
  int64_t before = static_cast<int64_t>(ids.size());
  MPI_Exscan(MPI_IN_PLACE, &before, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  int me = 0;
  MPI_Comm_rank(ctx.comm(), &me);
  all.first = me == 0 ? 0 : before;
  all.points.resize(static_cast<Eigen::Index>(all.ids.size()), ncol);
  for (Eigen::Index i = 0; i < all.points.rows(); ++i)
    for (Eigen::Index c = 0; c < ncol; ++c) all.points(i, c) = values[static_cast<size_t>(i * ncol + c)];
  return all;
}

DissimilarityResult compute_dissimilarity(Context &ctx, const config::Values &cfg) {
  const VectorMetric vm = vector_metric(ctx, cfg);
  const std::string &metric = vm.name;
  const std::string source = cfg.get_string("dissimilarity.regions");
  const bool derive = source == "call-sites" || (source == "auto" && ctx.nregions() <= 1);
  DissimilarityResult r;
  r.cols = derive ? call_site_regions(ctx, metric == "wall") : user_regions(ctx, metric);
  r.metric_why = derive ? std::string("call-site regions are measured in wall time (computation between MPI calls")
                              .append(metric == "wall" ? ", and the time in them)" : ")")
                        : vm.why;
  r.vectors = rank_vectors(ctx, cfg, r.cols);
  const auto &points = r.vectors.points;
  const auto &base = r.vectors.base;
  const auto &ids = r.vectors.ids;
  const kernels::OpticsParams params = optics_params(ctx, cfg, points, base);
  r.radius_floor = params.min_radius;
  const bool full = cfg.get_string("dissimilarity.algorithm") == "optics";
  const double mean_length = full ? radius_floor(ctx, "pivot-or-mean", points, base) : 0.0;
  r.npoints = static_cast<int64_t>(ids.size());
  MPI_Allreduce(MPI_IN_PLACE, &r.npoints, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  // The search makes O(regions) clusterings of a few reductions each: on several processes
  // that is latency, not work, for the few ranks most runs have. Up to local_max_cells
  // vector entries every process takes all rows and searches alone, with the same result.
  int nprocs = 1;
  MPI_Comm_size(ctx.comm(), &nprocs);
  r.local_search =
      nprocs > 1 && r.npoints * static_cast<int64_t>(points.cols()) <= cfg.get_int("dissimilarity.local_max_cells");
  const RowsOnAll all = r.local_search ? rows_on_all(ctx, points, ids) : RowsOnAll{};
  const kernels::RowMatrix &search_points = r.local_search ? all.points : points;
  const std::vector<int64_t> &search_ids = r.local_search ? all.ids : ids;
  const MPI_Comm comm = r.local_search ? MPI_COMM_SELF : ctx.comm();
  kernels::PivotDistances pd(search_points, base);
  Search s{comm, ctx, pd, search_ids, params, MpiReducer{comm, search_points, search_ids}, {}};
  s.full = full;
  if (s.full) {
    // Clusters are cut at radius_fraction x the mean vector length.
    s.full_params = {cfg.get_int("dissimilarity.min_pts"),
                     std::max(params.radius_fraction * mean_length, params.min_radius)};
    s.base = base;
  }
  s.baseline = s.cluster({});
  r.ordering = s.ordering;
  r.nclusters = count_clusters(comm, s.baseline, search_ids);
  r.critical = critical_regions(ctx, s, r.cols, r.vectors, r.nclusters);
  // This process's rows' labels (all rows' in a local search).
  r.labels.assign(s.baseline.begin() + all.first, s.baseline.begin() + all.first + static_cast<int64_t>(ids.size()));
  r.clusterings = s.clusterings;
  r.clusters = cluster_sizes(ctx, r.labels);
  r.severity = severity(ctx, r.vectors, r.labels, r.clusters, r.nclusters);
  r.full = s.full;
  r.extract_radius = s.full_params.extract_radius;
  return r;
}

void write_cluster_tables(const DissimilarityResult &r, StageOutput &out) {
  {
    io::Table t;
    t.description = "each clustered rank's cluster, named by its lowest rank (the simplified OPTICS pivot)";
    auto &rank = t.ints("rank", "rank", "application rank");
    auto &cl = t.ints("cluster", "rank", "cluster: its lowest member");
    for (size_t i = 0; i < r.vectors.ids.size(); ++i) rank.push_back(r.vectors.ids[i]), cl.push_back(r.labels[i]);
    out.table_rows("ranks", t);
  }
  io::Table t;
  t.description = "clusters of ranks by " + r.cols.measure + " time per region";
  auto &id = t.ints("cluster", "rank", "cluster id: its lowest member, its representative");
  auto &size = t.ints("size", "count", "ranks in the cluster");
  auto &major_col = t.ints("largest", "", "1 for the largest cluster (the reference of the severity)");
  for (auto [k, v] : r.clusters.sizes) id.push_back(k), size.push_back(v), major_col.push_back(k == r.clusters.major);
  out.table("cluster_table", t);
}

void write_ccr_table(const DissimilarityResult &r, StageOutput &out) {
  const auto &names = r.cols.names;
  io::Table t;
  t.description = "critical code regions of the dissimilarity search (Algorithm 2)";
  auto &path = t.strings("path", "region path, or members joined by + for a composite");
  auto &depth = t.ints("depth", "", "depth in the region tree (1 = below the program)");
  auto &is_cccr = t.ints("cccr", "", "1 for a core of critical code regions: a CCR none of whose children is one");
  for (size_t g = 1; g < names.size(); ++g)
    if (r.critical.ccr[g])
      path.push_back(names[g]), depth.push_back(r.cols.depth[g]), is_cccr.push_back(r.critical.cccr[g]);
  for (const auto &c : r.critical.composites)
    if (c.ccr) {
      std::string name;
      for (int32_t m : c.members) name += (name.empty() ? "" : "+") + names[m];
      path.push_back(name), depth.push_back(1), is_cccr.push_back(0);
    }
  out.table("ccr_table", t);
}

void write_optics_ordering(const DissimilarityResult &r, StageOutput &out) {
  const kernels::OpticsOrdering &o = r.ordering;
  io::Table t;
  t.description = "OPTICS reachability ordering of the ranks (the reachability plot): valleys are clusters";
  auto &rank = t.ints("rank", "rank", "application rank, in ordering order");
  auto &reach = t.floats("reachability", "s", "reachability distance; NaN for the first of a component");
  auto &core = t.floats("core_distance", "s", "distance to the (min_pts - 1)-th nearest other rank");
  for (size_t k = 0; k < o.order.size(); ++k) {
    rank.push_back(o.order[k]);
    reach.push_back(std::isinf(o.reachability[k]) ? std::nan("") : o.reachability[k]);
    core.push_back(std::isinf(o.core_distance[k]) ? std::nan("") : o.core_distance[k]);
  }
  out.attribute("extract_radius", r.extract_radius);
  out.table("optics_ordering", t);
}

// Small runs: the whole distance matrix, each process its rows against all points.
void write_distance_matrix(Context &ctx, const DissimilarityResult &r, StageOutput &out) {
  const auto &ids = r.vectors.ids;
  const auto &points = r.vectors.points;
  const int64_t npoints = r.npoints;
  const int32_t ncol = static_cast<int32_t>(points.cols());
  std::vector<double> mine(points.data(), points.data() + points.size());
  for (size_t i = 0; i < ids.size(); ++i)
    for (int32_t c = 0; c < ncol; ++c)
      if (!r.vectors.base[c]) mine[i * ncol + c] = 0;
  const std::vector<double> all = ctx.allgatherv(mine);
  // Pair by pair in a fixed order (not a GEMM, whose rounding depends on the tile
  // shapes): the same bits for any number of processes.
  kernels::RowMatrix d(static_cast<Eigen::Index>(ids.size()), static_cast<Eigen::Index>(npoints));
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t j = 0; j < npoints; ++j) {
      double s2 = 0;
      for (int32_t c = 0; c < ncol; ++c) {
        const double x = mine[i * ncol + c] - all[static_cast<size_t>(j) * ncol + c];
        s2 += x * x;
      }
      d(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = std::sqrt(s2);
    }
  const std::vector<int64_t> all_ids = ctx.allgatherv(ids);
  std::vector<std::string> labels;
  for (int64_t id : all_ids) labels.push_back(std::to_string(id));
  int64_t row_first = 0, mine_rows = static_cast<int64_t>(ids.size());
  MPI_Exscan(&mine_rows, &row_first, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  if (ctx.me() == 0) row_first = 0;
  io::MatrixBlock m{"s",       "Euclidean distance between the ranks' vectors of depth-1 region times",
                    "rank",    "rank",
                    labels,    npoints,
                    row_first, std::vector<double>(d.data(), d.data() + d.size())};
  out.matrix("distance", m);
}

void write_dissimilarity(Context &ctx, const config::Values &cfg, const DissimilarityResult &r, StageOutput &out) {
  out.attribute("metric", r.cols.measure);
  out.attribute("metric_why", r.metric_why);
  out.attribute("radius_spread_floor", r.radius_floor);
  out.attribute("regions_from",
                std::string(r.cols.derived ? "call sites: the computation before each MPI call site (and with metric "
                                             "wall the time in it); #N is row N of the store's /callsites"
                                           : "user regions"));
  out.attribute("cluster_count", r.nclusters);
  out.attribute("severity", r.severity);
  out.attribute("ranks_clustered", r.npoints);
  out.attribute("clusterings", r.clusterings);
  out.attribute("composite_size", r.critical.composite_size);
  write_cluster_tables(r, out);
  write_ccr_table(r, out);
  out.attribute("algorithm", cfg.get_string("dissimilarity.algorithm"));
  if (r.full) write_optics_ordering(r, out);
  if (r.npoints <= cfg.get_int("dissimilarity.max_matrix_ranks") && r.npoints > 0) write_distance_matrix(ctx, r, out);
}

// The ranks that carry the excess in column g: the members of the clusters whose mean there
// is above the mean over all clustered ranks by at least half the largest such excess (the
// slow ranks, whether few or many; not a cluster a little above the mean).
kernels::RankRanges culprit_ranks(Context &ctx, const DissimilarityResult &r, int32_t g) {
  const auto &ids = r.vectors.ids;
  const int32_t first = ctx.first(), nreg = static_cast<int32_t>(r.cols.names.size());
  std::map<int64_t, size_t> index;
  for (const auto &[label, size] : r.clusters.sizes) index.emplace(label, index.size());
  std::vector<kernels::FixedSum> sum(index.size() + 1);  // per cluster, then all
  for (size_t i = 0; i < ids.size(); ++i) {
    const double x = r.cols.values[static_cast<size_t>(ids[i] - first) * nreg + g];
    if (std::isnan(x)) continue;
    sum[index.at(r.labels[i])].add(x);
    sum.back().add(x);
  }
  ctx.allreduce(sum);
  const double mean = r.npoints ? sum.back().value() / static_cast<double>(r.npoints) : 0.0;
  std::map<int64_t, double> excess;  // per cluster: its mean above the overall mean
  double largest = 0;
  for (const auto &[label, k] : index) {
    excess[label] = sum[k].value() / static_cast<double>(r.clusters.sizes.at(label)) - mean;
    largest = std::max(largest, excess[label]);
  }
  std::vector<int32_t> culprits;
  for (size_t i = 0; i < ids.size(); ++i)
    if (largest > 0 && excess.at(r.labels[i]) >= 0.5 * largest) culprits.push_back(static_cast<int32_t>(ids[i]));
  return ctx.allgather(kernels::to_ranges(culprits));
}

// A bottleneck per CCCR; its ranks: those whose cluster carries the excess in that region.
void dissimilarity_findings(Context &ctx, const DissimilarityResult &r) {
  if (r.nclusters <= 1) return;
  const auto &cols = r.cols;
  const auto &ids = r.vectors.ids;
  const std::string &metric = r.cols.measure;
  const std::string metric_word = cols.derived ? (metric == "wall" ? "wall" : "computation") : metric;
  const int32_t first = ctx.first(), nreg = static_cast<int32_t>(cols.names.size());
  auto &bottlenecks = ctx.products().get_or_publish<Bottlenecks>().items;
  for (int32_t g = 1; g < nreg; ++g) {
    if (!r.critical.cccr[g]) continue;
    std::vector<kernels::Summary> one(1);
    for (size_t i = 0; i < ids.size(); ++i)
      one[0].add(cols.values[static_cast<size_t>(ids[i] - first) * nreg + g], ids[i]);
    ctx.allreduce(one);
    const kernels::RankRanges ranks = culprit_ranks(ctx, r, g);
    char sev[32];
    std::snprintf(sev, sizeof sev, "%.2f", r.severity);
    Finding b;
    b.kind = ProblemKind::Dissimilarity;
    b.place = cols.places[static_cast<size_t>(g)];
    b.culprits.ranks = ranks;
    b.cause = "ranks fall into " + std::to_string(r.nclusters) + " clusters by " + metric_word + " time per " +
              (cols.derived ? "call-site region" : "region") + " (severity " + sev + "); " + cols.names[g] +
              " decides the split: " + format_seconds(one[0].min) + " to " + format_seconds(one[0].max) + " per rank";
    b.lost_s = one[0].max - one[0].mean();
    b.fix = cols.fixes[static_cast<size_t>(g)];
    bottlenecks.push_back(std::move(b));
  }
}

void run_dissimilarity(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const DissimilarityResult r = compute_dissimilarity(ctx, cfg);
  // For rootcause: each owned rank's cluster (-1 when not clustered).
  RankClusters clusters;
  clusters.cluster_of_owned.assign(static_cast<size_t>(ctx.owned()), -1);
  for (size_t i = 0; i < r.vectors.ids.size(); ++i)
    clusters.cluster_of_owned[r.vectors.ids[i] - ctx.first()] = r.labels[i];
  ctx.products().publish(std::move(clusters));
  write_dissimilarity(ctx, cfg, r, out);
  dissimilarity_findings(ctx, r);
}

}  // namespace

StageInfo dissimilarity_stage() {
  using config::Type;
  config::KeyDef metric{
      "metric", Type::String, std::string("auto"), "",
      "per-region measure of the rank vectors: auto (cpu when the work burns CPU, else comp: waiting and sleeping "
      "never split ranks; the results say which and why), cpu (the paper; includes an MPI library's busy polling "
      "and misses sleeping or blocking I/O), comp (wall time outside MPI) or wall"};
  metric.choices = {"auto", "cpu", "comp", "wall"};
  config::KeyDef radius_ref{
      "radius_reference", Type::String, std::string("pivot-or-mean"), "",
      "length the radius is a share of: pivot (the paper) or pivot-or-mean (the larger of the pivot's and "
      "the mean vector length, so nearly idle ranks can group)"};
  radius_ref.choices = {"pivot", "pivot-or-mean"};
  config::KeyDef algorithm{
      "algorithm", Type::String, std::string("simplified"), "",
      "simplified (the paper's Algorithm 1: one pass per cluster, with a scale-free radius: at least "
      "spread_fraction x the spread of the rank vectors, radius_fraction x the mean length and noise_share of the "
      "run), paper (Algorithm 1 with the paper's radius alone: radius_fraction x the pivot's length) or optics "
      "(full OPTICS: reachability ordering, clusters cut at the larger of radius_fraction x the mean vector length "
      "and the spread floor; O(ranks^2) work per clustering)"};
  algorithm.choices = {"simplified", "paper", "optics"};
  config::KeyDef regions_key{
      "regions", Type::String, std::string("auto"), "",
      "vector columns: user regions; call-sites (for uninstrumented binaries: the computation burst ending at "
      "each MPI call site, with metric wall also the time in it; wall time); or auto (call sites when the "
      "store has no user regions)"};
  regions_key.choices = {"auto", "user", "call-sites"};
  StageInfo s{"dissimilarity",
              "AutoAnalyzer's process dissimilarity: clusters ranks by their per-region time (simplified OPTICS) and "
              "searches the critical code regions that split them (CCR, CCCR; Algorithm 2)",
              {
                  metric,
                  algorithm,
                  {"min_pts", Type::Int, int64_t{2}, "",
                   "optics: ranks (itself included) within the radius that make a rank a core point", 1, 1e6},
                  {"radius_fraction", Type::Float, 0.1, "",
                   "neighbourhood radius as a share of the pivot vector's length (paper: 10%)", 1e-6, 10},
                  radius_ref,
                  {"spread_fraction", Type::Float, 0.3, "",
                   "ranks closer than this share of the spread of the rank vectors (the largest distance of a "
                   "rank's vector from the mean vector) always group, whatever their vectors' length",
                   0, 1},
                  {"noise_share", Type::Float, 0.01, "",
                   "vector lengths below this share of the run's wall time count as noise: the radius is at least "
                   "radius_fraction x noise_share x wall time",
                   0, 1},
                  {"count_threshold", Type::Int, int64_t{0}, "",
                   "a pivot with more neighbours than this forms a cluster; fewer: an isolated point", 0, 1e9},
                  {
                      "exclude_ranks",
                      Type::String,
                      std::string(""),
                      "",
                      "ranks left out, e.g. a master: 0 or 0-1,7",
                  },
                  {"exclude_regions", Type::StringList, std::vector<std::string>{}, "",
                   "region paths left out with their subtrees (management routines)"},
                  {"max_matrix_ranks", Type::Int, int64_t{256}, "",
                   "write the rank x rank distance matrix up to this many ranks", 0, 65536},
                  {"local_max_cells", Type::Int, int64_t{1} << 22, "",
                   "up to this many rank-vector entries (ranks x regions) every analysis process searches all "
                   "ranks alone, without a reduction per step (the same result); 0: always together",
                   0, 1e12},
                  regions_key,
              },
              run_dissimilarity};
  s.provides_products = {product_name<RankClusters>(), product_name<Bottlenecks>()};
  return s;
}

}  // namespace perfsift::pipeline
