// The collector's per-process state: configuration, event buffers, region tree,
// request and communicator registries, PAPI event set, clocks and spill file.
//
// Threads: every thread that calls MPI records into its own buffers (ThreadState),
// registered once, on its first traced call; recording takes no lock. Thread 0 is the
// one that initialised MPI: it alone keeps the region stack and the profile (other
// threads' events take its innermost region and step). The rank-wide tables (requests
// by handle, communicators, matched messages) are shared: under MPI_THREAD_MULTIPLE
// the recorders update them under one mutex (SharedTables in recorder.h); at lower
// thread levels calls never overlap and no lock is taken. Spilling, the watcher's
// idle flush, the Finalize checkpoint and the crash flush walk every registered
// thread's buffers under the spill mutex; a thread's buffers outlive the thread.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/collect_config.h"
#include "pod_buffer.h"
#include "io/spill.h"
#include "io/trace_model.h"
#include "recorder.h"
#include "request_table.h"

namespace perfsift::collect {

struct RegionNode {
  std::string name;
  std::string path;
  int32_t parent = -1;
  std::vector<std::pair<std::string, int32_t>> children;
  std::vector<double> acc;  // inclusive metrics: builtins then PAPI events
  int32_t steps = 0;        // step executions so far
};

// What the OS tells about the calling thread without hardware counters: its CPU time
// (CLOCK_THREAD_CPUTIME_ID) and getrusage(RUSAGE_THREAD)'s context switches and page
// faults, with the process's resident-set high-water mark. Two system calls (about a
// microsecond each on a loaded VM), so region boundaries take one only when the last is
// kOsSampleGapNs old (Runtime::os_at).
struct OsSample {
  int64_t thread_cpu_ns = 0;
  int64_t nvcsw = 0, nivcsw = 0, minflt = 0, majflt = 0;
  int64_t maxrss_kb = 0;
};
OsSample os_sample();
inline constexpr double kOsSampleGapNs = 100e3;

struct Frame {
  int32_t region;
  int64_t t0;
  double cpu0;
  int64_t cum0[io::kBuiltinMetricCount];
  std::vector<long long> papi0;
  int32_t step;        // step number when this frame is a step, else -1
  int32_t outer_step;  // innermost step number outside this frame
  OsSample os0;        // at the frame's open
};

// One thread's records. The owner appends; the watcher reads what lies below
// size_acquire(); spills, growth and clears happen under the spill mutex.
struct ThreadState {
  int32_t index = -1;  // -1: a thread left untraced (no room for its buffers)
  PodBuffer<Event> events;
  PodBuffer<io::RequestRecord> requests;
  PodBuffer<io::CompletionRecord> completions;
  Event *in_flight = nullptr;  // the call under way, for a death inside it (atomic access)
  int64_t spilled_events = 0;
  int64_t recorded_last_second = 0;  // spilled plus buffered events at the watcher's last tick
  // A spill deferred to the next commit (a buffer filled inside a call): clock ticks.
  int64_t spill_due = INT64_MAX;
  // Records below the watermarks are in the spill file; those below `prepared_events`
  // have site ids and ns times (only after a failed spill).
  size_t written_events = 0, written_requests = 0, written_completions = 0;
  size_t prepared_events = 0;
  int64_t cum[io::kBuiltinMetricCount] = {};  // threads other than 0: their running totals
  int64_t last_enter_ns = INT64_MIN;          // of the last event converted to ns (events_to_ns)
};

// The calling thread's state, null until its first traced call.
extern thread_local ThreadState *t_thread __attribute__((tls_model("initial-exec")));
// Regions (the region API, MPI_Pcontrol, -finstrument-functions) are thread 0's: other
// threads' markers are ignored (thread 0's region tree and profile are not shared).
inline bool on_thread0() { return t_thread && t_thread->index == 0; }

class Runtime {
 public:
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

