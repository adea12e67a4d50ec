// Extra-P-style models: known growth recovered exactly (the term and both coefficients),
// noise tolerated or called noisy, and too few points said.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/hercule.h"
#include "kernels/scaling_model.h"

using namespace perfsift::kernels;
using scaling::Model;

namespace {

const std::vector<double> kRanks = {1, 2, 4, 8, 16};

template <class F>
std::vector<double> measured(const std::vector<double> &ranks, F f) {
  std::vector<double> out;
  for (const double p : ranks) out.push_back(f(p));
  return out;
}

void expect_term(const Model &m, int num, int den, int log_power) {
  ASSERT_FALSE(m.constant) << m.formula();
  EXPECT_EQ(m.term.num * den, num * m.term.den) << m.formula();
  EXPECT_EQ(m.term.log_power, log_power) << m.formula();
}

}  // namespace

TEST(ScalingModel, LinearRecoveredExactly) {
  const Model m = scaling::fit(kRanks, measured(kRanks, [](double p) { return 0.5 + 0.25 * p; }));
  expect_term(m, 1, 1, 0);
  EXPECT_NEAR(m.c0, 0.5, 1e-9);
  EXPECT_NEAR(m.c1, 0.25, 1e-9);
  EXPECT_NEAR(m.at(64), 16.5, 1e-7);
  EXPECT_LT(m.cv_smape, 1e-6);
  EXPECT_NEAR(m.adjusted_r2, 1, 1e-9);
  EXPECT_EQ(m.growth(), "growing linearly");
  EXPECT_FALSE(m.restricted());
}

TEST(ScalingModel, LogarithmRecoveredExactly) {
  const std::vector<double> ranks = {1, 2, 3, 4, 5};
  const Model m = scaling::fit(ranks, measured(ranks, [](double p) { return 3 * std::log2(p); }));
  expect_term(m, 0, 1, 1);
  EXPECT_NEAR(m.c0, 0, 1e-9);
  EXPECT_NEAR(m.c1, 3, 1e-9);
  EXPECT_EQ(m.growth(), "growing as log2(p)");
}

TEST(ScalingModel, InverseRecoveredExactly) {
  const Model m = scaling::fit(kRanks, measured(kRanks, [](double p) { return 2 / p; }));
  expect_term(m, -1, 1, 0);
  EXPECT_NEAR(m.c1, 2, 1e-9);
  EXPECT_NEAR(m.c0, 0, 1e-9);
  EXPECT_EQ(m.growth(), "shrinking as 1/p");
}

TEST(ScalingModel, OtherTermsOfTheSpaceRecovered) {
  const Model square_root = scaling::fit(kRanks, measured(kRanks, [](double p) { return 1 + std::sqrt(p); }));
  expect_term(square_root, 1, 2, 0);
  const Model p_log_p = scaling::fit(kRanks, measured(kRanks, [](double p) { return 0.1 * p * std::log2(p); }));
  expect_term(p_log_p, 1, 1, 1);
  const Model quadratic = scaling::fit(kRanks, measured(kRanks, [](double p) { return 4 + p * p; }));
  expect_term(quadratic, 2, 1, 0);
  EXPECT_EQ(quadratic.growth(), "growing quadratically");
}

TEST(ScalingModel, ConstantStaysConstant) {
  const Model m = scaling::fit(kRanks, {0.7, 0.7, 0.7, 0.7, 0.7});
  EXPECT_TRUE(m.constant) << m.formula();
  EXPECT_DOUBLE_EQ(m.c0, 0.7);
  EXPECT_DOUBLE_EQ(m.at(1000), 0.7);
  EXPECT_EQ(m.growth(), "constant");
}

TEST(ScalingModel, NoisyLinearDataStillGrowLinearlyAndPredict) {
  // +-2 % alternating noise on 1 + p at eight counts: the model predicts 1 + 64 within 10 %.
  const std::vector<double> ranks = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<double> y = measured(ranks, [](double p) { return 1 + p; });
  for (size_t k = 0; k < y.size(); ++k) y[k] *= k % 2 ? 1.02 : 0.98;
  const Model m = scaling::fit(ranks, y);
  EXPECT_FALSE(m.constant);
  EXPECT_NEAR(m.at(64), 65, 6.5) << m.formula();
  EXPECT_FALSE(m.noisy()) << m.cv_smape;
  EXPECT_GT(m.smape, 0.5);
  EXPECT_GT(m.adjusted_r2, 0.95);
}

TEST(ScalingModel, ScatterWithoutTrendIsNoisy) {
  const Model m = scaling::fit({1, 2, 3, 4, 5, 6}, {1, 3, 0.5, 2.5, 0.2, 3.5});
  EXPECT_TRUE(m.noisy()) << m.formula() << " cv " << m.cv_smape;
  // No term extrapolated from scatter: the mean.
  EXPECT_TRUE(m.constant);
  EXPECT_NEAR(m.at(1000), (1 + 3 + 0.5 + 2.5 + 0.2 + 3.5) / 6, 1e-12);
}

