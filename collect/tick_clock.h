// The collector's clock. The hot path reads the timer chosen at start-up (timer_choice.h:
// the cheapest that ranks can compare, the invariant TSC where the kernel vouches for
// it); ticks become CLOCK_MONOTONIC nanoseconds only when data leaves memory, with a
// ratio measured against CLOCK_MONOTONIC from the origin to the moment of conversion
// (clock_refresh before every conversion). A tick is converted after it was read, so it
// lies inside the interval its ratio was measured over, and the error stays within the
// two readings' own width however long the run: a ratio measured over the first second
// alone and applied later grows an error of about a microsecond a second, which reads as
// ranks' clocks drifting apart. With CLOCK_MONOTONIC chosen, ticks are its nanoseconds.
#pragma once

#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "timer_choice.h"

namespace perfsift::collect {

struct TickClock {
  Timer timer = Timer::monotonic;
  double ns_per_read = 0;       // the chosen timer's cost, measured at the choice
  int64_t tsc0 = 0, mono0 = 0;  // the origin pair: ticks, CLOCK_MONOTONIC ns
  double ns_per_tick = 1.0;
  // Half the widest TSC bracket around a clock reading the ratio rests on (origin, latest
  // refresh), in ns: how far a converted time may be off CLOCK_MONOTONIC.
  int64_t pair_error_ns = 0;
};
extern TickClock g_clock;

// CLOCK_MONOTONIC in ns, with the test skew (PERFSIFT_TEST_CLOCK_SKEW) applied.
int64_t mono_ns();

inline int64_t raw_clock_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// One read of `timer`.
inline int64_t read_timer(Timer timer) {
  switch (timer) {
#if defined(__x86_64__)
    case Timer::rdtsc:
      return static_cast<int64_t>(__rdtsc());
    case Timer::rdtscp: {
      unsigned aux;
      return static_cast<int64_t>(__rdtscp(&aux));
    }
    case Timer::lfence_rdtsc:
      _mm_lfence();
      return static_cast<int64_t>(__rdtsc());
#endif
    case Timer::monotonic_raw:
      return raw_clock_ns();
    default:
      return mono_ns();
  }
}

inline int64_t now_ticks() {
  if (__builtin_expect(g_clock.timer == Timer::rdtsc, 1)) {
#if defined(__x86_64__)
    return static_cast<int64_t>(__rdtsc());
#endif
  }
  return read_timer(g_clock.timer);
}

// Sets the origin pair now; chooses the timer (first call only: choose_clock).
void clock_origin();
// Measures each timer's cost and picks the cheapest usable one (timer_choice.h).
TimerCost choose_clock();
// Re-measures ns_per_tick over [origin, now]; cheap enough for region boundaries. Call
// it before converting ticks read since the last refresh.
void clock_refresh();
inline int64_t ticks_to_ns(int64_t ticks) {
  return g_clock.mono0 + static_cast<int64_t>((ticks - g_clock.tsc0) * g_clock.ns_per_tick);
}

// Test hook: skew this rank's clock by rank * offset_ns and rank * drift_ppm.
void clock_skew_for_test(int rank, double offset_ns_per_rank, double drift_ppm_per_rank);

}  // namespace perfsift::collect
