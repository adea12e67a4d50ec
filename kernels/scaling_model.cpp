#include "kernels/scaling_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>

namespace perfsift::kernels::scaling {

namespace {

std::string fraction(int num, int den) {
  if (den == 1) return std::to_string(num);
  return std::to_string(num) + "/" + std::to_string(den);
}

struct Line {
  double c0 = 0, c1 = 0;
  bool ok = false;
};

// Least squares of y = c0 + c1·x over the points `use` selects (all when empty).
Line least_squares(const std::vector<double> &x, const std::vector<double> &y, size_t skip) {
  double n = 0, sx = 0, sy = 0;
  for (size_t k = 0; k < x.size(); ++k)
    if (k != skip) n += 1, sx += x[k], sy += y[k];
  if (n < 2) return {};
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0, xx = 0;
  for (size_t k = 0; k < x.size(); ++k)
    if (k != skip) {
      sxx += (x[k] - mx) * (x[k] - mx);
      sxy += (x[k] - mx) * (y[k] - my);
      xx += x[k] * x[k];
    }
  // A term equal at every point (log2(p) on p = 1 alone) separates nothing from c0.
  if (!(sxx > 1e-12 * xx) || !std::isfinite(sxx)) return {};
  Line l;
  l.c1 = sxy / sxx;
  l.c0 = my - l.c1 * mx;
  l.ok = std::isfinite(l.c0) && std::isfinite(l.c1);
  return l;
}

double mean_except(const std::vector<double> &y, size_t skip) {
  double s = 0, n = 0;
  for (size_t k = 0; k < y.size(); ++k)
    if (k != skip) s += y[k], n += 1;
  return n > 0 ? s / n : 0;
}

// Leave-one-out SMAPE of a hypothesis (no term: the constant); -1 when a fold cannot be fitted.
double leave_one_out(const std::vector<double> &p, const std::vector<double> &y, const Term *term) {
  std::vector<double> x(p.size());
  for (size_t k = 0; k < p.size(); ++k) x[k] = term ? term->at(p[k]) : 0;
  std::vector<double> predicted(p.size());
  for (size_t k = 0; k < p.size(); ++k) {
    if (!term) {
      predicted[k] = mean_except(y, k);
      continue;
    }
    const Line l = least_squares(x, y, k);
    if (!l.ok) return -1;
    predicted[k] = l.c0 + l.c1 * x[k];
  }
  return smape(y, predicted);
}

// The model's in-sample figures.
void assess(Model &m, const std::vector<double> &p, const std::vector<double> &y) {
  std::vector<double> predicted(p.size());
  for (size_t k = 0; k < p.size(); ++k) predicted[k] = m.constant ? m.c0 : m.c0 + m.c1 * m.term.at(p[k]);
  m.smape = smape(y, predicted);
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  double tss = 0;
  m.rss = 0;
  for (size_t k = 0; k < y.size(); ++k) {
    m.rss += (y[k] - predicted[k]) * (y[k] - predicted[k]);
    tss += (y[k] - my) * (y[k] - my);
  }
  const double n = static_cast<double>(y.size());
  m.adjusted_r2 = 0;
  if (!m.constant && n > 2 && tss > 0) m.adjusted_r2 = 1 - (m.rss / tss) * (n - 1) / (n - 2);
  if (!m.constant && n == 2) m.adjusted_r2 = 1;  // a line through two points: exact, and says nothing
}

}  // namespace

double Term::at(double p) const {
  double v = num == 0 ? 1 : std::pow(p, exponent());
  if (log_power > 0) v *= std::pow(std::log2(p), log_power);
  return v;
}

std::string Term::text() const {
  std::string out;
  if (num != 0)
    out = num == den ? "p" : den == 1 && num > 0 ? "p^" + std::to_string(num) : "p^(" + fraction(num, den) + ")";
  if (log_power > 0) {
    if (!out.empty()) out += "·";
    out += log_power == 1 ? "log2(p)" : "log2(p)^" + std::to_string(log_power);
  }
  return out.empty() ? "1" : out;
}

const std::vector<Term> &term_space() {
  static const std::vector<Term> terms = [] {
    const std::pair<int, int> positive[] = {{1, 4}, {1, 3}, {1, 2}, {2, 3}, {3, 4}, {1, 1}, {5, 4}, {4, 3},  {3, 2},
                                            {5, 3}, {7, 4}, {2, 1}, {9, 4}, {7, 3}, {5, 2}, {8, 3}, {11, 4}, {3, 1}};
    std::vector<Term> out;
    for (int j = 0; j <= 2; ++j) {
      if (j > 0) out.push_back({0, 1, j});
      for (const auto &[num, den] : positive) {
        out.push_back({num, den, j});
        if (num <= 2 * den) out.push_back({-num, den, j});  // down to p^-2
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const Term &a, const Term &b) {
      if (a.log_power != b.log_power) return a.log_power < b.log_power;
      return std::fabs(a.exponent()) < std::fabs(b.exponent());
    });
    return out;
  }();
  return terms;
}

double smape(const std::vector<double> &measured, const std::vector<double> &predicted) {
  double sum = 0, n = 0;
  for (size_t k = 0; k < measured.size() && k < predicted.size(); ++k) {
    if (measured[k] == 0) continue;  // a percentage of nothing: every prediction would miss by 200 %
    sum += std::fabs(predicted[k] - measured[k]) / ((std::fabs(measured[k]) + std::fabs(predicted[k])) / 2);
    n += 1;
  }
  return n > 0 ? 100 * sum / n : 0;
}

double Model::at(double p) const { return std::max(0.0, constant ? c0 : c0 + c1 * term.at(p)); }

std::string Model::formula() const {
  char b[96];
  if (constant || c1 == 0) {
    std::snprintf(b, sizeof b, "%.4g", c0);
    return b;
  }
  std::snprintf(b, sizeof b, "%.4g %c %.4g·", c0, c1 < 0 ? '-' : '+', std::fabs(c1));
  return b + term.text();
}

std::string Model::growth() const {
  if (constant || c1 == 0) return "constant";
  // Up or down beyond the measurements (p^(-1/2)·log2(p)^2 still rises at small p).
  const double p = std::max(largest_p, 1.0);
  const bool shrinking = (c1 > 0) == (term.at(4 * p) < term.at(p));
  std::string how;
  if (term.num == term.den && term.log_power == 0)
    how = "linearly";
  else if (term.num == 2 * term.den && term.log_power == 0)
    how = "quadratically";
  else if (term.num < 0 && !shrinking && term.log_power == 0)
    return "growing, levelling off";
  else if (term.num == -term.den && term.log_power == 0)
    how = "as 1/p";
  else
    how = "as " + term.text();
  return (shrinking ? "shrinking " : "growing ") + how;
}

Model fit(const std::vector<double> &ranks, const std::vector<double> &values) {
  std::map<double, std::pair<double, int>> at_count;  // several runs at one count: their mean
  for (size_t k = 0; k < ranks.size() && k < values.size(); ++k) {
    auto &[sum, n] = at_count[ranks[k]];
    sum += values[k];
    ++n;
  }
  std::vector<double> p, y;
  for (const auto &[count, sum_n] : at_count) {
    p.push_back(count);
    y.push_back(sum_n.first / sum_n.second);
  }
  Model best;
  best.points = p.size();
  best.largest_p = p.empty() ? 0 : p.back();
  if (p.empty()) return best;
  best.c0 = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  if (p.size() == 2) {
    const Term linear{1, 1, 0};
    const Line l = least_squares({p[0], p[1]}, y, 2);
    if (l.ok) best.constant = false, best.term = linear, best.c0 = l.c0, best.c1 = l.c1;
  }
  if (p.size() >= 3) {
    best.cv_smape = leave_one_out(p, y, nullptr);
    for (const Term &t : term_space()) {
      const double cv = leave_one_out(p, y, &t);
      // A later (less simple) term must do better than rounding: exact data keep the true term.
      if (cv < 0 || !(cv < best.cv_smape - std::max(1e-9 * best.cv_smape, 1e-10))) continue;
      std::vector<double> x(p.size());
      for (size_t k = 0; k < p.size(); ++k) x[k] = t.at(p[k]);
      const Line l = least_squares(x, y, p.size());
      if (!l.ok) continue;
      best.constant = false, best.term = t, best.c0 = l.c0, best.c1 = l.c1, best.cv_smape = cv;
    }
  }
  if (best.cv_smape > kNoisySmapePercent) {
    best.too_noisy = true;
    best.constant = true;
    best.c0 = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  }
  assess(best, p, y);
  return best;
}

}  // namespace perfsift::kernels::scaling
