#include "os_sample.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
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

int64_t thread_run_delay_ns() {
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[128];
  // The system call itself: read() is the collector's own interposer, which would count
  // these bytes as the application's I/O.
  const auto n = static_cast<ssize_t>(::syscall(SYS_read, fd, text, sizeof text - 1));
  ::close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  long long on_cpu = 0, waiting = 0;
  return std::sscanf(text, "%lld %lld", &on_cpu, &waiting) == 2 ? static_cast<int64_t>(waiting) : -1;
}

void ProgramWindowOs::open() {
  m_start = os_sample();
  m_start_run_delay_ns = thread_run_delay_ns();
  m_open = true;
}

io::ProgramOs ProgramWindowOs::close() const {
  io::ProgramOs out;
  if (!m_open) return out;
  const OsSample end = os_sample();
  const int64_t run_delay_ns = thread_run_delay_ns();
  out.thread_cpu_s = static_cast<double>(end.thread_cpu_ns - m_start.thread_cpu_ns) * 1e-9;
  if (run_delay_ns >= 0 && m_start_run_delay_ns >= 0)
    out.run_delay_s = static_cast<double>(run_delay_ns - m_start_run_delay_ns) * 1e-9;
  out.ctx_switches_involuntary = static_cast<double>(end.nivcsw - m_start.nivcsw);
  out.ctx_switches_voluntary = static_cast<double>(end.nvcsw - m_start.nvcsw);
  return out;
}

}  // namespace perfsift::collect
