#include "tick_clock.h"

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

int64_t read_tsc() {
#if defined(__x86_64__)
  return static_cast<int64_t>(__rdtsc());
#else
  return 0;
#endif
}

}  // namespace

int64_t mono_ns() {
  int64_t t = raw_mono();
  if (__builtin_expect(g_skew.on, 0)) t += static_cast<int64_t>(g_skew.offset_ns + (t - g_skew.origin) * g_skew.drift);
  return t;
}

void clock_origin() {
  static const bool tsc = invariant_tsc();
  g_clock.tsc = tsc;
  g_clock.mono0 = mono_ns();
  g_clock.tsc0 = tsc ? read_tsc() : g_clock.mono0;
  if (!tsc) g_clock.ns_per_tick = 1.0;
}

void clock_refresh() {
  if (!g_clock.tsc) return;
  const int64_t mono = mono_ns(), tsc = read_tsc();
  if (tsc - g_clock.tsc0 > 1000000)  // over ~0.3 ms of baseline: meaningful
    g_clock.ns_per_tick = static_cast<double>(mono - g_clock.mono0) / static_cast<double>(tsc - g_clock.tsc0);
}

void clock_skew_for_test(int rank, double offset_ns, double drift_ppm) {
  g_skew.origin = raw_mono();
  g_skew.offset_ns = offset_ns * rank;
  g_skew.drift = drift_ppm * 1e-6 * rank;
  g_skew.on = true;
}

}  // namespace perfsift::collect
