#include "tick_clock.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>

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

// Ordered: the ticks are read after every earlier instruction has completed (lfence), so
// they bracket the clock read beside them.
int64_t read_ticks_ordered() {
#if defined(__x86_64__)
  if (reads_tsc(g_clock.timer)) {
    _mm_lfence();
    return static_cast<int64_t>(__rdtsc());
  }
#endif
  return read_timer(g_clock.timer);
}

// The least time one read of `timer` takes, in ns: the best of a few batches (a batch
// the scheduler interrupted reads long); NaN when the clock cannot be read.
double read_cost(Timer timer) {
  timespec probe;
  if (timer == Timer::monotonic_raw && clock_gettime(CLOCK_MONOTONIC_RAW, &probe) != 0) return std::nan("");
  constexpr int kReads = 256, kBatches = 5;
  double best = INFINITY;
  for (int b = 0; b < kBatches; ++b) {
    int64_t sink = 0;
    const int64_t t0 = raw_mono();
    for (int i = 0; i < kReads; ++i) sink += read_timer(timer);
    const int64_t t1 = raw_mono();
    asm volatile("" : : "r"(sink));
    best = std::min(best, static_cast<double>(t1 - t0) / kReads);
  }
  return best;
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
    const int64_t before = read_ticks_ordered(), mono = mono_ns(), after = read_ticks_ordered();
    if (after < before) continue;  // moved to a core whose TSC reads differently
    if (after - before < best_gap) best_gap = after - before, best = {mono, before + (after - before) / 2, best_gap};
    if (best_gap < 400) break;  // about 0.1 us: a few times the clock's own cost
  }
  if (best_gap == INT64_MAX) best = {mono_ns(), read_ticks_ordered(), 0};  // no ordered pair at all: a plain one
  return best;
}

int64_t origin_gap = 0;  // the origin pair's, ticks

}  // namespace

int64_t mono_ns() {
  int64_t t = raw_mono();
  if (__builtin_expect(g_skew.on, 0)) t += static_cast<int64_t>(g_skew.offset_ns + (t - g_skew.origin) * g_skew.drift);
  return t;
}

TimerCost choose_clock() {
  const TscFacts facts = probe_tsc();
  TimerCost costs[kTimerCount];
  int n = 0;
  for (int k = 0; k < kTimerCount; ++k) {
    const auto timer = static_cast<Timer>(k);
    if (usable(timer, facts)) costs[n++] = {timer, read_cost(timer)};
  }
  return choose_timer(std::span<const TimerCost>(costs, n), facts);
}

void clock_origin() {
  static const TimerCost chosen = choose_clock();
  g_clock.timer = chosen.timer;
  g_clock.ns_per_read = chosen.ns_per_read;
  if (g_clock.timer == Timer::monotonic) {
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
  if (g_clock.timer == Timer::monotonic) return;
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
