// The rank's data saved to the spill file before the store is written: once a second by
// the watcher, at MPI_Finalize before its collective steps, and when the rank dies.
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "io/atomic_file.h"
#include "runtime.h"
#include "tick_clock.h"

namespace perfsift::collect {

// The watcher holds the spill lock; the recording threads only append records
// meanwhile, and those below size_acquire() are whole.
void Runtime::idle_flush() {
  std::unique_lock<std::mutex> lock(m_spill.mutex(), std::try_to_lock);
  if (!lock || !m_active || m_finished || m_spill.closed_for_good()) return;
  m_threads.keep_populated();
  if (m_checkpointing || m_idle_off || !m_spill.file().is_open()) return;
  const int n = m_threads.count();
  for (int k = 0; k < n && m_spill.file().is_open(); ++k) m_spill.write_committed(m_threads[k]);
}

// Everything the rank recorded, MPI_Finalize included, and its state: a rank killed
// while it waits in finish()'s collective steps for a dead peer (the launcher terminates
// the survivors of a crash) keeps its data.
void Runtime::checkpoint() {
  const std::lock_guard<std::mutex> lock(m_spill.mutex());
  m_checkpointing = true;
  m_idle_off = true;
  for (int k = 0; k < m_threads.count() && m_spill.file().is_open(); ++k)
    if (!m_spill.spill_locked(m_threads[k])) stop_tracing();
  if (m_spill.file().is_open()) {
    const io::FileSizeSignalIgnored guard;
    io::SpillState st = snapshot_state(true);
    st.profile_part.callsites = m_sites.table();
    st.profile_part.clock.local_fin_ns = 0;  // not measured yet: recover uses the start offset
    st.profile_part.clock.offset_fin_ns = m_clock.offset_init_ns;
    m_checkpointed = m_spill.file().write_state(st);
    if (!m_checkpointed) m_spill.give_up_file();
  }
}

// Signal / exit without MPI_Finalize: flush whatever the rank has. Raw clock times;
// recover applies the init offset.
// Runs on the watcher thread while the thread that took the signal waits in the
// handler, or at exit. A spill or checkpoint the signal interrupted is not repeated (its
// records would be written twice); the rank keeps what reached the file. Every thread's
// records are copied out, not taken: the other threads may still be recording.
void Runtime::emergency_flush(bool on_watcher) {
  static std::atomic<bool> once{false};
  if (!m_active || m_finished || m_checkpointing || once.exchange(true)) return;
  // On the watcher the lock's holder is a thread inside a spill: one that runs on
  // releases it within milliseconds; one stopped in the handler never does (half a
  // second, then the flush gives up). At exit the watcher may hold it for a moment.
  std::unique_lock<std::mutex> lock(m_spill.mutex(), std::defer_lock);
  bool locked = !on_watcher && (lock.lock(), true);
  for (int tries = 0; on_watcher && !locked && tries < 500; ++tries) {
    locked = lock.try_lock();
    if (!locked) usleep(1000);
  }
  m_finished = true;
  g_tracing = false;
  m_active = false;
  m_clock.local_fin_ns = 0;
  m_clock.offset_fin_ns = m_clock.offset_init_ns;
  const io::FileSizeSignalIgnored guard;
  const bool writing = m_spill.file().is_open() && locked;
  if (writing) {
    clock_refresh();
    for (int k = 0; k < m_threads.count(); ++k) m_spill.write_copy(m_threads[k]);
  }
  m_regions.close_all();
  if (!writing) return;
  m_regions.executions_to_ns();  // addresses mean nothing in another process
  m_spill.file().write_records({}, {}, {}, m_regions.executions());
  io::SpillState st = snapshot_state(false);
  st.profile_part.callsites = m_sites.table();
  m_spill.file().write_state(st);
  m_spill.file().close();
  m_spill.close_for_good();
}

// The abort is the rank's last event (flagged interrupted: the call never returns), so a
// reader finds it among the ranks' ends; `tag` holds the error code (docs/trace-store.md).
void Runtime::record_abort(MPI_Comm comm, int error_code, void *site) {
  if (!m_active || m_finished) return;
  {
    io::Event &ev = open_slot();
    ev.op = static_cast<uint16_t>(Op::MPI_Abort);
    ev.site = reinterpret_cast<uint64_t>(site);
    ev.t_enter = ev.t_exit = now_ticks();
    ev.tag = error_code;
    ev.flags |= io::kInterrupted;
    {
      const SharedTables shared;
      ev.comm = m_comms.index(comm);
    }
    commit_slot();
  }
  emergency_flush(false);
}

// The run's facts and the profile so far (no records).
io::SpillState Runtime::snapshot_state(bool complete) {
  io::SpillState st;
  st.run = m_run;
  io::RankTrace &t = st.profile_part;
  t.rank = m_rank;
  t.complete = complete;
  t.metric_names.assign(io::kMetricNames.begin(), io::kMetricNames.end());
  t.metric_names.insert(t.metric_names.end(), m_papi.names().begin(), m_papi.names().end());
  // Wall and MPI time are summed in ticks and become seconds here, with the ratio as
  // sharp as it is when the events leave memory: a region's wall time then agrees with
  // its executions' times (the steps), however early in the run it closed.
  m_regions.write_profile(t);
  t.comms = m_comms.records();
  t.clock = m_clock;
  t.program_os = m_program_os;
  return st;
}

}  // namespace perfsift::collect
