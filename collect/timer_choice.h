// Which timer the collector reads on every call, chosen at start-up: the cheapest one
// that gives times ranks can compare. The time-stamp counter qualifies only when it is
// invariant (constant rate through frequency and sleep states: CPUID 0x80000007 EDX bit
// 8) and the kernel vouches for it across cores (its clocksource is the TSC, or the
// hypervisor declares the TSC reliable); otherwise a clock_gettime clock is read.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace perfsift::collect {

enum class Timer : uint8_t { rdtsc, rdtscp, lfence_rdtsc, monotonic, monotonic_raw };
inline constexpr int kTimerCount = 5;
const char *timer_name(Timer t);
inline bool reads_tsc(Timer t) { return t == Timer::rdtsc || t == Timer::rdtscp || t == Timer::lfence_rdtsc; }

// What the machine says about its time-stamp counter.
struct TscFacts {
  bool invariant = false;     // CPUID 0x80000007 EDX bit 8
  bool rdtscp = false;        // CPUID 0x80000001 EDX bit 27
  bool synchronised = false;  // current clocksource "tsc", or the CPU flag tsc_reliable
};
TscFacts probe_tsc();
// From the kernel's words: /sys/devices/system/clocksource/clocksource0/current_clocksource
// and the flags line of /proc/cpuinfo.
bool tsc_synchronised(const std::string &current_clocksource, const std::string &cpu_flags);

struct TimerCost {
  Timer timer = Timer::monotonic;
  double ns_per_read = 0;  // NaN: the timer cannot be read here
};

bool usable(Timer t, const TscFacts &facts);
// The cheapest usable timer among `costs`; CLOCK_MONOTONIC when none is (it always is).
TimerCost choose_timer(std::span<const TimerCost> costs, const TscFacts &facts);

}  // namespace perfsift::collect
