// What the OS tells about the calling thread without hardware counters, and the
// process's CPU time: the builtin metrics a region's frame takes at its open and close.
#pragma once

#include <cstdint>

#include "io/trace_model.h"

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

// The calling thread's time runnable but waiting for a CPU (the second field of
// /proc/thread-self/schedstat) in ns; -1 where the kernel keeps no schedstat.
int64_t thread_run_delay_ns();

// The program window's OS figures for the thread that initialised MPI: opened at
// MPI_Init's exit, closed at MPI_Finalize's entry on the same thread.
class ProgramWindowOs {
 public:
  void open();
  io::ProgramOs close() const;  // what the OS counted since open(); NaN where it could not

 private:
  OsSample m_start;
  int64_t m_start_run_delay_ns = -1;
  bool m_open = false;
};

}  // namespace perfsift::collect
