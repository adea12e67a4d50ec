#include "runtime.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

#include "python_frames.h"
#include "run_facts.h"
#include "tick_clock.h"

namespace perfsift::collect {

bool g_tracing = false;
uint32_t g_group_mask = ~0u;
bool g_shared_lock = false;
std::mutex g_shared_mutex;
// Inside a traced call: keeps nested calls out of the trace.
constinit thread_local bool t_in_call __attribute__((tls_model("initial-exec"))) = false;

namespace {
// An untraced thread's calls are made here and dropped.
thread_local io::Event t_discard;
constexpr int kClockTag = 7001;
}  // namespace

// Never destroyed: atexit and signal paths may still use it.
Runtime *const g_runtime = new Runtime();

// ---------------------------------------------------------------- Call

Call::Call(Op op, void *site) : ev(runtime().open_slot()) {
  t_in_call = true;
  ev.op = static_cast<uint16_t>(op);
  ev.site = call_site_key(site);  // before the entry stamp: a wait for Python's GIL is not the call's
  ev.t_enter = now_ticks();
}

void Call::exit() { ev.t_exit = now_ticks(); }

Call::~Call() {
  if (ev.t_exit == 0) ev.t_exit = now_ticks();
  runtime().commit_slot();
  t_in_call = false;
}

io::Event &Runtime::open_slot() {
  ThreadState *ts = t_thread;
  if (__builtin_expect(ts == nullptr, 0)) ts = m_threads.register_calling_thread();
  if (__builtin_expect(ts->index < 0, 0)) return t_discard = io::Event{};
  io::Event &ev = *ts->events.end();  // a slot is always free: a full buffer spills at once
  ev = io::Event{};
  ev.thread = ts->index;
  __atomic_store_n(&ts->in_flight, &ev, __ATOMIC_RELEASE);
  return ev;
}

void Runtime::commit_slot() {
  ThreadState &ts = *t_thread;
  if (ts.index < 0) return;
  __atomic_store_n(&ts.in_flight, nullptr, __ATOMIC_RELEASE);
  io::Event &ev = *ts.events.end();
  account(ts, ev);
  ts.events.commit_one();
  if (ts.events.full() || ev.t_exit >= ts.spill_due) spill(ts);
}

void Runtime::account(ThreadState &ts, io::Event &ev) {
  if (ts.index == 0) {
    ev.region = m_regions.innermost();
    ev.step = m_regions.current_step();
  } else {
    ev.region = m_regions.published_region();
    ev.step = m_regions.published_step();
  }
  ts.cum[io::kMpiTime] += ev.t_exit - ev.t_enter;
  ts.cum[io::kMpiBytesSent] += ev.bytes - ev.bytes_recv;
  ts.cum[io::kMpiBytesRecv] += ev.bytes_recv;
}

void Runtime::commit(io::Event &ev) {
  if (!m_active) return;
  ThreadState &ts = m_threads.main();
  account(ts, ev);
  ts.events.push_back(ev);
  if (ts.events.full() || ev.t_exit >= ts.spill_due) spill(ts);
}

int64_t Runtime::new_request(MPI_Request handle, const RequestState &state, int64_t event_index) {
  const RequestState st = m_requests.add(handle, state);
  io::RequestRecord r;
  r.id = st.id;
  r.event = event_index;
  r.peer = st.peer;
  r.tag = st.tag;
  r.comm = st.comm;
  r.kind = st.kind;
  r.bytes = st.bytes;
  ThreadState &ts = *t_thread;
  if (ts.index >= 0) {
    ts.requests.push_back(r);
    if (ts.requests.full()) buffer_full(ts, ts.requests);
  }
  return st.id;
}

// ---------------------------------------------------------------- regions

void Runtime::region_begin(const char *name, bool step) {
  if (!m_active || !name || !m_threads.is_main(t_thread)) return;  // regions: thread 0's only
  m_regions.begin(name, step);
}

void Runtime::region_end(const char *name, bool) {
  if (!m_active || !m_threads.is_main(t_thread)) return;  // regions: thread 0's only
  if (!name) return m_regions.count_mismatch();
  m_regions.end(name);
}

// ---------------------------------------------------------------- start

void Runtime::start(int64_t t_before_init, Op init_op, void *site) {
  PMPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &m_nranks);
  m_warnings.set_rank(m_rank);
  const int64_t entered = mono_ns();
  if (!load_collector_config(m_rank, m_cfg)) return;
  apply_test_clock_skew(m_rank, t_before_init);
  g_group_mask = mpi_group_mask(m_cfg.mpi_groups, m_warnings);
  g_call_paths.configure(m_cfg.site_wrappers, static_cast<int>(m_cfg.site_depth));
  PMPI_Comm_dup(MPI_COMM_WORLD, &m_private);
  const int64_t configured = mono_ns();
  measure_start_clock(t_before_init);
  const int64_t synchronised = mono_ns();
  record_run_facts(m_private, m_nranks, m_cfg.node_name, m_run);
  m_run.collector_config = m_cfg.source_text;
  if (!allocate_buffers()) return;
  const int64_t allocated = mono_ns();
  m_papi.start(m_cfg.papi_events, m_warnings, m_run);
  const int64_t counting = mono_ns();
  m_comms.add(MPI_COMM_WORLD);
  m_comms.add(MPI_COMM_SELF);
  int level = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&level);
  g_shared_lock = level == MPI_THREAD_MULTIPLE;
  m_regions.open_root(t_before_init, m_threads.main().cum);
  m_run.timer = timer_name(g_clock.timer);
  m_run.timer_read_ns = g_clock.ns_per_read;
  m_run.collector_call_ns = measure_call_cost();
  if (m_cfg.python_sites) detect_python();
  if (m_rank == 0 && std::getenv("PERFSIFT_REPORT_TIMING"))
    std::fprintf(stderr,
                 "perfsift: start-up %.1f ms on rank 0: settings and communicator %.1f, clock offsets %.1f, run facts "
                 "and buffers %.1f, counters %.1f, own call cost and Python frames %.1f\n",
                 (mono_ns() - entered) * 1e-6, (configured - entered) * 1e-6, (synchronised - configured) * 1e-6,
                 (allocated - synchronised) * 1e-6, (counting - allocated) * 1e-6, (mono_ns() - counting) * 1e-6);
  begin_tracing(t_before_init, init_op, site);
}

