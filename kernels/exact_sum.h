// Sums whose value does not depend on the order of additions, so results are the
// same for any number of analysis ranks and threads (docs/architecture.md, principle 4).
// Values are held in fixed point with 40 fractional bits in a 128-bit integer:
// integer addition is associative; resolution 2^-40 (0.9 ps for seconds, exact
// for counts and bytes below 2^87).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace perfsift::kernels {

class FixedSum {
 public:
  static constexpr int kFractionBits = 40;
  void add(double x) {
    if (!std::isfinite(x)) return;
    const double whole = std::floor(x);
    m_value +=
        (static_cast<__int128>(whole) << kFractionBits) + static_cast<__int128>(std::llround((x - whole) * kScale));
  }
  void merge(const FixedSum &o) { m_value += o.m_value; }
  double value() const {
    const __int128 whole = m_value >> kFractionBits;  // floor, also for negative sums
    const __int128 frac = m_value - (whole << kFractionBits);
    return static_cast<double>(whole) + static_cast<double>(frac) / kScale;
  }

 private:
  static constexpr double kScale = static_cast<double>(int64_t{1} << kFractionBits);
  __int128 m_value = 0;
};

// Count, exact sum, and extremes with the rank that holds them. Merging is
// associative and commutative (ties go to the lower rank), so any reduction order
// gives the same result. Plain data: reducible as bytes.
struct Summary {
  int64_t count = 0;
  FixedSum sum;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  int64_t min_rank = -1, max_rank = -1;

  void add(double x, int64_t rank) {
    if (!std::isfinite(x)) return;
    ++count;
    sum.add(x);
    if (x < min || (x == min && rank < min_rank)) min = x, min_rank = rank;
    if (x > max || (x == max && (max_rank < 0 || rank < max_rank))) max = x, max_rank = rank;
  }
  void merge(const Summary &o) {
    if (!o.count) return;
    count += o.count;
    sum.merge(o.sum);
    if (o.min < min || (o.min == min && o.min_rank < min_rank)) min = o.min, min_rank = o.min_rank;
    if (o.max > max || (o.max == max && (max_rank < 0 || o.max_rank < max_rank))) max = o.max, max_rank = o.max_rank;
  }
  double mean() const { return count ? sum.value() / static_cast<double>(count) : 0.0; }
  // max/mean - 1: 0 for perfectly balanced work, 1 when the slowest takes twice the mean.
  double imbalance() const {
    const double m = mean();
    return count && m > 0 ? max / m - 1.0 : 0.0;
  }
};

}  // namespace perfsift::kernels