  // --- used by the recorders
  // The hot path: the next free slot of the calling thread, then its commit.
  Event &open_slot();
  void commit_slot();
  // Events made outside a Call (MPI_Init, MPI_Finalize).
  void commit(Event &ev);
  // Index of `comm` in this rank's table (registered on first sight); *inter tells
  // whether it is an intercommunicator.
  int32_t comm_index(MPI_Comm comm, bool *inter = nullptr);
  void comm_forget(MPI_Comm comm);
  int32_t world_rank(int32_t comm_idx, int peer, bool remote);
  int64_t new_request(MPI_Request handle, const RequestState &state, int64_t event_index);
  RequestState *find_request(MPI_Request handle);
  void drop_request(MPI_Request handle);
  // Completion: the handle's live request, the calling thread's own first (several live
  // requests may share a handle value: Open MPI's requests completed at once), and its
  // removal (persistent ones stay).
  RequestState *find_completing(MPI_Request handle);
  void drop_completing(MPI_Request handle);
  // Before a completion call: the handle's live request, taken out of the table (a
  // persistent one stays), so that another thread cannot take it for a request MPI
  // starts under the same handle value once this one is freed. False when none.
  bool claim_request(MPI_Request handle, RequestState &out);
  // A claimed request the call did not complete goes back, first in line.
  void return_request(MPI_Request handle, const RequestState &st) { m_live_requests.push_front(handle, st); }
  void remember_message(MPI_Message m, int32_t comm) { m_message_comm[m] = comm; }
  int32_t take_message(MPI_Message m) {
    auto it = m_message_comm.find(m);
    if (it == m_message_comm.end()) return -1;
    int32_t c = it->second;
    m_message_comm.erase(it);
    return c;
  }
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
    (ts->index == 0 ? m_cum : ts->cum)[write ? io::kIoBytesWritten : io::kIoBytesRead] += bytes;
  }

  // --- regions
  void region_begin(const char *name, bool step);
  void region_end(const char *name, bool step);

  int rank() const { return m_rank; }
  bool active() const { return m_active; }
  const config::CollectConfig &config() const { return m_cfg; }

 private:
  void register_comm(MPI_Comm comm);
  // start(), step by step
  bool load_config();
  void apply_test_clock_skew(int64_t &t_before_init);
  void select_groups();
  void record_run_facts(int64_t t_before_init);
  bool allocate_buffers();
  void open_root_region(int64_t t_before_init);
  void begin_tracing(int64_t t_before_init, Op init_op, void *site);
  // finish(), step by step
  void close_tracing(void *site);
  void warn_about_run_problems();
  void write_store();
  bool spill_whole_rank(io::RankTrace &t);
  void setup_papi();
  void read_papi(std::vector<long long> &out);
  void close_frame(bool keep_on_stack);
  // The OS's figures at a region boundary at `ticks`: sampled when the last sample is at
  // least kOsSampleGapNs old; else the last one, its CPU time advanced by the time since
  // (a thread between two close boundaries is taken as on the CPU, without switches or
  // faults; the next sample brings what it missed). A tight loop of short regions thus
  // costs no system call per boundary; regions shorter than the gap are estimates.
  OsSample os_at(int64_t ticks);
  void measure_clock(int64_t &offset, int64_t &error, int64_t &local);
  void spill_buffers(ThreadState &ts);
  void spill_locked(ThreadState &ts);
  // Ticks to ns, each thread's calls in order (events written so far included).
  void events_to_ns(ThreadState &ts, std::span<Event> events);
  void prepare_for_disk(ThreadState &ts);  // call sites resolved and times in ns, for records not yet so
  // A buffer other than the events' is full: spill now, or, inside a call (whose event
  // slot a spill would move), grow it and spill when the call is committed.
  template <class T>
  void buffer_full(ThreadState &ts, PodBuffer<T> &b) {
    if (!ts.in_flight) return spill_buffers(ts);
    const std::lock_guard<std::mutex> lock(m_spill_mutex);  // grow() may move the records
    if (!b.grow()) return spill_locked(ts);
    ts.spill_due = 0;
  }
  ThreadState *register_thread();
  bool allocate_thread(ThreadState &ts, size_t populated);
  void keep_buffers_populated();
  int thread_count() const { return m_nthreads.load(std::memory_order_acquire); }
  // Thread 0's innermost region and step, for the other threads' events.
  void publish_region();
  // The crash flush of one thread: its committed records not yet written, and the call
  // it is in (marked interrupted), as copies.
  void flush_thread_copy(ThreadState &ts);
  // finish(): every record and the state to the spill file before the collective steps.
  void checkpoint();
  void account(ThreadState &ts, Event &ev);  // region, step and running totals of a finished call
  io::SpillState snapshot_state(bool complete);
  io::RankTrace build_trace();
  void resolve_sites(std::span<Event> events);
  void warn(const std::string &msg);  // rank 0 prints once per message

