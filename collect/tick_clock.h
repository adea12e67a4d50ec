// The collector's clock. The hot path reads the invariant TSC (about half the cost
// of clock_gettime); ticks become CLOCK_MONOTONIC nanoseconds only when data leaves
// memory, with a ratio measured against CLOCK_MONOTONIC from the origin to the moment
// of conversion (clock_refresh before every conversion). A tick is converted after it
// was read, so it lies inside the interval its ratio was measured over, and the error
// stays within the two readings' own width however long the run: a ratio measured over
// the first second alone and applied later grows an error of about a microsecond a
// second, which reads as ranks' clocks drifting apart. Without an invariant TSC (no
// constant_tsc/nonstop_tsc in /proc/cpuinfo) ticks are nanoseconds.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace perfsift::collect {

struct TickClock {
  bool tsc = false;
  int64_t tsc0 = 0, mono0 = 0;  // the origin pair
  double ns_per_tick = 1.0;
  // Half the widest TSC bracket around a clock reading the ratio rests on (origin, latest
  // refresh), in ns: how far a converted time may be off CLOCK_MONOTONIC.
  int64_t pair_error_ns = 0;
};
extern TickClock g_clock;

// CLOCK_MONOTONIC in ns, with the test skew (PERFSIFT_TEST_CLOCK_SKEW) applied.
int64_t mono_ns();

inline int64_t now_ticks() {
#if defined(__x86_64__)
  if (__builtin_expect(g_clock.tsc, 1)) return static_cast<int64_t>(__rdtsc());
#endif
  return mono_ns();
}

// Sets the origin pair now; decides TSC or not (first call only).
void clock_origin();
// Re-measures ns_per_tick over [origin, now]; cheap enough for region boundaries. Call
// it before converting ticks read since the last refresh.
void clock_refresh();
inline int64_t ticks_to_ns(int64_t ticks) {
  return g_clock.mono0 + static_cast<int64_t>((ticks - g_clock.tsc0) * g_clock.ns_per_tick);
}

// Test hook: skew this rank's clock by rank * offset_ns and rank * drift_ppm.
void clock_skew_for_test(int rank, double offset_ns_per_rank, double drift_ppm_per_rank);

}  // namespace perfsift::collect
