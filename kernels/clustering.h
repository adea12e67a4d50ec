// Process-dissimilarity clustering (AutoAnalyzer Algorithm 1, the simplified OPTICS):
// take the lowest-numbered point not yet in a cluster as pivot; count the points
// closer to it than `radius_fraction` x the pivot vector's length (the paper: 10 %;
// points identical to the pivot count too, so zero vectors cluster together);
// if more than `count_threshold`, the pivot and its unclustered neighbours form a
// cluster, else the pivot alone is one (an isolated point). Repeat until every point
// is in a cluster. A cluster is labelled by its pivot (its lowest member), so two
// clusterings are equal exactly when their label vectors are.
//
// Points may be spread over processes: each holds a block of rows, and the driver asks
// a `Reducer` (min and sum over processes, and the pivot's row from its owner) —
// identity for one process, MPI in the pipeline. Cost per clustering: O(clusters x
// points) with cached pivot distances, O(clusters x points x columns) without.
//
// Column masks: Algorithm 2 clusters the same points many times with one or two region
// columns zeroed or restored. PivotDistances keeps each pivot's squared distances under
// a base mask and updates them by the changed columns' terms — never recomputes.
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

namespace perfsift::kernels {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Squared Euclidean distances between the rows of A and of B (a tile of the full
// matrix): |a|^2 + |b|^2 - 2 A B^T through one GEMM. Clamped at 0.
RowMatrix squared_distance_tile(const RowMatrix &a, const RowMatrix &b);

// A change of columns relative to the base mask.
struct ColumnChange {
  std::vector<int> off;  // base columns treated as zero
  std::vector<int> on;   // columns outside the base added back
};

class PivotDistances {
 public:
  // `points`: this process's rows; `base`: 1 for columns in the base vectors.
  PivotDistances(const RowMatrix &points, std::vector<uint8_t> base);
  // Squared distances from the pivot (global id, its full row) to every local point,
  // under base + change.
  const std::vector<double> &distances(int64_t pivot, const std::vector<double> &pivot_row, const ColumnChange &change);
  // Squared length of a row under base + change.
  double squared_length(const std::vector<double> &row, const ColumnChange &change) const;
  const RowMatrix &points() const { return m_points; }

 private:
  const RowMatrix &m_points;
  std::vector<uint8_t> m_base;
  std::map<int64_t, std::vector<double>> m_cache;  // pivot -> base distances
  std::vector<double> m_scratch;
};

struct OpticsParams {
  double radius_fraction = 0.1;
  int64_t count_threshold = 0;
  // The radius is radius_fraction x max(pivot length, length_floor). The paper uses the
  // pivot's length alone (floor 0); then nearly idle ranks, whose vectors are short,
  // never group however alike they are. A floor such as the mean length fixes that.
  double length_floor = 0;
  // And never below this absolute radius (e.g. a share of the spread of the vectors, which
  // makes the rule scale-free); 0 is the paper.
  double min_radius = 0;
};

// Serial reducer: the whole point set is local, ids 0..rows-1.
struct LocalReducer {
  const RowMatrix &points;
  int64_t min(int64_t v) const { return v; }
  int64_t sum(int64_t v) const { return v; }
  std::vector<double> row(int64_t id) const {
    return std::vector<double>(points.row(id).data(), points.row(id).data() + points.cols());
  }
  // The smallest (value, id) pair.
  std::pair<double, int64_t> argmin(std::pair<double, int64_t> v) const { return v; }
  // The k smallest of every process's values, ascending.
  std::vector<double> smallest(std::vector<double> v, size_t k) const {
    std::sort(v.begin(), v.end());
    if (v.size() > k) v.resize(k);
    return v;
  }
};

// Labels (cluster pivots, global ids) of the local points, whose global ids are `ids`
// (ascending).
template <class Reducer>
std::vector<int64_t> simplified_optics(PivotDistances &pd, const std::vector<int64_t> &ids, const ColumnChange &change,
                                       const OpticsParams &p, const Reducer &red) {
  const int64_t rows = pd.points().rows();
  std::vector<int64_t> label(static_cast<size_t>(rows), -1);
  constexpr int64_t kNone = INT64_MAX;
  int64_t next_local = 0;  // pivots come in increasing order: scan forward
  for (;;) {
    while (next_local < rows && label[next_local] >= 0) ++next_local;
    const int64_t pivot = red.min(next_local < rows ? ids[next_local] : kNone);
    if (pivot == kNone) break;
    const std::vector<double> prow = red.row(pivot);
    const double r2 = std::max(p.radius_fraction * p.radius_fraction *
                                   std::max(pd.squared_length(prow, change), p.length_floor * p.length_floor),
                               p.min_radius * p.min_radius);
    const auto &d = pd.distances(pivot, prow, change);
    // Identical points are neighbours even when the pivot is the zero vector.
    auto close = [&](double x) { return x < r2 || x == 0.0; };
    int64_t near = 0;
    for (int64_t i = 0; i < rows; ++i)
      if (ids[i] != pivot && close(d[i])) ++near;
    const bool dense = red.sum(near) > p.count_threshold;
    for (int64_t i = 0; i < rows; ++i)
      if (ids[i] == pivot || (dense && label[i] < 0 && close(d[i]))) label[i] = pivot;
  }
  return label;
}

// Full OPTICS (Ankerst et al. 1999) with eps = infinity: the reachability ordering of
// all points, then clusters extracted at reachability `extract_radius` (DBSCAN-like: a
// point reached farther than that starts a new cluster when its core distance is within
// it, else it is isolated). min_pts counts the point itself: the core distance is the
// distance to the (min_pts - 1)-th nearest other point. Ties go to the lower id. Labels are a cluster's lowest id, as
// for the simplified OPTICS. O(points^2 x columns) per clustering, spread over processes: one broadcast pivot row per
// point of the ordering.
struct FullOpticsParams {
  int64_t min_pts = 2;
  double extract_radius = 0;
};
struct OpticsOrdering {
  std::vector<int64_t> order;         // ids in reachability order (complete on every process)
  std::vector<double> reachability;   // per position; infinity for the first of each component
  std::vector<double> core_distance;  // per position
};

template <class Reducer>
std::vector<int64_t> full_optics(const RowMatrix &points, const std::vector<uint8_t> &active,
                                 const std::vector<int64_t> &ids, const FullOpticsParams &p, const Reducer &red,
                                 OpticsOrdering *ordering_out = nullptr) {
  const int64_t rows = points.rows(), cols = points.cols();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> reach(static_cast<size_t>(rows), inf), dist(static_cast<size_t>(rows));
  std::vector<uint8_t> done(static_cast<size_t>(rows), 0);
  OpticsOrdering ord;
  int64_t total = red.sum(rows);
  for (int64_t step = 0; step < total; ++step) {
    // Next: the smallest reachability among unprocessed points, else the lowest id.
    std::pair<double, int64_t> best{inf, INT64_MAX};
    for (int64_t i = 0; i < rows; ++i)
      if (!done[i] && std::make_pair(reach[i], ids[i]) < best) best = {reach[i], ids[i]};
    best = red.argmin(best);
    const int64_t pivot = best.second;
    const std::vector<double> prow = red.row(pivot);
    std::vector<double> mine;
    for (int64_t i = 0; i < rows; ++i) {
      double s = 0;
      const double *x = points.row(i).data();
      for (int64_t j = 0; j < cols; ++j)
        if (active[j]) s += (x[j] - prow[j]) * (x[j] - prow[j]);
      dist[i] = std::sqrt(s);
      if (ids[i] == pivot)
        done[i] = 1;
      else
        mine.push_back(dist[i]);
    }
    // min_pts counts the point itself (Ankerst et al.): the core distance is the
    // distance to the (min_pts - 1)-th nearest other point.
    const int64_t others = p.min_pts - 1;
    double core = 0.0;
    if (others > 0) {
      const auto nearest = red.smallest(mine, static_cast<size_t>(others));
      core = static_cast<int64_t>(nearest.size()) >= others ? nearest[static_cast<size_t>(others - 1)] : inf;
    }
    ord.order.push_back(pivot);
    ord.reachability.push_back(best.first);
    ord.core_distance.push_back(core);
    if (core < inf)
      for (int64_t i = 0; i < rows; ++i)
        if (!done[i]) reach[i] = std::min(reach[i], std::max(core, dist[i]));
  }
  // Extraction in ordering order; every process holds the ordering, so labels agree.
  std::map<int64_t, int64_t> label_of;
  std::vector<int64_t> members;  // the open cluster; noise points do not close it
  auto close_cluster = [&] {
    if (members.empty()) return;
    const int64_t lowest = *std::min_element(members.begin(), members.end());
    for (int64_t m : members) label_of[m] = lowest;
    members.clear();
  };
  for (size_t k = 0; k < ord.order.size(); ++k) {
    const bool reached = ord.reachability[k] <= p.extract_radius;
    if (!reached) {
      if (ord.core_distance[k] > p.extract_radius) {
        label_of[ord.order[k]] = ord.order[k];  // isolated
        continue;
      }
      close_cluster();  // a new cluster starts here
    }
    members.push_back(ord.order[k]);
  }
  close_cluster();
  std::vector<int64_t> label(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) label[i] = label_of[ids[i]];
  if (ordering_out) *ordering_out = std::move(ord);
  return label;
}

inline std::vector<int64_t> iota_ids(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace perfsift::kernels
