#include <gtest/gtest.h>

#include "kernels/clock.h"
#include "kernels/message_balance.h"

using namespace perfsift;

TEST(Clock, LinearDriftBetweenMeasurements) {
  io::ClockRecord c;
  c.offset_init_ns = -1000;
  c.offset_fin_ns = -3000;
  c.local_init_ns = 10000;
  c.local_fin_ns = 20000;
  EXPECT_EQ(kernels::clock_offset_at(c, 10000), -1000);
  EXPECT_EQ(kernels::clock_offset_at(c, 15000), -2000);
  EXPECT_EQ(kernels::clock_offset_at(c, 20000), -3000);
  EXPECT_EQ(kernels::clock_offset_at(c, 25000), -4000);  // extrapolated
}

TEST(Clock, InitOnlyIsConstant) {
  io::ClockRecord c;
  c.offset_init_ns = 500;
  c.local_init_ns = 100;
  EXPECT_EQ(kernels::clock_offset_at(c, 1000000), 500);
}

TEST(Clock, CorrectTimesShiftsEventsAndSteps) {
  io::RankTrace t;
  t.clock.offset_init_ns = 100;
  t.clock.offset_fin_ns = 100;
  t.clock.local_init_ns = 0;
  t.clock.local_fin_ns = 1000;
  io::Event e;
  e.t_enter = 400;
  e.t_exit = 500;
  t.events.push_back(e);
  t.steps.push_back({0, 0, 200, 300});
  kernels::correct_times(t, 50);
  EXPECT_EQ(t.events[0].t_enter, 450);
  EXPECT_EQ(t.events[0].t_exit, 550);
  EXPECT_EQ(t.steps[0].t_begin, 250);
}

TEST(MessageBalance, CountsUnmatchedPerChannel) {
  using kernels::Channel;
  std::vector<Channel> sends = {{0, 0, 1, 5}, {0, 0, 1, 5}, {0, 1, 0, 5}, {1, 0, 1, 5}};
  std::vector<Channel> recvs = {{0, 0, 1, 5}, {0, 1, 0, 5}, {0, 1, 0, 5}, {0, 2, 0, 9}};
  auto b = kernels::balance_messages(sends, recvs);
  EXPECT_EQ(b.sends, 4);
  EXPECT_EQ(b.receives, 4);
  EXPECT_EQ(b.unmatched_sends, 2);     // one more 0->1 tag 5 on comm 0, and comm 1's message
  EXPECT_EQ(b.unmatched_receives, 2);  // one more 1->0, and the 2->0 tag 9
  EXPECT_EQ(b.channels_with_unmatched, 4);
}

TEST(MessageBalance, AllMatched) {
  std::vector<kernels::Channel> m = {{0, 0, 1, 1}, {0, 1, 0, 1}};
  auto b = kernels::balance_messages(m, m);
  EXPECT_EQ(b.unmatched_sends + b.unmatched_receives, 0);
}
