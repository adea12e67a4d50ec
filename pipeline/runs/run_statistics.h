// Is a change between two sets of runs more than their noise? Means, spread and a
// two-sample test of one quantity measured in each run.
#pragma once

#include <vector>

namespace perfsift::pipeline {

struct SampleChange {
  double before_mean = 0, after_mean = 0;
  double before_sd = 0, after_sd = 0;  // 0 with one run
  int before_runs = 0, after_runs = 0;
  double change = 0;  // after - before
  // Whether the runs tell their noise: two runs on one side at least. Then the 95 %
  // interval of the change and Welch's two-sided p (one side of one run: the other's
  // spread stands for both, a t test with its degrees of freedom).
  bool noise_known = false;
  double ci95_low = 0, ci95_high = 0, p_value = 1;
  double half_width() const { return noise_known ? (ci95_high - ci95_low) / 2 : 0; }
  // The change is beyond the noise (p < 0.05), or, the noise unknown, not zero.
  bool beyond_noise() const { return noise_known ? p_value < 0.05 : change != 0; }
  // The change as a share of before (0 when before is 0).
  double relative() const { return before_mean != 0 ? change / before_mean : 0; }
};

SampleChange compare_samples(const std::vector<double> &before, const std::vector<double> &after);

}  // namespace perfsift::pipeline
