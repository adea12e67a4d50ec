// Exact, deterministic 1-D k-means (optimal sum of squared errors) by dynamic
// programming over the sorted values: optimal 1-D clusters are contiguous runs.
// O(k n log n) with divide and conquer over the monotone split points; ties go to the
// earliest split, so equal inputs give equal outputs.
#pragma once

#include <cstdint>
#include <vector>

namespace perfsift::kernels {

struct KMeans1D {
  std::vector<int> label;       // per input value: cluster 0..k'-1, in increasing order of centre
  std::vector<double> centers;  // k' centres, ascending
  double sse = 0;               // total squared error
};

// k' = min(k, number of distinct values); NaN inputs are rejected (std::invalid_argument).
KMeans1D kmeans_1d(const std::vector<double> &values, int k);

// The paper's five severity categories (very low 0 .. very high 4) from a k-means with
// k = 5: cluster c of k' maps to round(4 c / (k' - 1)), so the highest is always 4
// and, when all values are equal, everything is 0.
std::vector<int> severity_categories(const std::vector<double> &values);
// "very low" .. "very high" for categories 0 .. 4.
const char *severity_name(int category);

}  // namespace perfsift::kernels
