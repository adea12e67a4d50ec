// The rank's spill file and the records that go there: a thread's buffers when they fill
// (then they are empty again), committed records once a second from the watcher (copies:
// the thread records on), and at a crash every thread's records and the call under way.
//
// Events and executions hold return addresses and clock ticks while in memory; call-site
// ids and nanoseconds once they leave it. Each record is converted once (records kept in
// memory after a failed spill are already converted).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>

#include "call_sites.h"
#include "io/spill.h"
#include "region_stack.h"
#include "thread_buffers.h"
#include "warnings.h"

namespace perfsift::collect {

class EventSpill {
 public:
  EventSpill(CallSites &sites, RegionStack &regions, Warnings &warnings)
      : m_sites(sites), m_regions(regions), m_warnings(warnings) {}

  // The spill file, its writes and the records' ids and times are the watcher's and the
  // recording threads' in turn, under this mutex.
  std::mutex &mutex() { return m_mutex; }
  io::SpillWriter &file() { return m_file; }
  // A write failed: the file is closed (a torn chunk ends it for good), the failure counted.
  void give_up_file() {
    m_file.close();
    ++m_failures;
  }
  int64_t failures() const { return m_failures; }
  // The crash flush closed the file: nothing more goes there; the rank is going.
  void close_for_good() { m_closed_for_good = true; }
  bool closed_for_good() const { return m_closed_for_good; }

  // The records of `ts` not written yet go to the file; then its buffers are empty.
  // Thread 0 takes the executions along. Without a file the buffers grow instead; false
  // when they cannot (out of memory): tracing must stop.
  bool spill(ThreadState &ts);
  bool spill_locked(ThreadState &ts);
  // A buffer other than the events' is full: spill now, or, inside a call (whose event
  // slot a spill would move), grow it and spill when the call is committed.
  template <class T>
  bool buffer_full(ThreadState &ts, PodBuffer<T> &b) {
    if (!ts.in_flight) return spill(ts);
    const std::lock_guard<std::mutex> lock(m_mutex);  // grow() may move the records
    if (!b.grow()) return spill_locked(ts);
    ts.spill_due = 0;
    return true;
  }
  // Call sites resolved and times in ns, for the records of `ts` not yet so.
  void prepare_for_disk(ThreadState &ts);
  // The watcher, under the lock: the committed records of `ts` not yet in the file, as
  // copies (those below size_acquire() are whole).
  void write_committed(ThreadState &ts);
  // The crash flush, under the lock: the committed records of `ts` not yet written, and
  // the call it is in (marked interrupted), as copies.
  void write_copy(ThreadState &ts);

 private:
  // Ticks to ns, each thread's calls in order (events written so far included). The tick
  // ratio sharpens between conversions (clock_refresh), which can move a call's start a
  // few ns before the previous call's: each thread's calls keep their order.
  static void events_to_ns(ThreadState &ts, std::span<io::Event> events);

  CallSites &m_sites;
  RegionStack &m_regions;
  Warnings &m_warnings;
  std::mutex m_mutex;
  io::SpillWriter m_file;
  int64_t m_failures = 0;
  bool m_closed_for_good = false;
};

}  // namespace perfsift::collect
