#include <gtest/gtest.h>

#include "io/clock_correction.h"

using namespace perfsift;

TEST(Clock, LinearDriftBetweenMeasurements) {
  io::ClockRecord c;
  c.offset_init_ns = -1000;
  c.offset_fin_ns = -3000;
  c.local_init_ns = 10000;
  c.local_fin_ns = 20000;
  EXPECT_EQ(io::clock_offset_at(c, 10000), -1000);
  EXPECT_EQ(io::clock_offset_at(c, 15000), -2000);
  EXPECT_EQ(io::clock_offset_at(c, 20000), -3000);
  EXPECT_EQ(io::clock_offset_at(c, 25000), -4000);  // extrapolated
}

TEST(Clock, DriftWithinTheErrorBoundsIsNoDrift) {
  // A loaded node at finalize: the best round trip took 4 ms, the offset measured there
  // is 2 ms off. The bounds overlap: one constant offset, the middle of what both admit.
  io::ClockRecord c;
  c.offset_init_ns = -4500;
  c.error_init_ns = 14500;
  c.offset_fin_ns = 1963000;
  c.error_fin_ns = 1989000;
  c.local_init_ns = 0;
  c.local_fin_ns = 380000000;
  EXPECT_EQ(io::clock_offset_at(c, 0), -4500);
  EXPECT_EQ(io::clock_offset_at(c, 380000000), -4500);
  // Apart by more than the bounds: the drift is real, the line goes through both.
  c.offset_fin_ns = 2100000;
  c.error_fin_ns = 50000;
  EXPECT_EQ(io::clock_offset_at(c, 0), -4500);
  EXPECT_EQ(io::clock_offset_at(c, 380000000), 2100000);
  EXPECT_EQ(io::clock_offset_at(c, 190000000), -4500 + (2100000 + 4500) / 2);
}

TEST(Clock, InitOnlyIsConstant) {
  io::ClockRecord c;
  c.offset_init_ns = 500;
  c.local_init_ns = 100;
  EXPECT_EQ(io::clock_offset_at(c, 1000000), 500);
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
  io::correct_times(t, 50);
  EXPECT_EQ(t.events[0].t_enter, 450);
  EXPECT_EQ(t.events[0].t_exit, 550);
  EXPECT_EQ(t.steps[0].t_begin, 250);
}
