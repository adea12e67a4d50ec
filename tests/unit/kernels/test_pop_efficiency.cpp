// The POP efficiencies against hand-computed values, their identities, and replay misses.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/pop_efficiency.h"

using perfsift::kernels::pop_efficiency;
using perfsift::kernels::PopInputs;

namespace {

void expect_identities(const perfsift::kernels::PopEfficiency &e) {
  EXPECT_NEAR(e.parallel, e.load_balance * e.communication, 1e-12);
  EXPECT_NEAR(e.communication, e.serialisation * e.transfer, 1e-12);
  for (double x : {e.load_balance, e.serialisation, e.transfer, e.communication, e.parallel}) {
    EXPECT_GE(x, 0.0);
    EXPECT_LE(x, 1.0);
  }
}

}  // namespace

// Ranks computing 10, 20, 30, 40 ms in a 50 ms program that takes 45 ms on an ideal network.
TEST(PopEfficiency, KnownRun) {
  const auto e = pop_efficiency({0.100, 0.040, 4, 0.050, 0.045});
  EXPECT_NEAR(e.load_balance, 0.025 / 0.040, 1e-12);
  EXPECT_NEAR(e.communication, 0.8, 1e-12);
  EXPECT_NEAR(e.parallel, 0.5, 1e-12);
  EXPECT_NEAR(e.transfer, 0.9, 1e-12);
  EXPECT_NEAR(e.serialisation, 0.040 / 0.045, 1e-12);
  EXPECT_TRUE(e.note.empty()) << e.note;
  expect_identities(e);
}

// The replay's own error against the measured run is no transfer: the ideal network is
// taken relative to the replay as measured (40 ms replayed, 36 ms on an ideal network).
TEST(PopEfficiency, TransferIsRelativeToTheBaselineReplay) {
  PopInputs in{0.100, 0.040, 4, 0.050, 0.036};
  in.baseline_runtime_s = 0.040;
  const auto e = pop_efficiency(in);
  EXPECT_NEAR(e.transfer, 0.9, 1e-12);
  EXPECT_NEAR(e.communication, 0.8, 1e-12);
  EXPECT_NEAR(e.serialisation, 0.8 / 0.9, 1e-12);
  EXPECT_TRUE(e.note.empty()) << e.note;
  expect_identities(e);
}

TEST(PopEfficiency, WithoutReplayTransferAndSerialisationAreUnknown) {
  PopInputs in{0.060, 0.030, 2, 0.040};
  const auto e = pop_efficiency(in);
  EXPECT_NEAR(e.load_balance, 1.0, 1e-12);
  EXPECT_NEAR(e.communication, 0.75, 1e-12);
  EXPECT_NEAR(e.parallel, 0.75, 1e-12);
  EXPECT_TRUE(std::isnan(e.transfer));
  EXPECT_TRUE(std::isnan(e.serialisation));
}

// The ideal-network replay ending before the busiest rank's computation is a replay miss:
// serialisation is held at 1 and said so; the identities still hold.
TEST(PopEfficiency, ReplayShorterThanComputationIsANote) {
  const auto e = pop_efficiency({0.060, 0.040, 2, 0.050, 0.035});
  EXPECT_EQ(e.serialisation, 1.0);
  EXPECT_NEAR(e.transfer, 0.8, 1e-12);
  EXPECT_NE(e.note.find("replay miss"), std::string::npos) << e.note;
  expect_identities(e);
}

TEST(PopEfficiency, ReplayLongerThanRunIsANote) {
  const auto e = pop_efficiency({0.060, 0.040, 2, 0.050, 0.055});
  EXPECT_EQ(e.transfer, 1.0);
  EXPECT_NEAR(e.serialisation, 0.8, 1e-12);
  EXPECT_NE(e.note.find("replay miss"), std::string::npos) << e.note;
  expect_identities(e);
}

TEST(PopEfficiency, NoRanksOrNoTimeIsNotComputable) {
  for (const PopInputs &in : {PopInputs{0, 0, 0, 1.0, 1.0}, PopInputs{1.0, 1.0, 2, 0, 1.0}}) {
    const auto e = pop_efficiency(in);
    EXPECT_TRUE(std::isnan(e.load_balance));
    EXPECT_TRUE(std::isnan(e.parallel));
    EXPECT_TRUE(std::isnan(e.transfer));
  }
}

// A run without computation: no imbalance, and all its time is communication.
TEST(PopEfficiency, NoComputation) {
  const auto e = pop_efficiency({0, 0, 3, 0.010, 0.004});
  EXPECT_EQ(e.load_balance, 1.0);
  EXPECT_EQ(e.communication, 0.0);
  EXPECT_EQ(e.parallel, 0.0);
  EXPECT_EQ(e.serialisation, 0.0);
  EXPECT_NEAR(e.transfer, 0.4, 1e-12);
}