// What recording one call costs this process, in ns: entry and exit stamped, the event
// appended and committed, as a traced call does around the MPI library's work. Timed
// over scratch events in a thread state of their own (discarded), best of a few batches
// (a batch the scheduler interrupted reads long).
double Runtime::measure_call_cost() {
  constexpr int kCalls = 2000, kBatches = 5;
  ThreadState scratch;
  scratch.index = 0;
  if (!scratch.events.allocate(kCalls + 1, kCalls + 1)) return std::nan("");  // never full: no spill
  ThreadState *const own = t_thread;
  t_thread = &scratch;
  double best = INFINITY;
  for (int b = 0; b < kBatches; ++b) {
    scratch.events.clear();
    const int64_t t0 = mono_ns();
    for (int i = 0; i < kCalls; ++i) {
      Call call(Op::MPI_Pcontrol, __builtin_return_address(0));
      call.exit();
    }
    best = std::min(best, static_cast<double>(mono_ns() - t0) / kCalls);
  }
  t_thread = own;
  return best;
}

// Collective: the clock offset at start, and time zero of the store (rank 0 entering
// MPI_Init).
void Runtime::measure_start_clock(int64_t t_before_init) {
  const ClockOffset measured = measure_clock();
  m_clock.offset_init_ns = measured.offset_ns;
  m_clock.local_init_ns = measured.local_ns;
  clock_refresh();
  m_clock.error_init_ns = measured.error_ns + g_clock.pair_error_ns;  // offset and tick conversion (tick_clock.h)
  m_start_ns = ticks_to_ns(t_before_init);
  PMPI_Bcast(&m_start_ns, 1, MPI_INT64_T, 0, m_private);
}

// Collective: this rank's clock against rank 0's.
ClockOffset Runtime::measure_clock() {
  const int rounds = static_cast<int>(std::max<int64_t>(1, m_cfg.clock_sync_rounds));
  return measure_clock_offset(m_private, rounds, kClockTag);
}

// Thread 0's buffers and the spill file; false (tracing off) when memory cannot be mapped.
bool Runtime::allocate_buffers() {
  const size_t capacity =
      std::max<size_t>(1024, static_cast<size_t>(m_cfg.buffer_mb) * 1024 * 1024 / sizeof(io::Event));
  if (!m_threads.register_main(capacity)) {
    m_warnings.say("cannot map " + std::to_string(m_cfg.buffer_mb) +
                   " MiB of event buffers; tracing is off (lower buffer_mb)");
    return false;
  }
  std::string err;
  if (!m_spill.file().open(m_cfg.spill_dir, io::make_spill_header(m_rank, m_nranks, m_start_ns), &err))
    m_warnings.say(err + "; events beyond the buffer will be counted as lost");
  return true;
}

void Runtime::begin_tracing(int64_t t_before_init, Op init_op, void *site) {
  // Rank 0 measures the clocks one rank after another, releasing them tens of ms apart
  // on a busy node: leave MPI_Init together, so the tool's start-up does not show up as
  // the application's first wait state.
  PMPI_Barrier(m_private);
  m_active = true;
  g_tracing = true;
  io::Event init_ev;
  init_ev.op = static_cast<uint16_t>(init_op);
  init_ev.site = call_site_key(site);
  init_ev.t_enter = t_before_init;
  init_ev.t_exit = now_ticks();
  init_ev.comm = 0;
  commit(init_ev);
  m_window_os.open();
}

}  // namespace perfsift::collect
