// Across runs: the two-sample statistics and the matching of problems by identity.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/runs/problem_matching.h"
#include "pipeline/runs/run_comparison.h"
#include "pipeline/runs/run_statistics.h"

using namespace perfsift::pipeline;

TEST(RunStatistics, OneRunPerSideLeavesTheNoiseUnknown) {
  const SampleChange c = compare_samples({2.0}, {1.5});
  EXPECT_FALSE(c.noise_known);
  EXPECT_DOUBLE_EQ(c.change, -0.5);
  EXPECT_DOUBLE_EQ(c.relative(), -0.25);
  EXPECT_TRUE(c.beyond_noise());
}

TEST(RunStatistics, WelchTestOfTwoSamples) {
  // Welch's t for these: t = -0.5 / 0.08165 = -6.124, df = 4 (variances 0.01, three runs
  // each): two-sided p = 0.00360, 95 % interval -0.5 +- 2.776 * 0.08165.
  const SampleChange c = compare_samples({1.9, 2.0, 2.1}, {1.4, 1.5, 1.6});
  ASSERT_TRUE(c.noise_known);
  EXPECT_NEAR(c.change, -0.5, 1e-12);
  EXPECT_NEAR(c.p_value, 0.00360, 2e-5);
  EXPECT_NEAR(c.ci95_low, -0.5 - 2.7764 * 0.0816497, 1e-4);
  EXPECT_NEAR(c.ci95_high, -0.5 + 2.7764 * 0.0816497, 1e-4);
  EXPECT_TRUE(c.beyond_noise());
}

TEST(RunStatistics, AChangeInsideTheNoiseIsNoise) {
  const SampleChange c = compare_samples({1.0, 2.0, 3.0}, {1.2, 2.1, 2.9});
  ASSERT_TRUE(c.noise_known);
  EXPECT_GT(c.p_value, 0.5);
  EXPECT_FALSE(c.beyond_noise());
}

TEST(RunStatistics, OneSideOfOneRunBorrowsTheOthersSpread) {
  // t = -1 / (0.1 * sqrt(1/3 + 1)) = -8.66 with 2 degrees of freedom: p = 1 - 8.66 / sqrt(2 + 75) = 0.0131.
  const SampleChange c = compare_samples({1.9, 2.0, 2.1}, {1.0});
  ASSERT_TRUE(c.noise_known);
  EXPECT_NEAR(c.p_value, 0.0131, 1e-4);
  EXPECT_LT(c.ci95_high, 0);
}

namespace {

ProblemRow row(const std::string &kind, const std::string &place, const std::string &ranks, double lost,
               double gain = std::nan("")) {
  ProblemRow p;
  p.kind = kind;
  p.where = place;
  p.place = "place=region\x1fplace_region=" + place + "\x1f";
  p.ranks = ranks;
  p.lost_s = lost;
  p.predicted_gain_s = gain;
  return p;
}

RunResults run(double program, std::vector<ProblemRow> problems) {
  RunResults r;
  r.ranks = 4;
  r.program_time_s = program;
  r.problems = std::move(problems);
  return r;
}

}  // namespace

TEST(ProblemMatching, ByIdentityNotPosition) {
  const auto before = problems_of_side(
      {run(1, {row("load-imbalance", "solve", "2", 0.5, 0.4), row("wait-at-barrier", "(program)", "0-3", 0.1),
               row("late-sender", "halo", "1", 0.05)})});
  const auto after = problems_of_side(
      {run(0.6, {row("late-sender", "halo", "3", 0.04), row("wait-at-barrier", "(program)", "0-3", 0.09),
                 row("disparity", "io", "all", 0.02)})});
  const auto m = match_problems(before, after);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].status, ProblemStatus::Gone);
  EXPECT_EQ(m[1].status, ProblemStatus::Persists);
  EXPECT_EQ(*m[1].after, 1u);
  EXPECT_EQ(m[2].status, ProblemStatus::Moved);
  EXPECT_EQ(m[2].moved, "to other ranks");
  EXPECT_EQ(m[3].status, ProblemStatus::New);
  EXPECT_EQ(*m[3].after, 2u);
}

TEST(ProblemMatching, TheSameCulpritsAtAnotherPlaceMoved) {
  const auto before = problems_of_side({run(1, {row("load-imbalance", "solve", "2", 0.5)})});
  const auto after = problems_of_side({run(1, {row("load-imbalance", "solve/inner", "2", 0.5)})});
  const auto m = match_problems(before, after);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].status, ProblemStatus::Moved);
  EXPECT_EQ(m[0].moved, "to another place");
}

TEST(ProblemMatching, OtherRankCountsCompareCulpritsByShare) {
  const auto before = problems_of_side({run(1, {row("load-imbalance", "solve", "2", 0.5)})});
  const auto after = problems_of_side({run(1, {row("load-imbalance", "solve", "4-5", 0.3)})});
  const auto same_share = match_problems(before, after, 4, 8);
  ASSERT_EQ(same_share.size(), 1u);
  EXPECT_EQ(same_share[0].status, ProblemStatus::Persists);  // rank 2 of 4 is ranks 4-5 of 8
  const auto same_count = match_problems(before, after, 8, 8);
  EXPECT_EQ(same_count[0].status, ProblemStatus::Moved);
  const auto other_share = match_problems(before, after, 4, 16);
  EXPECT_EQ(other_share[0].status, ProblemStatus::Moved);
}

TEST(ProblemMatching, SeveralRunsOfASideAverageTheTimeAtStake) {
  const auto side = problems_of_side({run(1, {row("load-imbalance", "solve", "2", 0.4, 0.3)}), run(1, {}),
                                      run(1, {row("load-imbalance", "solve", "2", 0.2, 0.1)})});
  ASSERT_EQ(side.size(), 1u);
  EXPECT_NEAR(side[0].lost_mean(), 0.2, 1e-12);
  EXPECT_NEAR(side[0].predicted_gain(), 0.2, 1e-12);
}

TEST(RunComparison, APredictionHeldFellShortOrExceeded) {
  auto verdict = [](double saved, double predicted) {
    const Comparison c =
        compare_runs({run(1.0, {row("load-imbalance", "solve", "2", 0.5, predicted)})}, {run(1.0 - saved, {})});
    return c.problems.at(0).verdict;
  };
  EXPECT_EQ(verdict(0.40, 0.42), PredictionVerdict::Held);
  EXPECT_EQ(verdict(0.20, 0.42), PredictionVerdict::FellShort);
  EXPECT_EQ(verdict(0.60, 0.42), PredictionVerdict::Exceeded);
  const Comparison same = compare_runs({run(1.0, {row("load-imbalance", "solve", "2", 0.5, 0.4)})},
                                       {run(1.0, {row("load-imbalance", "solve", "2", 0.45, 0.4)})});
  EXPECT_EQ(same.problems.at(0).verdict, PredictionVerdict::NotFixed);
  EXPECT_TRUE(std::isnan(same.problems.at(0).realised_gain_s));
}
