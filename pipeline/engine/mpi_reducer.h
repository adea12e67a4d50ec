// The reductions the clustering kernels need, over the analysis ranks: the smallest id,
// a sum, and a point's row from whichever process holds it.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/clustering.h"
#include "pipeline/engine/context.h"

namespace perfsift::pipeline {

struct MpiReducer {
  MPI_Comm comm;
  const kernels::RowMatrix &points;
  const std::vector<int64_t> &ids;  // global id per local row, ascending
  int64_t min(int64_t v) const {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_MIN, comm);
    return v;
  }
  int64_t sum(int64_t v) const {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_SUM, comm);
    return v;
  }
  // Lexicographic (value, id) minimum in two reductions: MPI_MINLOC's int index is too narrow.
  std::pair<double, int64_t> argmin(std::pair<double, int64_t> v) const {
    double best = v.first;
    MPI_Allreduce(MPI_IN_PLACE, &best, 1, MPI_DOUBLE, MPI_MIN, comm);
    int64_t id = v.first == best ? v.second : INT64_MAX;
    MPI_Allreduce(MPI_IN_PLACE, &id, 1, MPI_INT64_T, MPI_MIN, comm);
    return {best, id};
  }
  std::vector<double> smallest(std::vector<double> v, size_t k) const {
    std::sort(v.begin(), v.end());
    if (v.size() > k) v.resize(k);
    v.resize(k, std::numeric_limits<double>::infinity());
    int np = 1;
    MPI_Comm_size(comm, &np);
    std::vector<double> all(k * static_cast<size_t>(np));
    MPI_Allgather(v.data(), static_cast<int>(k), MPI_DOUBLE, all.data(), static_cast<int>(k), MPI_DOUBLE, comm);
    std::sort(all.begin(), all.end());
    all.resize(k);
    while (!all.empty() && std::isinf(all.back())) all.pop_back();
    return all;
  }
  // The owner contributes the row, every other process zeros: the sum is exact.
  std::vector<double> row(int64_t id) const {
    std::vector<double> r(static_cast<size_t>(points.cols()), 0.0);
    auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it != ids.end() && *it == id) {
      const auto i = it - ids.begin();
      std::copy(points.row(i).data(), points.row(i).data() + points.cols(), r.begin());
    }
    MPI_Allreduce(MPI_IN_PLACE, r.data(), static_cast<int>(r.size()), MPI_DOUBLE, MPI_SUM, comm);
    return r;
  }
};

// OpticsParams::length_floor for `radius_reference`: 0 for "pivot" (the paper), else
// the mean length of the rows (columns where `base` is set) over all processes.
inline double radius_floor(Context &ctx, const std::string &reference, const kernels::RowMatrix &points,
                           const std::vector<uint8_t> &base) {
  if (reference != "pivot-or-mean") return 0.0;
  std::vector<kernels::FixedSum> len(1);
  for (Eigen::Index i = 0; i < points.rows(); ++i) {
    double s2 = 0;
    for (Eigen::Index c = 0; c < points.cols(); ++c)
      if (base[static_cast<size_t>(c)]) s2 += points(i, c) * points(i, c);
    len[0].add(std::sqrt(s2));
  }
  ctx.allreduce(len);
  int64_t n = points.rows();
  MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  return n ? len[0].value() / static_cast<double>(n) : 0.0;
}

// The spread of the rows (columns where `base` is set) over all processes: the largest
// distance of a row from the rows' mean. Scale-free radii are a share of it: ranks whose
// vectors are short (nearly idle ranks) group as readily as long ones.
inline double vector_spread(Context &ctx, const kernels::RowMatrix &points, const std::vector<uint8_t> &base) {
  const auto cols = static_cast<size_t>(points.cols());
  std::vector<kernels::FixedSum> sum(cols);
  for (Eigen::Index i = 0; i < points.rows(); ++i)
    for (size_t c = 0; c < cols; ++c)
      if (base[c]) sum[c].add(points(i, static_cast<Eigen::Index>(c)));
  ctx.allreduce(sum);
  int64_t n = points.rows();
  MPI_Allreduce(MPI_IN_PLACE, &n, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  double spread = 0;
  for (Eigen::Index i = 0; n > 0 && i < points.rows(); ++i) {
    double s2 = 0;
    for (size_t c = 0; c < cols; ++c)
      if (base[c]) {
        const double x = points(i, static_cast<Eigen::Index>(c)) - sum[c].value() / static_cast<double>(n);
        s2 += x * x;
      }
    spread = std::max(spread, std::sqrt(s2));
  }
  MPI_Allreduce(MPI_IN_PLACE, &spread, 1, MPI_DOUBLE, MPI_MAX, ctx.comm());
  return spread;
}

// The radius rules of `algorithm` (dissimilarity.*): "paper" is AutoAnalyzer's
// radius_fraction x the pivot's length; "simplified" and "optics" add floors so that ranks
// behaving alike group whatever their vectors' length: the mean length (radius_reference),
// noise_share of the run, and spread_fraction x the spread of the vectors.
inline kernels::OpticsParams optics_params(Context &ctx, const config::Values &cfg, const kernels::RowMatrix &points,
                                           const std::vector<uint8_t> &base) {
  kernels::OpticsParams p{cfg.get_float("dissimilarity.radius_fraction"), cfg.get_int("dissimilarity.count_threshold")};
  if (cfg.get_string("dissimilarity.algorithm") == "paper") return p;
  p.length_floor = std::max(radius_floor(ctx, cfg.get_string("dissimilarity.radius_reference"), points, base),
                            cfg.get_float("dissimilarity.noise_share") * ctx.wall_time_s());
  p.min_radius = cfg.get_float("dissimilarity.spread_fraction") * vector_spread(ctx, points, base);
  return p;
}

}  // namespace perfsift::pipeline
