#include "tick_clock.h"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <string>

namespace perfsift::collect {

TickClock g_clock;

namespace {

struct Skew {
  bool on = false;
  double offset_ns = 0, drift = 0;
  int64_t origin = 0;
} g_skew;

int64_t raw_mono() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool invariant_tsc() {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0)
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
#endif
  return false;
}

// Ordered: the TSC is read after every earlier instruction has completed (lfence), so
// it brackets the clock read beside it.
int64_t read_tsc() {
#if defined(__x86_64__)
  _mm_lfence();
  return static_cast<int64_t>(__rdtsc());
#else
  return 0;
#endif
}

struct ClockPair {
  int64_t mono = 0, tsc = 0;
  int64_t gap = 0;  // ticks between the TSC readings around the clock's
};

// A (CLOCK_MONOTONIC, TSC) pair read at one instant: the TSC is read on both sides of
// the clock and the tightest of a few tries kept. A rank preempted between two plain
// reads (a loaded node, a sanitized build) would pair readings milliseconds apart, and
// a ratio measured over the run's first tenths of a second would be off by percents.
// The ratio's error over an interval is the pairs' width over its length: tight pairs
// (a few times the clock's own cost, tens of ns) keep a conversion within tens of ns.
ClockPair read_pair() {
  ClockPair best;
  int64_t best_gap = INT64_MAX;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int64_t before = read_tsc(), mono = mono_ns(), after = read_tsc();
    if (after < before) continue;  // moved to a core whose TSC reads differently
    if (after - before < best_gap) best_gap = after - before, best = {mono, before + (after - before) / 2, best_gap};
    if (best_gap < 400) break;  // about 0.1 us: a few times the clock's own cost
  }
  if (best_gap == INT64_MAX) best = {mono_ns(), read_tsc(), 0};  // no ordered pair at all: a plain one
  return best;
}

int64_t origin_gap = 0;  // the origin pair's, ticks

}  // namespace

int64_t mono_ns() {
  int64_t t = raw_mono();
  if (__builtin_expect(g_skew.on, 0)) t += static_cast<int64_t>(g_skew.offset_ns + (t - g_skew.origin) * g_skew.drift);
  return t;
}

void clock_origin() {
  static const bool tsc = invariant_tsc();
  g_clock.tsc = tsc;
  if (!tsc) {
    g_clock.mono0 = g_clock.tsc0 = mono_ns();
    g_clock.ns_per_tick = 1.0;
    return;
  }
  const ClockPair origin = read_pair();
  g_clock.mono0 = origin.mono;
  g_clock.tsc0 = origin.tsc;
  origin_gap = origin.gap;
}

void clock_refresh() {
  if (!g_clock.tsc) return;
  const ClockPair now = read_pair();
  if (now.tsc - g_clock.tsc0 <= 1000000) return;  // under ~0.3 ms of baseline: not meaningful yet
  g_clock.ns_per_tick = static_cast<double>(now.mono - g_clock.mono0) / static_cast<double>(now.tsc - g_clock.tsc0);
  const int64_t half_gap_ns = static_cast<int64_t>(std::max(origin_gap, now.gap) * g_clock.ns_per_tick / 2) + 1;
  g_clock.pair_error_ns = std::max(g_clock.pair_error_ns, half_gap_ns);
}

void clock_skew_for_test(int rank, double offset_ns, double drift_ppm) {
  g_skew.origin = raw_mono();
  g_skew.offset_ns = offset_ns * rank;
  g_skew.drift = drift_ppm * 1e-6 * rank;
  g_skew.on = true;
}

}  // namespace perfsift::collect
