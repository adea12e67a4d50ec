#include "thread_buffers.h"

#include <algorithm>
#include <new>

namespace perfsift::collect {

constinit thread_local ThreadState *t_thread __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
// A thread that could not be given buffers records into this state's discard slot.
ThreadState g_untraced;
}  // namespace

// Thread 0's buffers: its first kPopulatedAtInit events faulted in (see pod_buffer.h).
bool ThreadRegistry::register_main(size_t capacity) {
  m_capacity = capacity;
  auto *ts = new ThreadState;
  if (!allocate(*ts, kPopulatedAtInit)) {
    delete ts;
    return false;
  }
  ts->index = 0;
  m_threads[0] = ts;
  m_count.store(1, std::memory_order_release);
  t_thread = ts;
  return true;
}

// The other threads' buffers are mapped but not populated (pages arrive as they are
// used; populating every thread's buffer up front would cost buffer_mb each).
ThreadState *ThreadRegistry::register_calling_thread() {
  const std::lock_guard<std::mutex> lock(m_register_mutex);
  const int n = m_count.load(std::memory_order_relaxed);
  ThreadState *ts = n < kMaxThreads ? new (std::nothrow) ThreadState : nullptr;
  if (ts && !allocate(*ts, 0)) {
    delete ts;
    ts = nullptr;
  }
  if (!ts) {
    ++m_untraced;
    t_thread = &g_untraced;
    return &g_untraced;
  }
  ts->index = n;
  m_threads[n] = ts;
  m_count.store(n + 1, std::memory_order_release);
  t_thread = ts;
  return ts;
}

// Requests and completions: as many slots as events (a call adds at most one of each on
// average); `populated` events (and none of the others) faulted in now, the rest ahead of
// use by the watcher (keep_populated).
bool ThreadRegistry::allocate(ThreadState &ts, size_t populated) const {
  return ts.events.allocate(m_capacity, populated) && ts.requests.allocate(m_capacity, 0) &&
         ts.completions.allocate(m_capacity, 0);
}

// Two more seconds at the rate each thread recorded in the last one (at least
// kPopulatedAhead records), so that recording threads seldom meet a first touch.
void ThreadRegistry::keep_populated() {
  const int n = count();
  for (int k = 0; k < n; ++k) {
    ThreadState &ts = *m_threads[k];
    const int64_t recorded = ts.spilled_events + static_cast<int64_t>(ts.events.size_acquire());
    const size_t ahead = std::max<size_t>(kPopulatedAhead, 2 * static_cast<size_t>(recorded - ts.recorded_last_second));
    ts.recorded_last_second = recorded;
    ts.events.populate_ahead(ahead);
    ts.requests.populate_ahead(ahead);
    ts.completions.populate_ahead(ahead);
  }
}

}  // namespace perfsift::collect
