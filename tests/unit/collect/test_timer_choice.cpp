// The collector's timer choice (collect/timer_choice.h): the cheapest usable timer, the
// time-stamp counter only where it is invariant and the kernel vouches for it.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "collect/timer_choice.h"

namespace perfsift::collect {
namespace {

const std::vector<TimerCost> kVmCosts = {{Timer::rdtsc, 13.0},
                                         {Timer::rdtscp, 24.0},
                                         {Timer::lfence_rdtsc, 20.0},
                                         {Timer::monotonic, 45.0},
                                         {Timer::monotonic_raw, 31.0}};

TEST(TimerChoice, CheapestTscWhenInvariantAndSynchronised) {
  const TscFacts facts{true, true, true};
  const TimerCost c = choose_timer(kVmCosts, facts);
  EXPECT_EQ(c.timer, Timer::rdtsc);
  EXPECT_DOUBLE_EQ(c.ns_per_read, 13.0);
}

TEST(TimerChoice, NoTscWithoutInvariance) {
  EXPECT_EQ(choose_timer(kVmCosts, TscFacts{false, true, true}).timer, Timer::monotonic_raw);
}

TEST(TimerChoice, NoTscWhenTheKernelDoesNotVouchForIt) {
  EXPECT_EQ(choose_timer(kVmCosts, TscFacts{true, true, false}).timer, Timer::monotonic_raw);
}

TEST(TimerChoice, RdtscpOnlyWithTheInstruction) {
  const std::vector<TimerCost> costs = {{Timer::rdtsc, 30.0}, {Timer::rdtscp, 10.0}, {Timer::monotonic, 40.0}};
  EXPECT_EQ(choose_timer(costs, TscFacts{true, true, true}).timer, Timer::rdtscp);
  EXPECT_EQ(choose_timer(costs, TscFacts{true, false, true}).timer, Timer::rdtsc);
}

TEST(TimerChoice, AClockThatCannotBeReadIsSkipped) {
  const std::vector<TimerCost> costs = {{Timer::monotonic, 40.0}, {Timer::monotonic_raw, std::nan("")}};
  EXPECT_EQ(choose_timer(costs, TscFacts{}).timer, Timer::monotonic);
}

TEST(TimerChoice, AVdsoClockCheaperThanTheTscWins) {
  const std::vector<TimerCost> costs = {{Timer::rdtsc, 25.0}, {Timer::monotonic, 18.0}};
  EXPECT_EQ(choose_timer(costs, TscFacts{true, true, true}).timer, Timer::monotonic);
}

TEST(TimerChoice, MonotonicWhenNothingWasMeasured) {
  EXPECT_EQ(choose_timer({}, TscFacts{true, true, true}).timer, Timer::monotonic);
}

TEST(TimerChoice, KernelWordsForASynchronisedTsc) {
  EXPECT_TRUE(tsc_synchronised("tsc", "flags\t\t: fpu tsc constant_tsc"));
  EXPECT_TRUE(tsc_synchronised("kvm-clock", "flags\t\t: fpu tsc constant_tsc nonstop_tsc tsc_reliable"));
  EXPECT_FALSE(tsc_synchronised("hpet", "flags\t\t: fpu tsc constant_tsc nonstop_tsc"));
  EXPECT_FALSE(tsc_synchronised("kvm-clock", "flags\t\t: fpu tsc tsc_reliable_not"));
  EXPECT_FALSE(tsc_synchronised("", ""));
}

}  // namespace
}  // namespace perfsift::collect
