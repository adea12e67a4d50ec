#include "os_sample.h"

#include <sys/resource.h>

#include <ctime>

#include "tick_clock.h"

namespace perfsift::collect {

OsSample os_sample() {
  OsSample s;
  timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) s.thread_cpu_ns = ts.tv_sec * int64_t{1000000000} + ts.tv_nsec;
  rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) == 0) {
    s.nvcsw = ru.ru_nvcsw;
    s.nivcsw = ru.ru_nivcsw;
    s.minflt = ru.ru_minflt;
    s.majflt = ru.ru_majflt;
    s.maxrss_kb = ru.ru_maxrss;  // the process's (Linux fills it from the mm for every `who`)
  }
  return s;
}

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

OsSample OsSampler::at(int64_t ticks) {
  const double since_ns = static_cast<double>(ticks - m_ticks) * g_clock.ns_per_tick;
  if (m_sampled && since_ns >= 0 && since_ns < kOsSampleGapNs) {
    m_last.thread_cpu_ns += static_cast<int64_t>(since_ns);
  } else {
    m_last = os_sample();
    m_sampled = true;
  }
  m_ticks = ticks;
  return m_last;
}

}  // namespace perfsift::collect
