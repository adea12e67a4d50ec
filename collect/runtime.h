// The collector's per-process state: the owner of its parts, and the per-call path.
//
// The parts: each thread's buffers (thread_buffers.h), thread 0's regions
// (region_stack.h) with its counters (papi_counters.h, os_sample.h), the communicators
// (comm_table.h), the live requests (live_requests.h), the call sites (call_sites.h), the
// spill file (event_spill.h); the run's facts and configuration read at start-up
// (run_facts.h). Start-up and the per-call path are here (runtime.cpp), the saves before
// the store in runtime_flush.cpp, the store at MPI_Finalize in finalize_store.cpp.
//
// Threads: recording takes no lock (thread_buffers.h). Thread 0 alone keeps the region
// stack and the profile (other threads' events take its innermost region and step). The
// rank-wide tables (requests by handle, communicators, matched messages) are shared:
// under MPI_THREAD_MULTIPLE the recorders update them under one mutex (SharedTables in
// recorder.h); at lower thread levels calls never overlap and no lock is taken.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "call_sites.h"
#include "clock_sync.h"
#include "comm_table.h"
#include "config/collect_config.h"
#include "event_spill.h"
#include "io/spill.h"
#include "io/trace_model.h"
#include "live_requests.h"
#include "os_sample.h"
#include "papi_counters.h"
#include "recorder.h"
#include "region_stack.h"
#include "thread_buffers.h"
#include "warnings.h"

namespace perfsift::collect {

class Runtime {
 public:
  Runtime() : m_regions(m_papi), m_spill(m_sites, m_regions, m_warnings) {}

  // Called right after PMPI_Init*; `t_before_init` is the raw clock at the wrapper's entry.
  void start(int64_t t_before_init, Op init_op, void *site);
  // Called from MPI_Finalize before PMPI_Finalize: writes the store.
  void finish(void *site);
  // Signal / atexit path: everything to the spill file, marked incomplete. On the watcher
  // thread (a signal: the traced thread waits in the handler) or at exit.
  void emergency_flush(bool on_watcher);
  // The watcher thread, once a second: committed records not yet in the spill file go
  // there (copies; the traced thread records on), so that a rank killed without warning
  // (SIGKILL, e.g. scancel of a step) keeps all but its last second.
  void idle_flush();
  // MPI_Abort, before PMPI_Abort ends the job: the call recorded (its communicator, the
  // error code, its call site and time), then the rank saved as at a crash. The MPI
  // library ends the aborting process without a signal or exit handler perfsift could use.
  void record_abort(MPI_Comm comm, int error_code, void *site);

  // --- used by the recorders
  // The hot path: the next free slot of the calling thread, then its commit.
  io::Event &open_slot();
  void commit_slot();
  // Events made outside a Call (MPI_Init, MPI_Finalize).
  void commit(io::Event &ev);
  CommTable &comms() { return m_comms; }
  LiveRequests &requests() { return m_requests; }
  // A request a traced call started: in the live table and the calling thread's records.
  int64_t new_request(MPI_Request handle, const RequestState &state, int64_t event_index);
  // The calling thread's next event, in io::thread_event form.
  static int64_t next_event_index() {
    const ThreadState &ts = *t_thread;
    return io::thread_event(ts.index, ts.spilled_events + static_cast<int64_t>(ts.events.size()));
  }
  void add_completion(const io::CompletionRecord &c) {
    ThreadState &ts = *t_thread;
    if (ts.index < 0) return;
    ts.completions.push_back(c);
    if (ts.completions.full()) buffer_full(ts, ts.completions);
  }
  void add_io_bytes(int64_t bytes, bool write) {
    ThreadState *ts = t_thread;
    if (!ts || ts->index < 0) return;
    ts->cum[write ? io::kIoBytesWritten : io::kIoBytesRead] += bytes;
  }

  // --- regions
  void region_begin(const char *name, bool step);
  void region_end(const char *name, bool step);

  int rank() const { return m_rank; }
  bool active() const { return m_active; }
  const config::CollectConfig &config() const { return m_cfg; }

 private:
  // start(), step by step
  void measure_start_clock(int64_t t_before_init);
  ClockOffset measure_clock();  // collective, at start and finish
  bool allocate_buffers();
  void begin_tracing(int64_t t_before_init, Op init_op, void *site);
  double measure_call_cost();
  // finish(), step by step
  void close_tracing(void *site);
  void checkpoint();  // every record and the state to the spill file before the collective steps
  void warn_about_run_problems();
  void write_store();
  bool spill_whole_rank(io::RankTrace &t);
  io::RankTrace build_trace();
  io::SpillState snapshot_state(bool complete);

  void account(ThreadState &ts, io::Event &ev);  // region, step and running totals of a finished call
  void spill(ThreadState &ts) {
    if (!m_spill.spill(ts)) stop_tracing();
  }
  template <class T>
  void buffer_full(ThreadState &ts, PodBuffer<T> &b) {
    if (!m_spill.buffer_full(ts, b)) stop_tracing();
  }
  void stop_tracing() {
    m_active = false;
    g_tracing = false;
  }

  config::CollectConfig m_cfg;
  bool m_active = false;
  bool m_finished = false;
  int m_rank = 0, m_nranks = 1;
  MPI_Comm m_private = MPI_COMM_NULL;
  int64_t m_start_ns = 0;  // rank 0's raw init time
  io::RunInfo m_run;
  io::ClockRecord m_clock;
  ProgramWindowOs m_window_os;
  io::ProgramOs m_program_os;  // NaN until MPI_Finalize's entry
  Warnings m_warnings;

  ThreadRegistry m_threads;
  PapiCounters m_papi;
  RegionStack m_regions;
  CommTable m_comms;
  LiveRequests m_requests;
  CallSites m_sites;
  EventSpill m_spill;
  bool m_idle_off = false;                // finish() has checkpointed: the watcher stays out
  volatile bool m_checkpointing = false;  // finish() is saving the rank: its spill file will be whole
  bool m_checkpointed = false;            // the spill file holds the whole rank up to MPI_Finalize
};

extern Runtime *const g_runtime;
inline Runtime &runtime() { return *g_runtime; }

}  // namespace perfsift::collect