  config::CollectConfig m_cfg;
  bool m_active = false;
  bool m_finished = false;
  int m_rank = 0, m_nranks = 1;
  MPI_Comm m_private = MPI_COMM_NULL;
  int64_t m_start_ns = 0;  // rank 0's raw init time
  io::RunInfo m_run;

  // Registered threads, in order of registration (index 0: the one that initialised MPI).
  static constexpr int kMaxThreads = 4096;
  // Events faulted in at MPI_Init (2 MiB), and the least the watcher keeps ahead (1 MiB).
  static constexpr size_t kPopulatedAtInit = (2u << 20) / sizeof(Event);
  static constexpr size_t kPopulatedAhead = (1u << 20) / sizeof(Event);
  ThreadState *m_threads[kMaxThreads] = {};
  std::atomic<int> m_nthreads{0};
  std::mutex m_register_mutex;
  int64_t m_untraced_threads = 0;
  std::atomic<int32_t> m_main_region{0}, m_main_step{-1};
  size_t m_capacity = 0;
  // The spill file, its writes and the records' ids and times are the watcher's and the
  // recording threads' in turn.
  std::mutex m_spill_mutex;
  size_t m_prepared_steps = 0;
  bool m_emergency = false;               // the crash flush ran: nothing more goes to the spill file
  bool m_idle_off = false;                // finish() has checkpointed: the watcher stays out
  volatile bool m_checkpointing = false;  // finish() is saving the rank: its spill file will be whole
  bool m_checkpointed = false;  // the spill file holds the whole rank up to MPI_Finalize  // a spill is under way: an
                                // emergency flush must not repeat it
  std::vector<io::StepRecord> m_steps;
  io::SpillWriter m_spill;
  int64_t m_spill_failures = 0;

  int64_t m_cum[io::kBuiltinMetricCount] = {};  // running totals for region deltas
  std::vector<RegionNode> m_regions;
  std::vector<Frame> m_stack;
  int64_t m_region_mismatches = 0;
  OsSample m_os_last;  // thread 0's last OS sample, at m_os_ticks
  int64_t m_os_ticks = 0;
  bool m_os_sampled = false;

  RequestTable<MPI_Request, RequestState> m_live_requests;
  // Matched messages (MPI_Mprobe/Improbe) carry their communicator to MPI_(I)mrecv.
  std::unordered_map<MPI_Message, int32_t> m_message_comm;
  int64_t m_next_request = 0;

  std::unordered_map<MPI_Comm, int32_t> m_comm_of_handle;
  std::vector<io::CommRecord> m_comms;
  std::vector<uint8_t> m_comm_inter;
  MPI_Comm m_last_comm = MPI_COMM_NULL;  // one-entry cache: most calls reuse a communicator
  int32_t m_last_comm_index = -1;
  std::unordered_map<uint64_t, int32_t> m_comm_hash_seen;

  int m_papi_set = -1;
  std::vector<std::string> m_papi_names;

  std::unordered_map<uint64_t, int32_t> m_site_ids;
  std::vector<io::CallSite> m_sites;

  io::ClockRecord m_clock;
  std::vector<std::string> m_warned;

  friend int64_t current_step();
};

extern Runtime *const g_runtime;
inline Runtime &runtime() { return *g_runtime; }

}  // namespace perfsift::collect
