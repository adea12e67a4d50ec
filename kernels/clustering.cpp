#include "kernels/clustering.h"

#include <algorithm>

namespace perfsift::kernels {

RowMatrix squared_distance_tile(const RowMatrix &a, const RowMatrix &b) {
  const Eigen::VectorXd na = a.rowwise().squaredNorm(), nb = b.rowwise().squaredNorm();
  RowMatrix d = -2.0 * (a * b.transpose());
  d.colwise() += na;
  d.rowwise() += nb.transpose();
  return d.cwiseMax(0.0);
}

PivotDistances::PivotDistances(const RowMatrix &points, std::vector<uint8_t> base)
    : m_points(points), m_base(std::move(base)) {}

double PivotDistances::squared_length(const std::vector<double> &row, const ColumnChange &change) const {
  double s = 0;
  for (size_t j = 0; j < row.size(); ++j)
    if (m_base[j]) s += row[j] * row[j];
  for (int j : change.off) s -= row[j] * row[j];
  for (int j : change.on) s += row[j] * row[j];
  return std::max(0.0, s);
}

const std::vector<double> &PivotDistances::distances(int64_t pivot, const std::vector<double> &p,
                                                     const ColumnChange &change) {
  const int64_t rows = m_points.rows(), cols = m_points.cols();
  auto it = m_cache.find(pivot);
  if (it == m_cache.end()) {
    std::vector<double> d(static_cast<size_t>(rows), 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const double *x = m_points.row(i).data();
      double s = 0;
      for (int64_t j = 0; j < cols; ++j)
        if (m_base[j]) s += (x[j] - p[j]) * (x[j] - p[j]);
      d[i] = s;
    }
    it = m_cache.emplace(pivot, std::move(d)).first;
  }
  if (change.off.empty() && change.on.empty()) return it->second;
  // One term per changed column: the update Algorithm 2's many clusterings need.
  m_scratch = it->second;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    const double *x = m_points.row(i).data();
    double s = m_scratch[i];
    for (int j : change.off) s -= (x[j] - p[j]) * (x[j] - p[j]);
    for (int j : change.on) s += (x[j] - p[j]) * (x[j] - p[j]);
    m_scratch[i] = std::max(0.0, s);
  }
  return m_scratch;
}

}  // namespace perfsift::kernels