TEST(ScalingModel, RepeatedCountsAreAveraged) {
  const Model m = scaling::fit({1, 1, 2, 2, 3, 3, 4, 4}, {0.9, 1.1, 1.9, 2.1, 2.9, 3.1, 3.9, 4.1});
  EXPECT_EQ(m.points, 4u);
  expect_term(m, 1, 1, 0);
  EXPECT_NEAR(m.c1, 1, 1e-9);
  EXPECT_TRUE(m.restricted());
}

TEST(ScalingModel, TooFewPoints) {
  const Model none = scaling::fit({}, {});
  EXPECT_EQ(none.points, 0u);
  EXPECT_TRUE(none.constant);
  const Model one = scaling::fit({4}, {2.5});
  EXPECT_EQ(one.points, 1u);
  EXPECT_TRUE(one.constant);
  EXPECT_DOUBLE_EQ(one.at(64), 2.5);
  // Two points: a straight line through both, not a choice among terms.
  const Model two = scaling::fit({2, 4}, {1, 2});
  EXPECT_EQ(two.points, 2u);
  expect_term(two, 1, 1, 0);
  EXPECT_NEAR(two.at(8), 4, 1e-12);
  EXPECT_LT(two.cv_smape, 0);  // not cross-validated
  EXPECT_TRUE(two.restricted());
  // Three points of 1/p: the term still found (the restriction is the caller's to say).
  const Model three = scaling::fit({1, 2, 4}, {4, 2, 1});
  expect_term(three, -1, 1, 0);
}

TEST(ScalingModel, PredictionsNeverNegative) {
  const Model m = scaling::fit(kRanks, measured(kRanks, [](double p) { return 10 - p; }));
  EXPECT_EQ(m.at(100), 0);
  EXPECT_EQ(m.growth(), "shrinking linearly");
}

TEST(ScalingModel, ZeroMeasurementsLeftOutOfSmape) {
  // A problem absent at one rank (0 at stake) and growing linearly after.
  const Model m = scaling::fit(kRanks, measured(kRanks, [](double p) { return 0.5 * (p - 1); }));
  expect_term(m, 1, 1, 0);
  EXPECT_FALSE(m.noisy()) << m.cv_smape;
  EXPECT_EQ(scaling::smape({0, 2}, {1, 2}), 0);
  EXPECT_NEAR(scaling::smape({1, 2}, {1, 3}), 20, 1e-12);  // |3 - 2| / 2.5 over two points
}

TEST(ScalingModel, SaturatingGrowthSaysSo) {
  const Model m = scaling::fit(kRanks, measured(kRanks, [](double p) { return 2 - 1 / p; }));
  expect_term(m, -1, 1, 0);
  EXPECT_EQ(m.growth(), "growing, levelling off");
}

TEST(ScalingModel, GrowthToldBeyondTheMeasurements) {
  // p^(-1/2)·log2(p)^2 rises until p = e^4: over 1..16 and beyond, it grows.
  const Model m =
      scaling::fit(kRanks, measured(kRanks, [](double p) { return std::pow(p, -0.5) * std::pow(std::log2(p), 2); }));
  expect_term(m, -1, 2, 2);
  EXPECT_EQ(m.growth(), "growing as p^(-1/2)·log2(p)^2");
}

TEST(ScalingModel, TermSpaceIsExtraPs) {
  // 18 exponents x 3 log powers, log2(p) alone and squared, and the negative exponents down to -2 x 3.
  const auto &terms = scaling::term_space();
  int positive = 0, negative = 0;
  for (const auto &t : terms) (t.num > 0 ? positive : t.num < 0 ? negative : positive) += 1;
  EXPECT_EQ(positive, 18 * 3 + 2);
  EXPECT_EQ(negative, 12 * 3);
  EXPECT_EQ(terms.front().text(), "p^(1/4)");
  EXPECT_EQ(scaling::Term({-1, 1, 2}).text(), "p^(-1)·log2(p)^2");
  EXPECT_EQ(scaling::Term({2, 1, 0}).text(), "p^2");
}

TEST(HerculeScalingKind, WorkPerRankTellsWeakFromStrong) {
  EXPECT_STREQ(hercule::scaling_kind(1.0, 8, 4), "weak");    // same work per rank
  EXPECT_STREQ(hercule::scaling_kind(0.5, 8, 4), "strong");  // same total work
  EXPECT_STREQ(hercule::scaling_kind(0.8, 8, 4), "weak");    // nearer the same per rank
  EXPECT_STREQ(hercule::scaling_kind(0.3, 8, 4), "strong");
  EXPECT_STREQ(hercule::scaling_kind(0, 8, 4), "weak");  // no computation measured: nothing to tell
}
