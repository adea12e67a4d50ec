#include "pipeline/runs/run_statistics.h"

#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>

namespace perfsift::pipeline {

namespace {

double mean(const std::vector<double> &v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// The sample standard deviation (n - 1); 0 for fewer than two values.
double spread(const std::vector<double> &v, double m) {
  if (v.size() < 2) return 0;
  double s = 0;
  for (const double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

}  // namespace

SampleChange compare_samples(const std::vector<double> &before, const std::vector<double> &after) {
  SampleChange c;
  c.before_runs = static_cast<int>(before.size());
  c.after_runs = static_cast<int>(after.size());
  c.before_mean = mean(before);
  c.after_mean = mean(after);
  c.before_sd = spread(before, c.before_mean);
  c.after_sd = spread(after, c.after_mean);
  c.change = c.after_mean - c.before_mean;
  if (c.before_runs < 1 || c.after_runs < 1 || (c.before_runs < 2 && c.after_runs < 2)) return c;
  const double nb = c.before_runs, na = c.after_runs;
  double se = 0, df = 0;
  if (c.before_runs >= 2 && c.after_runs >= 2) {  // Welch
    const double vb = c.before_sd * c.before_sd / nb, va = c.after_sd * c.after_sd / na;
    se = std::sqrt(vb + va);
    df = (vb + va) * (vb + va) / (vb * vb / (nb - 1) + va * va / (na - 1));
  } else {  // one side of one run: the other side's spread for both
    const double sd = c.before_runs >= 2 ? c.before_sd : c.after_sd;
    se = sd * std::sqrt(1 / nb + 1 / na);
    df = (c.before_runs >= 2 ? nb : na) - 1;
  }
  c.noise_known = true;
  if (!(se > 0) || !std::isfinite(df) || df < 1) {  // identical runs: no spread at all
    c.ci95_low = c.ci95_high = c.change;
    c.p_value = c.change == 0 ? 1 : 0;
    return c;
  }
  const boost::math::students_t t(df);
  const double q = boost::math::quantile(boost::math::complement(t, 0.025));
  c.ci95_low = c.change - q * se;
  c.ci95_high = c.change + q * se;
  c.p_value = 2 * boost::math::cdf(boost::math::complement(t, std::abs(c.change) / se));
  return c;
}

}  // namespace perfsift::pipeline
