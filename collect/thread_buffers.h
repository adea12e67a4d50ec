// Each thread's record buffers, and the registry that finds them.
//
// Every thread that calls MPI records into its own buffers (ThreadState), registered
// once, on its first traced call; recording takes no lock. Thread 0 is the one that
// initialised MPI. Spilling, the watcher's idle flush, the Finalize checkpoint and the
// crash flush walk every registered thread's buffers under the spill mutex
// (event_spill.h); a thread's buffers outlive the thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "io/trace_model.h"
#include "pod_buffer.h"

namespace perfsift::collect {

// One thread's records. The owner appends; the watcher reads what lies below
// size_acquire(); spills, growth and clears happen under the spill mutex.
struct ThreadState {
  int32_t index = -1;  // -1: a thread left untraced (no room for its buffers)
  PodBuffer<io::Event> events;
  PodBuffer<io::RequestRecord> requests;
  PodBuffer<io::CompletionRecord> completions;
  io::Event *in_flight = nullptr;  // the call under way, for a death inside it (atomic access)
  int64_t spilled_events = 0;
  int64_t recorded_last_second = 0;  // spilled plus buffered events at the watcher's last tick
  // A spill deferred to the next commit (a buffer filled inside a call): clock ticks.
  int64_t spill_due = INT64_MAX;
  // Records below the watermarks are in the spill file; those below `prepared_events`
  // have site ids and ns times (only after a failed spill).
  size_t written_events = 0, written_requests = 0, written_completions = 0;
  size_t prepared_events = 0;
  // Running totals (MPI time in ticks, bytes): thread 0's give its regions their deltas;
  // the others' join thread 0's at MPI_Finalize, for the whole program's profile.
  int64_t cum[io::kBuiltinMetricCount] = {};
  int64_t last_enter_ns = INT64_MIN;  // of the last event converted to ns (EventSpill::events_to_ns)
};

// The calling thread's state, null until its first traced call. constinit: no TLS init
// wrapper call where another file reads it (initial-exec: see t_in_call in recorder.h).
extern thread_local constinit ThreadState *t_thread __attribute__((tls_model("initial-exec")));
// Regions (the region API, MPI_Pcontrol, -finstrument-functions) are thread 0's: other
// threads' markers are ignored (thread 0's region tree and profile are not shared).
inline bool on_thread0() { return t_thread && t_thread->index == 0; }

// The registered threads, in order of registration (index 0: the one that initialised MPI).
class ThreadRegistry {
 public:
  static constexpr int kMaxThreads = 4096;

  // Thread 0 (the calling thread), with `capacity` records per buffer for every thread;
  // false when memory cannot be mapped.
  bool register_main(size_t capacity);
  // A thread's first traced call. With no room for its buffers (more than kMaxThreads
  // threads, or out of memory) the thread is left untraced: a shared state of index -1.
  ThreadState *register_calling_thread();
  // Under the spill mutex, once a second: each thread's buffers faulted in ahead of use.
  void keep_populated();

  int count() const { return m_count.load(std::memory_order_acquire); }
  ThreadState &operator[](int k) const { return *m_threads[k]; }
  ThreadState &main() const { return *m_threads[0]; }
  bool is_main(const ThreadState *ts) const { return ts == m_threads[0]; }
  int64_t untraced() const { return m_untraced; }

 private:
  // Events faulted in at MPI_Init (2 MiB), and the least the watcher keeps ahead (1 MiB).
  static constexpr size_t kPopulatedAtInit = (2u << 20) / sizeof(io::Event);
  static constexpr size_t kPopulatedAhead = (1u << 20) / sizeof(io::Event);

  bool allocate(ThreadState &ts, size_t populated) const;

  ThreadState *m_threads[kMaxThreads] = {};
  std::atomic<int> m_count{0};
  std::mutex m_register_mutex;
  int64_t m_untraced = 0;
  size_t m_capacity = 0;
};

}  // namespace perfsift::collect
