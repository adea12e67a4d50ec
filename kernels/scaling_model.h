// Extra-P's single-parameter performance models (Calotoiu et al., SC'13): a quantity
// measured at several process counts p fitted as f(p) = c0 + c1 · p^i · log2(p)^j, one term
// chosen from a fixed space by leave-one-out cross-validation, or the constant f(p) = c0.
// The pure part: no files, no MPI.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace perfsift::kernels::scaling {

// p^(num/den) · log2(p)^log_power.
struct Term {
  int num = 0, den = 1;
  int log_power = 0;
  double exponent() const { return static_cast<double>(num) / den; }
  double at(double p) const;
  // "p", "p^2", "p^(1/2)", "log2(p)", "p^(-1)·log2(p)^2", "1" for the empty term.
  std::string text() const;
};

// Extra-P's default term space: i in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1, 5/4, 4/3, 3/2, 5/3, 7/4,
// 2, 9/4, 7/3, 5/2, 8/3, 11/4, 3} and j in {0, 1, 2} (not i = j = 0, the constant), and the
// negative exponents down to -2 (Extra-P's allow_negative_exponents): a strong-scaling run's
// work per rank shrinks as 1/p, which no term with i >= 0 fits. Simpler terms first.
const std::vector<Term> &term_space();

// Extra-P asks for five process counts at least: fewer fit, but the model rests on them.
inline constexpr size_t kRecommendedPoints = 5;
// Leave-one-out SMAPE (%) beyond which the measurements are too noisy for any model.
inline constexpr double kNoisySmapePercent = 20;

struct Model {
  bool constant = true;
  Term term;
  double c0 = 0, c1 = 0;   // seconds (or whatever the measurements are)
  size_t points = 0;       // distinct process counts it rests on
  double largest_p = 0;    // the largest count measured: where growth is told
  double smape = 0;        // in-sample symmetric mean absolute percentage error, 0..200 %
  double cv_smape = -1;    // leave-one-out SMAPE, % (-1: too few points to cross-validate)
  double adjusted_r2 = 0;  // of the term model (0 for the constant, or with 2 points)
  double rss = 0;          // residual sum of squares
  // Fewer than kRecommendedPoints: the hypotheses were restricted (2 points: a straight
  // line through them, no choice of term).
  bool restricted() const { return points < kRecommendedPoints; }
  // No hypothesis predicted the runs left out within kNoisySmapePercent: the model is then
  // the constant (their mean), since extrapolating a term the data do not support misleads.
  bool too_noisy = false;
  bool noisy() const { return too_noisy; }
  double at(double p) const;  // never below 0: a time does not go negative
  // "0.005 + 0.02·p", "0.12"
  std::string formula() const;
  // How it grows, in words: "constant", "linearly", "as log2(p)", "as 1/p", "as p^(1/2)".
  std::string growth() const;
};

// The model of the measurements `values` taken at process counts `ranks` (same length;
// several at one count are averaged into one point). No points: the constant 0; one: that
// value, constant. Two: c0 + c1·p through both. Three or more: the constant and every term
// of term_space(), each fitted by least squares, the least leave-one-out SMAPE chosen (on a
// tie the simpler); when even that one exceeds kNoisySmapePercent, the constant (too_noisy).
Model fit(const std::vector<double> &ranks, const std::vector<double> &values);

// Symmetric mean absolute percentage error of predictions against measurements, 0..200 %;
// measurements of 0 are left out (no percentage of them exists).
double smape(const std::vector<double> &measured, const std::vector<double> &predicted);

}  // namespace perfsift::kernels::scaling
