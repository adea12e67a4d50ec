// AutoAnalyzer kernel benchmarks; prints figures.
//  1. rank x rank distances, 16,384 ranks x 256 regions, in row tiles (the stage's
//     GEMM formulation), GFLOP/s against a plain Eigen GEMM of the same shape;
//  2. rough-set reducts of 10^6 objects x 8 attributes.
// usage: bench_autoanalyzer [RANKS REGIONS OBJECTS]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "kernels/clustering.h"
#include "kernels/rough_set.h"

using namespace perfsift::kernels;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char **argv) {
  const long m = argc > 1 ? std::atol(argv[1]) : 16384, n = argc > 2 ? std::atol(argv[2]) : 256;
  const long objects = argc > 3 ? std::atol(argv[3]) : 1000000;
  const long tile = 2048;
  RowMatrix v = RowMatrix::Random(m, n).cwiseAbs();
  double checksum = 0;
  // Warm-up (thread pool, page faults).
  checksum += squared_distance_tile(v.topRows(tile), v)(0, 1);
  auto t0 = Clock::now();
  for (long r = 0; r < m; r += tile) {
    const long rows = std::min(tile, m - r);
    checksum += squared_distance_tile(v.middleRows(r, rows), v).sum();
  }
  const double t_dist = seconds_since(t0);
  t0 = Clock::now();
  for (long r = 0; r < m; r += tile) {
    const long rows = std::min(tile, m - r);
    RowMatrix g = v.middleRows(r, rows) * v.transpose();
    checksum += g.sum();
  }
  const double t_gemm = seconds_since(t0);
  const double flops = 2.0 * m * m * n;
  std::printf(
      "distances %ld x %ld (all %ld^2 pairs, %ld-row tiles, %d threads): %.2f s, %.1f GFLOP/s; plain Eigen GEMM "
      "%.2f s, %.1f GFLOP/s; ratio %.2f\n",
      m, n, m, tile, omp_get_max_threads(), t_dist, flops / t_dist / 1e9, t_gemm, flops / t_gemm / 1e9,
      t_gemm / t_dist);

  std::mt19937_64 rng(42);
  DecisionTable t;
  for (int a = 0; a < 8; ++a) t.attributes.push_back("a" + std::to_string(a));
  t.conditions.resize(objects);
  t.decision.resize(objects);
  for (long i = 0; i < objects; ++i) {
    auto &row = t.conditions[i];
    row.resize(8);
    for (auto &x : row) x = static_cast<int64_t>(rng() % 4);
    // The decision follows attributes 1 and 5: the one reduct is {a1, a5}.
    t.decision[i] = (row[1] + row[5]) % 3;
  }
  t0 = Clock::now();
  const auto r = analyse_decision_table(t);
  const double t_rs = seconds_since(t0);
  std::string reduct;
  for (int a : r.minimal_reduct) reduct += " a" + std::to_string(a);
  std::printf("reducts of %ld objects x 8 attributes (%lld classes, %zu reducts, minimal {%s }): %.2f s (goal < 5 s)\n",
              objects, static_cast<long long>(r.classes), r.reducts.size(), reduct.c_str(), t_rs);
  std::printf("(checksum %g)\n", checksum);
  return 0;
}
