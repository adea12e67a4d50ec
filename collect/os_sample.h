// What the OS tells about the calling thread without hardware counters, and the
// process's CPU time: the builtin metrics a region's frame takes at its open and close.
#pragma once

#include <cstdint>

namespace perfsift::collect {

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and getrusage(RUSAGE_THREAD)'s
// context switches and page faults, with the process's resident-set high-water mark. Two
// system calls (about a microsecond each on a loaded VM), so region boundaries take one
// only when the last is kOsSampleGapNs old (OsSampler).
struct OsSample {
  int64_t thread_cpu_ns = 0;
  int64_t nvcsw = 0, nivcsw = 0, minflt = 0, majflt = 0;
  int64_t maxrss_kb = 0;
};
OsSample os_sample();
inline constexpr double kOsSampleGapNs = 100e3;

// CLOCK_PROCESS_CPUTIME_ID in seconds.
double process_cpu_seconds();

// The OS's figures at a region boundary at `ticks`: sampled when the last sample is at
// least kOsSampleGapNs old; else the last one, its CPU time advanced by the time since
// (a thread between two close boundaries is taken as on the CPU, without switches or
// faults; the next sample brings what it missed). A tight loop of short regions thus
// costs no system call per boundary; regions shorter than the gap are estimates.
class OsSampler {
 public:
  OsSample at(int64_t ticks);

 private:
  OsSample m_last;  // thread 0's last sample, at m_ticks
  int64_t m_ticks = 0;
  bool m_sampled = false;
};

}  // namespace perfsift::collect
