#include "timer_choice.h"

#include <cmath>
#include <fstream>
#include <sstream>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace perfsift::collect {

const char *timer_name(Timer t) {
  switch (t) {
    case Timer::rdtsc:
      return "rdtsc";
    case Timer::rdtscp:
      return "rdtscp";
    case Timer::lfence_rdtsc:
      return "lfence+rdtsc";
    case Timer::monotonic:
      return "clock_gettime(CLOCK_MONOTONIC)";
    case Timer::monotonic_raw:
      return "clock_gettime(CLOCK_MONOTONIC_RAW)";
  }
  return "?";
}

namespace {

std::string first_line(const char *path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) return line;
  return "";
}

bool has_word(const std::string &text, const std::string &word) {
  std::istringstream in(text);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

}  // namespace

bool tsc_synchronised(const std::string &current_clocksource, const std::string &flags) {
  return has_word(current_clocksource, "tsc") || has_word(flags, "tsc_reliable");
}

TscFacts probe_tsc() {
  TscFacts f;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000007u && __get_cpuid(0x80000007u, &a, &b, &c, &d))
    f.invariant = (d >> 8) & 1u;
  if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) f.rdtscp = (d >> 27) & 1u;
  f.synchronised =
      tsc_synchronised(first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource"), cpu_flags());
#endif
  return f;
}

bool usable(Timer t, const TscFacts &facts) {
  if (!reads_tsc(t)) return true;
  if (!facts.invariant || !facts.synchronised) return false;
  return t != Timer::rdtscp || facts.rdtscp;
}

TimerCost choose_timer(std::span<const TimerCost> costs, const TscFacts &facts) {
  TimerCost best{Timer::monotonic, std::nan("")};
  for (const TimerCost &c : costs) {
    if (!usable(c.timer, facts) || !(c.ns_per_read >= 0)) continue;
    if (!(best.ns_per_read <= c.ns_per_read)) best = c;
  }
  return best;
}

}  // namespace perfsift::collect
