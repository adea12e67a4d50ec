#include "kernels/kmeans1d.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace perfsift::kernels {

namespace {

struct Prefix {
  std::vector<long double> s, s2;
  explicit Prefix(const std::vector<double> &x) : s(x.size() + 1, 0), s2(x.size() + 1, 0) {
    for (size_t i = 0; i < x.size(); ++i)
      s[i + 1] = s[i] + x[i], s2[i + 1] = s2[i] + static_cast<long double>(x[i]) * x[i];
  }
  // SSE of x[i..j] inclusive.
  double cost(size_t i, size_t j) const {
    const long double n = static_cast<long double>(j - i + 1), sum = s[j + 1] - s[i];
    const long double v = (s2[j + 1] - s2[i]) - sum * sum / n;
    return static_cast<double>(std::max<long double>(0, v));
  }
};

}  // namespace

KMeans1D kmeans_1d(const std::vector<double> &values, int k) {
  const size_t n = values.size();
  KMeans1D out;
  out.label.assign(n, 0);
  if (n == 0) return out;
  for (double v : values)
    if (std::isnan(v)) throw std::invalid_argument("kmeans_1d: NaN value");
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = values[order[i]];
  size_t distinct = 1;
  for (size_t i = 1; i < n; ++i) distinct += x[i] != x[i - 1];
  const size_t kk = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(k, 1)), distinct));
  const Prefix pre(x);
  const double inf = std::numeric_limits<double>::infinity();
  // cost[c][j]: best SSE of x[0..j] in c+1 clusters; split[c][j]: start of the last cluster.
  std::vector<std::vector<double>> cost(kk, std::vector<double>(n, inf));
  std::vector<std::vector<size_t>> split(kk, std::vector<size_t>(n, 0));
  for (size_t j = 0; j < n; ++j) cost[0][j] = pre.cost(0, j);
  for (size_t c = 1; c < kk; ++c) {
    // Divide and conquer: the optimal split point is monotone in j.
    auto solve = [&](auto &&self, size_t jlo, size_t jhi, size_t slo, size_t shi) -> void {
      if (jlo > jhi) return;
      const size_t j = (jlo + jhi) / 2;
      double best = inf;
      size_t arg = std::max(slo, c);
      for (size_t s = std::max(slo, c); s <= std::min(j, shi); ++s) {
        const double v = cost[c - 1][s - 1] + pre.cost(s, j);
        if (v < best) best = v, arg = s;
      }
      cost[c][j] = best;
      split[c][j] = arg;
      if (j > jlo) self(self, jlo, j - 1, slo, arg);
      self(self, j + 1, jhi, arg, shi);
    };
    solve(solve, c, n - 1, c, n - 1);
  }
  // Walk back the splits.
  std::vector<size_t> start(kk);
  size_t j = n - 1;
  for (size_t c = kk; c-- > 0;) {
    start[c] = c == 0 ? 0 : split[c][j];
    if (c > 0) j = start[c] - 1;
  }
  out.sse = cost[kk - 1][n - 1];
  out.centers.resize(kk);
  for (size_t c = 0; c < kk; ++c) {
    const size_t a = start[c], b = c + 1 < kk ? start[c + 1] - 1 : n - 1;
    out.centers[c] = static_cast<double>((pre.s[b + 1] - pre.s[a]) / static_cast<long double>(b - a + 1));
    for (size_t i = a; i <= b; ++i) out.label[order[i]] = static_cast<int>(c);
  }
  return out;
}

std::vector<int> severity_categories(const std::vector<double> &values) {
  const auto km = kmeans_1d(values, 5);
  const int kk = static_cast<int>(km.centers.size());
  std::vector<int> out(values.size(), 0);
  if (kk <= 1) return out;
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<int>(std::lround(4.0 * km.label[i] / (kk - 1)));
  return out;
}

const char *severity_name(int category) {
  static const char *const names[] = {"very low", "low", "medium", "high", "very high"};
  return names[category];
}

}  // namespace perfsift::kernels
