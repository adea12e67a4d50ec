// The microbenchmarks' busy-machine rule (pipeline/cli/commands.h): quiet runs stay silent, a
// run whose ranks waited for cores is named, from the figures measured on this VM.
#include <gtest/gtest.h>

#include <vector>

#include "pipeline/cli/commands.h"

using perfsift::cli::warn_if_cores_were_busy;

TEST(BusyCores, QuietRoundTripsAreSilent) {
  // Idle cores: 0.4 - 0.9 us round trips, one 40 us outlier.
  std::vector<double> rt(200, 0.6e-6);
  rt[0] = 0.4e-6;
  rt[1] = 40e-6;
  EXPECT_FALSE(warn_if_cores_were_busy("calibrate", "round trip", rt));
}

TEST(BusyCores, ScheduledOutRanksWarn) {
  // One busy loop beside two ranks: most round trips wait a 2 ms scheduler slice.
  std::vector<double> rt(200, 2e-3);
  for (int i = 0; i < 20; ++i) rt[static_cast<size_t>(i)] = 1e-6;
  EXPECT_TRUE(warn_if_cores_were_busy("calibrate", "round trip", rt));
}

TEST(BusyCores, TenPercentIsTheLine) {
  std::vector<double> t(100, 1e-6);
  for (int i = 0; i < 10; ++i) t[static_cast<size_t>(i)] = 1e-3;
  EXPECT_FALSE(warn_if_cores_were_busy("train", "normal receive", t));  // 10 of 100: not over 10 %
  t[10] = 1e-3;
  EXPECT_TRUE(warn_if_cores_were_busy("train", "normal receive", t));
  // Slow by ten times but not by 100 us: a slower network, not a busy machine.
  EXPECT_FALSE(warn_if_cores_were_busy("train", "normal receive", std::vector<double>(50, 50e-6)));
  std::vector<double> slow_net(100, 5e-6);
  for (int i = 0; i < 50; ++i) slow_net[static_cast<size_t>(i)] = 60e-6;
  EXPECT_FALSE(warn_if_cores_were_busy("train", "normal receive", slow_net));
  EXPECT_FALSE(warn_if_cores_were_busy("train", "normal receive", {}));
}
