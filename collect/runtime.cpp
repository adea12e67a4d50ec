#include "runtime.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <papi.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/atomic_file.h"
#include "io/clock_correction.h"
#include "io/region_path.h"
#include "clock_sync.h"
#include "store_module.h"
#include "store_writers.h"
#include "tick_clock.h"

namespace perfsift::collect {

bool g_tracing = false;
uint32_t g_group_mask = ~0u;
bool g_shared_lock = false;
std::mutex g_shared_mutex;
// Inside a traced call: keeps nested calls out of the trace.
thread_local bool t_in_call __attribute__((tls_model("initial-exec"))) = false;
thread_local ThreadState *t_thread __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
// A thread that could not be given buffers records into this slot and drops it.
ThreadState g_untraced;
thread_local Event t_discard;
}  // namespace

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace

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

namespace {

std::string iso_utc_now() {
  char buf[64];
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &t);
  return buf;
}

int64_t epoch_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string read_cmdline() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (auto &c : s)
    if (c == '\0') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// The distinct host names of the run, comma-separated, in rank order of first appearance
// (the platform a trained classifier is tied to). Collective over `comm`.
std::string host_names(MPI_Comm comm, int nranks) {
  char mine[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  PMPI_Get_processor_name(mine, &len);
  std::vector<char> all(static_cast<size_t>(nranks) * MPI_MAX_PROCESSOR_NAME);
  PMPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  std::vector<std::string> names;
  for (int r = 0; r < nranks; ++r) {
    std::string n(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME],
                  strnlen(&all[static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME], MPI_MAX_PROCESSOR_NAME));
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  std::string out;
  for (const auto &n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

uint64_t fnv1a(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int32_t v) {
    for (int i = 0; i < 4; ++i) {
      h ^= static_cast<uint8_t>(v >> (8 * i));
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<int32_t>(a.size()));
  for (auto v : a) mix(v);
  mix(static_cast<int32_t>(b.size()));
  for (auto v : b) mix(v);
  return h;
}

constexpr int kClockTag = 7001;
constexpr int kGatherTag = 7002;

}  // namespace

// Never destroyed: atexit and signal paths may still use it.
Runtime *const g_runtime = new Runtime();

int64_t current_step() {
  const auto &st = runtime().m_stack;
  if (st.empty()) return -1;
  const Frame &f = st.back();
  return f.step >= 0 ? f.step : f.outer_step;
}

// ---------------------------------------------------------------- Call

Call::Call(Op op, void *site) : ev(runtime().open_slot()) {
  t_in_call = true;
  ev.op = static_cast<uint16_t>(op);
  ev.site = reinterpret_cast<uint64_t>(site);
  ev.t_enter = now_ticks();
}

void Call::exit() { ev.t_exit = now_ticks(); }

Call::~Call() {
  if (ev.t_exit == 0) ev.t_exit = now_ticks();
  runtime().commit_slot();
  t_in_call = false;
}

Event &Runtime::open_slot() {
  ThreadState *ts = t_thread;
  if (__builtin_expect(ts == nullptr, 0)) ts = register_thread();
  if (__builtin_expect(ts->index < 0, 0)) return t_discard = Event{};
  Event &ev = *ts->events.end();  // a slot is always free: a full buffer spills at once
  ev = Event{};
  ev.thread = ts->index;
  __atomic_store_n(&ts->in_flight, &ev, __ATOMIC_RELEASE);
  return ev;
}

void Runtime::commit_slot() {
  ThreadState &ts = *t_thread;
  if (ts.index < 0) return;
  __atomic_store_n(&ts.in_flight, nullptr, __ATOMIC_RELEASE);
  Event &ev = *ts.events.end();
  account(ts, ev);
  ts.events.commit_one();
  if (ts.events.full() || ev.t_exit >= ts.spill_due) spill_buffers(ts);
}

void Runtime::account(ThreadState &ts, Event &ev) {
  if (ts.index == 0) {
    ev.region = m_stack.empty() ? 0 : m_stack.back().region;
    ev.step = static_cast<int32_t>(current_step());
  } else {
    ev.region = m_main_region.load(std::memory_order_relaxed);
    ev.step = m_main_step.load(std::memory_order_relaxed);
  }
  int64_t *cum = ts.index == 0 ? m_cum : ts.cum;
  cum[io::kMpiTime] += ev.t_exit - ev.t_enter;
  cum[io::kMpiBytesSent] += ev.bytes - ev.bytes_recv;
  cum[io::kMpiBytesRecv] += ev.bytes_recv;
}

void Runtime::publish_region() {
  m_main_region.store(m_stack.empty() ? 0 : m_stack.back().region, std::memory_order_relaxed);
  m_main_step.store(static_cast<int32_t>(current_step()), std::memory_order_relaxed);
}

void Runtime::commit(Event &ev) {
  if (!m_active) return;
  ThreadState &ts = *m_threads[0];
  account(ts, ev);
  ts.events.push_back(ev);
  if (ts.events.full() || ev.t_exit >= ts.spill_due) spill_buffers(ts);
}

// A thread's first traced call: its buffers, mapped but not populated (pages arrive as
// they are used; populating every thread's buffer up front would cost buffer_mb each).
ThreadState *Runtime::register_thread() {
  const std::lock_guard<std::mutex> lock(m_register_mutex);
  const int n = m_nthreads.load(std::memory_order_relaxed);
  ThreadState *ts = n < kMaxThreads ? new (std::nothrow) ThreadState : nullptr;
  if (ts && !allocate_thread(*ts, 0)) {
    delete ts;
    ts = nullptr;
  }
  if (!ts) {
    ++m_untraced_threads;
    t_thread = &g_untraced;
    return &g_untraced;
  }
  ts->index = n;
  m_threads[n] = ts;
  m_nthreads.store(n + 1, std::memory_order_release);
  t_thread = ts;
  return ts;
}

// Requests and completions: as many slots as events (a call adds at most one of each on
// average); `populated` events (and none of the others) faulted in now, the rest ahead of
// use by the watcher (keep_buffers_populated).
bool Runtime::allocate_thread(ThreadState &ts, size_t populated) {
  return ts.events.allocate(m_capacity, populated) && ts.requests.allocate(m_capacity, 0) &&
         ts.completions.allocate(m_capacity, 0);
}

// ---------------------------------------------------------------- start

void Runtime::warn(const std::string &msg) {
  if (std::find(m_warned.begin(), m_warned.end(), msg) != m_warned.end()) return;
  m_warned.push_back(msg);
  if (m_rank == 0) std::fprintf(stderr, "perfsift: %s\n", msg.c_str());
}

void Runtime::start(int64_t t_before_init, Op init_op, void *site) {
  PMPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &m_nranks);
  if (!load_config()) return;
  apply_test_clock_skew(t_before_init);
  select_groups();
  PMPI_Comm_dup(MPI_COMM_WORLD, &m_private);
  record_run_facts(t_before_init);
  if (!allocate_buffers()) return;
  setup_papi();
  register_comm(MPI_COMM_WORLD);
  register_comm(MPI_COMM_SELF);
  int level = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&level);
  g_shared_lock = level == MPI_THREAD_MULTIPLE;
  open_root_region(t_before_init);
  begin_tracing(t_before_init, init_op, site);
}

// False when the collector stays inert: no store requested, or a configuration error
// (said once by rank 0).
bool Runtime::load_config() {
  const char *cfg_path = std::getenv("PERFSIFT_CONFIG");
  try {
    m_cfg = config::load_collect_config(cfg_path ? cfg_path : "", config::process_environment());
  } catch (const std::exception &e) {
    if (m_rank == 0) std::fprintf(stderr, "perfsift: %s; tracing is off for this run\n", e.what());
    return false;
  }
  return !m_cfg.output.empty();
}

// Tests skew the clocks on purpose (offset:ppm) to check the correction.
void Runtime::apply_test_clock_skew(int64_t &t_before_init) {
  const char *skew = std::getenv("PERFSIFT_TEST_CLOCK_SKEW");
  double off = 0, ppm = 0;
  if (!skew || std::sscanf(skew, "%lf:%lf", &off, &ppm) != 2) return;
  clock_skew_for_test(m_rank, off, ppm);
  clock_origin();
  t_before_init = now_ticks();
}

void Runtime::select_groups() {
  g_group_mask = 0;
  for (const auto &g : m_cfg.mpi_groups) {
    bool known = false;
    for (int i = 0; i < kGroupCount; ++i)
      if (g == kGroupNames[i]) g_group_mask |= 1u << i, known = true;
    if (!known) warn("unknown MPI group '" + g + "' in mpi.groups ignored (valid: p2p coll wait probe comm io env)");
  }
}

// Collective: the clock offset at start, time zero of the store, and the run's facts.
void Runtime::record_run_facts(int64_t t_before_init) {
  int64_t local_init = 0;
  measure_clock(m_clock.offset_init_ns, m_clock.error_init_ns, local_init);
  m_clock.local_init_ns = local_init;
  // Time zero of the store: rank 0 entering MPI_Init.
  clock_refresh();
  m_start_ns = ticks_to_ns(t_before_init);
  PMPI_Bcast(&m_start_ns, 1, MPI_INT64_T, 0, m_private);

  m_run.nranks = m_nranks;
  m_run.command = read_cmdline();
  m_run.start_time = iso_utc_now();
  m_run.start_epoch_ns = epoch_ns();
  PMPI_Bcast(&m_run.start_epoch_ns, 1, MPI_INT64_T, 0, m_private);
  m_run.collector_config = m_cfg.source_text;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  PMPI_Get_library_version(lib, &len);
  m_run.mpi_library = std::string(lib, len);
  while (!m_run.mpi_library.empty() && std::isspace(static_cast<unsigned char>(m_run.mpi_library.back())))
    m_run.mpi_library.pop_back();
  m_run.hostname_list = host_names(m_private, m_nranks);
}

// Thread 0's buffers (its first kPopulatedAtInit events faulted in: see pod_buffer.h) and
// the spill file; false (tracing off) when memory cannot be mapped.
bool Runtime::allocate_buffers() {
  m_capacity = std::max<size_t>(1024, static_cast<size_t>(m_cfg.buffer_mb) * 1024 * 1024 / sizeof(Event));
  auto *ts = new ThreadState;
  if (!allocate_thread(*ts, kPopulatedAtInit)) {
    delete ts;
    warn("cannot map " + std::to_string(m_cfg.buffer_mb) + " MiB of event buffers; tracing is off (lower buffer_mb)");
    return false;
  }
  ts->index = 0;
  m_threads[0] = ts;
  m_nthreads.store(1, std::memory_order_release);
  t_thread = ts;
  std::string err;
  if (!m_spill.open(m_cfg.spill_dir, io::make_spill_header(m_rank, m_nranks, m_start_ns), &err))
    warn(err + "; events beyond the buffer will be counted as lost");
  return true;
}

// The (program) region, open from before MPI_Init.
void Runtime::open_root_region(int64_t t_before_init) {
  RegionNode root;
  root.name = root.path = io::kRootRegionPath;
  root.acc.assign(io::kBuiltinMetricCount + m_papi_names.size(), 0.0);
  m_regions.push_back(root);
  Frame f{0, t_before_init, cpu_seconds(), {}, {}, -1, -1, {}};
  std::copy(std::begin(m_cum), std::end(m_cum), f.cum0);
  read_papi(f.papi0);
  f.os0 = os_at(now_ticks());
  m_stack.push_back(f);
  publish_region();
}

void Runtime::begin_tracing(int64_t t_before_init, Op init_op, void *site) {
  // Rank 0 measures the clocks one rank after another, releasing them tens of ms apart
  // on a busy node: leave MPI_Init together, so the tool's start-up does not show up as
  // the application's first wait state.
  PMPI_Barrier(m_private);
  m_active = true;
  g_tracing = true;
  Event init_ev;
  init_ev.op = static_cast<uint16_t>(init_op);
  init_ev.site = reinterpret_cast<uint64_t>(site);
  init_ev.t_enter = t_before_init;
  init_ev.t_exit = now_ticks();
  init_ev.comm = 0;
  commit(init_ev);
}

void Runtime::setup_papi() {
  std::vector<std::string> unavailable;
  int rc = PAPI_library_init(PAPI_VER_CURRENT);
  if (rc != PAPI_VER_CURRENT) {
    for (const auto &e : m_cfg.papi_events) unavailable.push_back(e);
    if (!m_cfg.papi_events.empty())
      warn("PAPI could not start (" + std::string(PAPI_strerror(rc)) + "); no counters recorded");
  } else if (!m_cfg.papi_events.empty()) {
    PAPI_create_eventset(&m_papi_set);
    std::string reasons;
    for (const auto &e : m_cfg.papi_events) {
      int r = PAPI_add_named_event(m_papi_set, e.c_str());
      if (r == PAPI_OK) {
        m_papi_names.push_back(e);
      } else {
        unavailable.push_back(e);
        reasons += (reasons.empty() ? "" : ", ") + e + " (" + PAPI_strerror(r) + ")";
      }
    }
    if (!reasons.empty())
      warn("counters unavailable on this machine: " + reasons + "; the store records them as missing");
    if (m_papi_names.empty()) {
      PAPI_cleanup_eventset(m_papi_set);
      PAPI_destroy_eventset(&m_papi_set);
      m_papi_set = -1;
    } else if ((rc = PAPI_start(m_papi_set)) != PAPI_OK) {
      warn(std::string("PAPI_start failed (") + PAPI_strerror(rc) + "); no counters recorded");
      unavailable.insert(unavailable.end(), m_papi_names.begin(), m_papi_names.end());
      m_papi_names.clear();
      m_papi_set = -1;
    }
  }
  m_run.counters_unavailable = unavailable;
  m_run.counters_recorded = m_papi_names;
}

void Runtime::read_papi(std::vector<long long> &out) {
  out.assign(m_papi_names.size(), 0);
  if (m_papi_set >= 0 && !out.empty()) PAPI_read(m_papi_set, out.data());
}

void Runtime::measure_clock(int64_t &offset, int64_t &error, int64_t &local) {
  const int rounds = static_cast<int>(std::max<int64_t>(1, m_cfg.clock_sync_rounds));
  const ClockOffset measured = measure_clock_offset(m_private, rounds, kClockTag);
  offset = measured.offset_ns;
  error = measured.error_ns;
  local = measured.local_ns;
}

// ---------------------------------------------------------------- communicators

void Runtime::register_comm(MPI_Comm comm) {
  io::CommRecord rec;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Group world_group, group;
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  auto translate = [&](MPI_Group g, std::vector<int32_t> &out) {
    int n = 0;
    PMPI_Group_size(g, &n);
    std::vector<int> in(n), res(n);
    for (int i = 0; i < n; ++i) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in.data(), world_group, res.data());
    out.assign(res.begin(), res.end());
  };
  PMPI_Comm_group(comm, &group);
  translate(group, rec.members);
  PMPI_Group_free(&group);
  if (inter) {
    PMPI_Comm_remote_group(comm, &group);
    translate(group, rec.remote);
    PMPI_Group_free(&group);
    // Both sides must derive the same key: hash the two groups in a fixed order.
    if (!rec.remote.empty() && !rec.members.empty() && rec.remote.front() < rec.members.front()) {
      uint64_t h = fnv1a(rec.remote, rec.members);
      int32_t n = ++m_comm_hash_seen[h];
      rec.key = h ^ (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull);
    }
  }
  PMPI_Group_free(&world_group);
  if (rec.key == 0) {
    uint64_t h = fnv1a(rec.members, rec.remote);
    int32_t n = ++m_comm_hash_seen[h];
    rec.key = h ^ (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull);
  }
  m_comm_of_handle[comm] = static_cast<int32_t>(m_comms.size());
  m_comms.push_back(std::move(rec));
  m_comm_inter.push_back(inter ? 1 : 0);
}

int32_t Runtime::comm_index(MPI_Comm comm, bool *inter) {
  int32_t idx = -1;
  if (comm == MPI_COMM_NULL) {
    idx = -1;
  } else if (comm == m_last_comm) {
    idx = m_last_comm_index;
  } else {
    auto it = m_comm_of_handle.find(comm);
    if (it == m_comm_of_handle.end()) {
      register_comm(comm);  // created by a call we do not wrap, or by MPI_Comm_idup
      it = m_comm_of_handle.find(comm);
    }
    idx = it->second;
    m_last_comm = comm;
    m_last_comm_index = idx;
  }
  if (inter) *inter = idx >= 0 && m_comm_inter[idx];
  return idx;
}

void Runtime::comm_forget(MPI_Comm comm) {
  m_comm_of_handle.erase(comm);
  if (comm == m_last_comm) m_last_comm = MPI_COMM_NULL;
}

int32_t Runtime::world_rank(int32_t idx, int peer, bool remote) {
  if (idx < 0 || peer < 0) return -1;
  const auto &c = m_comms[idx];
  const auto &list = (remote && !c.remote.empty()) ? c.remote : c.members;
  return peer < static_cast<int>(list.size()) ? list[peer] : -1;
}

// ---------------------------------------------------------------- requests

int64_t Runtime::new_request(MPI_Request handle, const RequestState &s, int64_t event_index) {
  RequestState st = s;
  st.id = m_next_request++;
  st.thread = t_thread ? t_thread->index : 0;
  // A persistent request's next activation replaces its state; others queue.
  m_live_requests.push(handle, st, [](const RequestState &s) { return s.persistent; });
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

RequestState *Runtime::find_request(MPI_Request handle) { return m_live_requests.front(handle); }

void Runtime::drop_request(MPI_Request handle) { m_live_requests.pop(handle); }

namespace {
struct StartedHere {
  int32_t thread;
  bool operator()(const RequestState &s) const { return s.thread == thread; }
};
StartedHere started_here() { return {t_thread ? t_thread->index : 0}; }
}  // namespace

RequestState *Runtime::find_completing(MPI_Request handle) {
  return m_live_requests.find_prefer(handle, started_here());
}

void Runtime::drop_completing(MPI_Request handle) {
  RequestState gone;
  m_live_requests.take_prefer(handle, started_here(), gone, [](const RequestState &s) { return s.persistent; });
}

bool Runtime::claim_request(MPI_Request handle, RequestState &out) {
  if (handle == MPI_REQUEST_NULL) return false;
  const RequestState *st = find_completing(handle);
  if (!st) return false;
  out = *st;
  if (!out.persistent)
    m_live_requests.take_prefer(handle, started_here(), out, [](const RequestState &) { return false; });
  return true;
}

// ---------------------------------------------------------------- regions

void Runtime::region_begin(const char *name, bool step) {
  if (!m_active || !name || t_thread != m_threads[0]) return;  // regions: thread 0's only
  const int32_t parent = m_stack.empty() ? 0 : m_stack.back().region;
  int32_t id = -1;
  for (const auto &[n, c] : m_regions[parent].children)
    if (n == name) id = c;
  if (id < 0) {
    RegionNode node;
    node.name = name;
    node.path = io::child_region_path(m_regions[parent].path, parent == 0, name);
    node.parent = parent;
    node.acc.assign(io::kBuiltinMetricCount + m_papi_names.size(), 0.0);
    id = static_cast<int32_t>(m_regions.size());
    m_regions.push_back(std::move(node));
    m_regions[parent].children.emplace_back(name, id);
  }
  Frame f{id, now_ticks(), cpu_seconds(), {}, {}, -1, static_cast<int32_t>(current_step()), {}};
  std::copy(std::begin(m_cum), std::end(m_cum), f.cum0);
  if (step) f.step = m_regions[id].steps++;
  read_papi(f.papi0);
  f.os0 = os_at(f.t0);
  m_stack.push_back(std::move(f));
  publish_region();
}

OsSample Runtime::os_at(int64_t ticks) {
  const double since_ns = static_cast<double>(ticks - m_os_ticks) * g_clock.ns_per_tick;
  if (m_os_sampled && since_ns >= 0 && since_ns < kOsSampleGapNs) {
    m_os_last.thread_cpu_ns += static_cast<int64_t>(since_ns);
  } else {
    m_os_last = os_sample();
    m_os_sampled = true;
  }
  m_os_ticks = ticks;
  return m_os_last;
}

// Adds the open top frame's deltas to its region; pops it unless `keep_on_stack`.
void Runtime::close_frame(bool keep_on_stack) {
  // The OS's figures are per thread: the crash flush may close the frames on another
  // thread, whose figures would not be thread 0's (those regions keep what they have).
  const bool own_thread = t_thread == m_threads[0];
  Frame &f = m_stack.back();
  RegionNode &r = m_regions[f.region];
  const int64_t t1 = now_ticks();
  const OsSample os1 = own_thread ? os_at(t1) : OsSample{};
  clock_refresh();
  r.acc[io::kVisits] += 1;
  r.acc[io::kWall] += static_cast<double>(t1 - f.t0);  // ticks until snapshot_state
  r.acc[io::kCpu] += cpu_seconds() - f.cpu0;
  r.acc[io::kMpiTime] += static_cast<double>(m_cum[io::kMpiTime] - f.cum0[io::kMpiTime]);
  for (int m = io::kMpiBytesSent; m < io::kFirstOsMetric; ++m) r.acc[m] += static_cast<double>(m_cum[m] - f.cum0[m]);
  const OsSample &os0 = f.os0;
  if (own_thread) {
    // An estimate (os_at) may run ahead of the next sample: never below zero.
    r.acc[io::kThreadCpu] += static_cast<double>(std::max<int64_t>(0, os1.thread_cpu_ns - os0.thread_cpu_ns)) * 1e-9;
    r.acc[io::kCtxSwitchVoluntary] += static_cast<double>(os1.nvcsw - os0.nvcsw);
    r.acc[io::kCtxSwitchInvoluntary] += static_cast<double>(os1.nivcsw - os0.nivcsw);
    r.acc[io::kPageFaultsMinor] += static_cast<double>(os1.minflt - os0.minflt);
    r.acc[io::kPageFaultsMajor] += static_cast<double>(os1.majflt - os0.majflt);
    r.acc[io::kMaxRssGrowth] += static_cast<double>(std::max<int64_t>(0, os1.maxrss_kb - os0.maxrss_kb)) * 1024.0;
  }
  if (!m_papi_names.empty()) {
    std::vector<long long> now;
    read_papi(now);
    for (size_t i = 0; i < now.size(); ++i)
      r.acc[io::kBuiltinMetricCount + i] += static_cast<double>(now[i] - f.papi0[i]);
  }
  // Every user region's execution (step or not): the replay locates computation by them.
  if (f.region != 0) m_steps.push_back({f.region, f.step, f.t0, t1});
  if (!keep_on_stack) {
    m_stack.pop_back();
    publish_region();
  }
}

void Runtime::region_end(const char *name, bool) {
  if (m_active && t_thread != m_threads[0]) return;  // regions: thread 0's only
  if (!m_active || !name || m_stack.size() <= 1) {
    if (m_active) ++m_region_mismatches;
    return;
  }
  // Close up to the innermost frame of that name; an unknown name is counted, not fatal.
  size_t k = m_stack.size();
  while (k > 1 && m_regions[m_stack[k - 1].region].name != name) --k;
  if (k <= 1) {
    ++m_region_mismatches;
    return;
  }
  if (k != m_stack.size()) ++m_region_mismatches;
  while (m_stack.size() >= k) close_frame(false);
}

// ---------------------------------------------------------------- spilling

// Events and steps hold return addresses and clock ticks while in memory; call-site ids
// and nanoseconds once they leave it. Each record is converted once (records kept in
// memory after a failed spill are already converted). Steps are thread 0's.
// The tick ratio sharpens between conversions (clock_refresh), which can move a call's
// start a few ns before the previous call's: each thread's calls keep their order.
void Runtime::events_to_ns(ThreadState &ts, std::span<Event> events) {
  for (auto &e : events) {
    e.t_enter = std::max(ticks_to_ns(e.t_enter), ts.last_enter_ns);
    e.t_exit = std::max(ticks_to_ns(e.t_exit), e.t_enter);
    ts.last_enter_ns = e.t_enter;
  }
}

void Runtime::prepare_for_disk(ThreadState &ts) {
  resolve_sites(ts.events.span().subspan(ts.prepared_events));
  clock_refresh();
  events_to_ns(ts, ts.events.span().subspan(ts.prepared_events));
  ts.prepared_events = ts.events.size();
  if (ts.index != 0) return;
  for (size_t i = m_prepared_steps; i < m_steps.size(); ++i) {
    m_steps[i].t_begin = ticks_to_ns(m_steps[i].t_begin);
    m_steps[i].t_end = ticks_to_ns(m_steps[i].t_end);
  }
  m_prepared_steps = m_steps.size();
}

void Runtime::spill_buffers(ThreadState &ts) {
  const std::lock_guard<std::mutex> lock(m_spill_mutex);
  spill_locked(ts);
}

// The records of `ts` the watcher has not written yet go to the file; then its buffers
// are empty. Thread 0 takes the steps along.
void Runtime::spill_locked(ThreadState &ts) {
  if (m_emergency) return;                // the crash flush closed the file; the rank is going
  const io::FileSizeSignalIgnored guard;  // past `ulimit -f`: an error, not a dead rank
  prepare_for_disk(ts);
  ts.spill_due = INT64_MAX;
  const bool main = ts.index == 0;
  const bool ok = m_spill.is_open() &&
                  m_spill.write_records(
                      ts.events.span().subspan(ts.written_events), ts.requests.span().subspan(ts.written_requests),
                      ts.completions.span().subspan(ts.written_completions),
                      main ? std::span<const io::StepRecord>(m_steps) : std::span<const io::StepRecord>());
  if (ok) {
    ts.spilled_events += static_cast<int64_t>(ts.events.size());
    ts.events.clear();
    ts.requests.clear();
    ts.completions.clear();
    ts.written_events = ts.written_requests = ts.written_completions = 0;
    ts.prepared_events = 0;
    if (main) {
      m_steps.clear();
      m_prepared_steps = 0;
    }
  } else {
    // No spill file (or it stopped taking data: disk full; a torn chunk ends it for
    // good): keep growing rather than drop; count so the report can say so.
    m_spill.close();
    ++m_spill_failures;
    if ((ts.events.full() && !ts.events.grow()) || (ts.requests.full() && !ts.requests.grow()) ||
        (ts.completions.full() && !ts.completions.grow())) {
      warn("out of memory for events and no spill file; tracing stops here");
      m_active = false;
      g_tracing = false;
    }
  }
}

io::SpillState Runtime::snapshot_state(bool complete) {
  io::SpillState st;
  st.run = m_run;
  io::RankTrace &t = st.profile_part;
  t.rank = m_rank;
  t.complete = complete;
  t.metric_names.assign(io::kMetricNames.begin(), io::kMetricNames.end());
  t.metric_names.insert(t.metric_names.end(), m_papi_names.begin(), m_papi_names.end());
  const size_t nm = t.metric_names.size();
  // Wall and MPI time are summed in ticks and become seconds here, with the ratio as
  // sharp as it is when the events leave memory: a region's wall time then agrees with
  // its executions' times (the steps), however early in the run it closed.
  clock_refresh();
  const double s_per_tick = g_clock.ns_per_tick * 1e-9;  // one ratio for every region
  for (const auto &r : m_regions) {
    t.region_paths.push_back(r.path);
    const size_t at = t.profile.size();
    t.profile.insert(t.profile.end(), r.acc.begin(), r.acc.end());
    t.profile.resize(t.region_paths.size() * nm, 0.0);
    for (int m : {io::kWall, io::kMpiTime}) t.profile[at + m] *= s_per_tick;
  }
  t.comms = m_comms;
  t.clock = m_clock;
  return st;
}

// Replaces return addresses by local call-site ids, resolving each new address once.
void Runtime::resolve_sites(std::span<Event> events) {
  for (auto &e : events) {
    auto [it, inserted] = m_site_ids.emplace(e.site, static_cast<int32_t>(m_sites.size()));
    if (inserted) {
      io::CallSite cs;
      Dl_info info{};
      if (e.site && dladdr(reinterpret_cast<void *>(e.site), &info)) {
        cs.module = info.dli_fname ? info.dli_fname : "";
        cs.offset = e.site - reinterpret_cast<uint64_t>(info.dli_fbase);
        if (info.dli_sname) {
          int status = 0;
          char *dem = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
          cs.function = (status == 0 && dem) ? dem : info.dli_sname;
          std::free(dem);
          cs.fn_offset = e.site - reinterpret_cast<uint64_t>(info.dli_saddr);
        }
      }
      m_sites.push_back(std::move(cs));
    }
    e.site = static_cast<uint64_t>(it->second);
  }
}

// The watcher, once a second (see runtime.h). It holds the spill lock; the recording
// threads only append records meanwhile, and those below size_acquire() are whole.
void Runtime::idle_flush() {
  std::unique_lock<std::mutex> lock(m_spill_mutex, std::try_to_lock);
  if (!lock || !m_active || m_finished || m_emergency) return;
  keep_buffers_populated();
  if (m_checkpointing || m_idle_off || !m_spill.is_open()) return;
  const int n = thread_count();
  for (int k = 0; k < n && m_spill.is_open(); ++k) {
    ThreadState &ts = *m_threads[k];
    if (ts.prepared_events) continue;  // after a failed spill: the file is closed anyway
    const size_t ne = ts.events.size_acquire(), nr = ts.requests.size_acquire(), nc = ts.completions.size_acquire();
    if (ne == ts.written_events && nr == ts.written_requests && nc == ts.written_completions) continue;
    std::vector<Event> events(ts.events.data() + ts.written_events, ts.events.data() + ne);
    resolve_sites(events);
    events_to_ns(ts, events);
    const io::FileSizeSignalIgnored guard;
    if (m_spill.write_records(events, {ts.requests.data() + ts.written_requests, nr - ts.written_requests},
                              {ts.completions.data() + ts.written_completions, nc - ts.written_completions}, {})) {
      ts.written_events = ne;
      ts.written_requests = nr;
      ts.written_completions = nc;
    } else {
      m_spill.close();  // a torn chunk ends the file; the threads keep their records in memory
      ++m_spill_failures;
    }
  }
}

// Under the spill lock: each thread's buffers faulted in for two more seconds at the rate
// it recorded in the last one (at least kPopulatedAhead records), so that recording
// threads seldom meet a first touch.
void Runtime::keep_buffers_populated() {
  const int n = thread_count();
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

// The whole rank: what the spill file holds, then every thread's records still in
// memory, merged into one stream (io::merge_thread_streams).
io::RankTrace Runtime::build_trace() {
  io::SpillState st = snapshot_state(true);
  io::RankTrace t = std::move(st.profile_part);
  const int n = thread_count();
  bool spilled = false;
  for (int k = 0; k < n; ++k) {
    const ThreadState &ts = *m_threads[k];
    spilled |= ts.spilled_events > 0 || ts.written_events > 0 || ts.written_requests > 0 || ts.written_completions > 0;
  }
  if (spilled) {
    m_spill.close();
    try {
      io::SpillContents back = io::read_spill(m_spill.path(), false);
      t.events = std::move(back.trace.events);
      t.requests = std::move(back.trace.requests);
      t.completions = std::move(back.trace.completions);
      t.steps = std::move(back.trace.steps);
    } catch (const std::exception &e) {
      warn(std::string("reading back spilled events failed: ") + e.what());
    }
  }
  for (int k = 0; k < n; ++k) {
    ThreadState &ts = *m_threads[k];
    prepare_for_disk(ts);
    t.events.insert(t.events.end(), ts.events.begin() + ts.written_events, ts.events.end());
    t.requests.insert(t.requests.end(), ts.requests.begin() + ts.written_requests, ts.requests.end());
    t.completions.insert(t.completions.end(), ts.completions.begin() + ts.written_completions, ts.completions.end());
  }
  t.steps.insert(t.steps.end(), m_steps.begin(), m_steps.end());
  t.callsites = m_sites;
  io::merge_thread_streams(t);
  return t;
}

// ---------------------------------------------------------------- finish

void Runtime::finish(void *site) {
  if (!m_active || m_finished) return;
  close_tracing(site);
  checkpoint();
  m_active = false;
  m_finished = true;
  int64_t local_fin = 0;
  measure_clock(m_clock.offset_fin_ns, m_clock.error_fin_ns, local_fin);
  m_clock.local_fin_ns = local_fin;
  warn_about_run_problems();
  write_store();
  PMPI_Comm_free(&m_private);
}

// Records MPI_Finalize, closes regions left open and stops the counters.
void Runtime::close_tracing(void *site) {
  Event fin;
  fin.op = static_cast<uint16_t>(Op::MPI_Finalize);
  fin.site = reinterpret_cast<uint64_t>(site);
  fin.t_enter = now_ticks();
  fin.comm = 0;
  while (m_stack.size() > 1) {
    ++m_region_mismatches;
    close_frame(false);
  }
  fin.t_exit = now_ticks();
  commit(fin);
  // The other threads' MPI time and bytes count in the whole program's profile (they
  // have left MPI: MPI_Finalize may not overlap other calls).
  for (int k = 1; k < thread_count(); ++k)
    for (int m = 0; m < io::kBuiltinMetricCount; ++m) m_cum[m] += m_threads[k]->cum[m];
  close_frame(false);  // the root region
  g_tracing = false;
  if (m_papi_set >= 0) {
    std::vector<long long> v(m_papi_names.size());
    PAPI_stop(m_papi_set, v.data());
  }
}

// Everything the rank recorded, MPI_Finalize included, and its state to the spill file
// before the collective steps of finish(): a rank killed while it waits there for a
// dead peer (the launcher terminates the survivors of a crash) keeps its data.
void Runtime::checkpoint() {
  const std::lock_guard<std::mutex> lock(m_spill_mutex);
  m_checkpointing = true;
  m_idle_off = true;
  for (int k = 0; k < thread_count() && m_spill.is_open(); ++k) spill_locked(*m_threads[k]);
  if (m_spill.is_open()) {
    const io::FileSizeSignalIgnored guard;
    io::SpillState st = snapshot_state(true);
    st.profile_part.callsites = m_sites;
    st.profile_part.clock.local_fin_ns = 0;  // not measured yet: recover uses the start offset
    st.profile_part.clock.offset_fin_ns = m_clock.offset_init_ns;
    m_checkpointed = m_spill.write_state(st);
    if (!m_checkpointed) {
      ++m_spill_failures;
      m_spill.close();
    }
  }
}

// Collective: what went wrong on any rank, said once by rank 0.
void Runtime::warn_about_run_problems() {
  int64_t mismatches = 0;
  PMPI_Reduce(&m_region_mismatches, &mismatches, 1, MPI_INT64_T, MPI_SUM, 0, m_private);
  if (mismatches > 0)
    warn(std::to_string(mismatches) +
         " region begin/end calls did not nest (ends without a matching begin, or regions left open); they were closed "
         "at the nearest match");
  int64_t failures = 0;
  PMPI_Reduce(&m_spill_failures, &failures, 1, MPI_INT64_T, MPI_SUM, 0, m_private);
  if (failures > 0)
    warn("the spill file could not be written " + std::to_string(failures) +
         " times; events were kept in memory instead");
  int64_t untraced = 0;
  PMPI_Reduce(&m_untraced_threads, &untraced, 1, MPI_INT64_T, MPI_SUM, 0, m_private);
  if (untraced > 0)
    warn(std::to_string(untraced) + " threads calling MPI could not be given event buffers (more than " +
         std::to_string(kMaxThreads) + " threads, or out of memory); their calls are not in the trace");
}

// Collective: the store, written together; when that fails anywhere, every rank keeps its
// whole trace in a spill file for `perfsift recover`.
void Runtime::write_store() {
  io::RankTrace trace = build_trace();
  io::correct_times(trace, m_start_ns);
  const int64_t t_write = mono_ns();
  StoreWriters plan;
  plan_store_writers(m_private, record_bytes(trace), static_cast<uint64_t>(m_cfg.aggregate_mb) << 20, plan);
  std::vector<io::RankTrace> mine;  // this rank's trace first, then those it writes for others
  mine.push_back(std::move(trace));
  gather_traces(m_private, plan, mine, kGatherTag);
  std::string error;
  int ok = 1;
  const io::FileSizeSignalIgnored guard;  // a store past `ulimit -f` fails with EFBIG instead of killing the rank
  try {
    std::vector<std::string> op_names;
    for (const auto &o : kOps) op_names.emplace_back(o.name);
    if (plan.writer) {
      const WriteStoreFn write = load_store_writer(reinterpret_cast<const void *>(&load_store_writer), &error);
      const StoreWrite args{plan.writers, &m_cfg.output, &m_run, &mine, &op_names};
      if (!write || !write(&args, &error)) ok = 0;
    }
  } catch (const std::exception &e) {
    ok = 0;
    error = e.what();
  }
  // The lowest failing rank, or nranks when every rank succeeded.
  int mine_failed = ok ? m_nranks : m_rank, first_failed = m_nranks;
  PMPI_Allreduce(&mine_failed, &first_failed, 1, MPI_INT, MPI_MIN, m_private);
  if (first_failed == m_nranks) {
    if (m_rank == 0 && std::getenv("PERFSIFT_REPORT_TIMING"))
      std::fprintf(stderr, "perfsift: store written in %.3f s by %d of %d processes\n", (mono_ns() - t_write) * 1e-9,
                   plan.group_count, m_nranks);
    m_spill.close();
    std::remove(m_spill.path().c_str());
    PMPI_Barrier(m_private);
    if (m_rank == 0) {
      std::error_code ec;
      std::filesystem::remove(m_cfg.spill_dir, ec);  // only if empty
    }
    return;
  }
  const bool saved = spill_whole_rank(mine.front());
  int all_saved = 0, mine_saved = saved ? 1 : 0;
  PMPI_Allreduce(&mine_saved, &all_saved, 1, MPI_INT, MPI_MIN, m_private);
  // One line, by the first rank that failed: the reason, and what to run once it is fixed.
  if (m_rank == first_failed) {
    if (error.empty()) error = "unknown error";
    if (error.rfind(m_cfg.output + ": ", 0) == 0) error.erase(0, m_cfg.output.size() + 2);
    while (!error.empty() && (error.back() == '\n' || error.back() == ' ')) error.pop_back();
    for (auto &c : error)
      if (c == '\n') c = ' ';
    const bool no_room = error.find("no room") != std::string::npos || error.find("No space") != std::string::npos ||
                         error.find("too large") != std::string::npos;
    std::fprintf(stderr, "perfsift: writing %s failed (%s); %s in %s; %s run `perfsift recover %s -o %s`\n",
                 m_cfg.output.c_str(), error.c_str(),
                 all_saved ? "every rank's data is kept" : "the ranks' data is kept as far as it could be written",
                 m_cfg.spill_dir.c_str(), no_room ? "once there is room" : "once that is fixed",
                 m_cfg.spill_dir.c_str(), m_cfg.output.c_str());
  }
}

// The whole rank, with its corrected times and final clock record, into a fresh spill file
// that replaces the one written so far only once it is whole (on a full disk the old one,
// checkpointed at MPI_Finalize, stays). True when the rank's data is in a spill file.
bool Runtime::spill_whole_rank(io::RankTrace &t) {
  m_spill.close();
  io::SpillWriter w;
  // Start 0 and a zero clock record: the times below are already corrected.
  bool ok = w.open(m_cfg.spill_dir, io::make_spill_header(m_rank, m_nranks, 0), nullptr, true) &&
            w.write_records(t.events, t.requests, t.completions, t.steps);
  if (ok) {
    io::SpillState st;
    st.run = m_run;
    st.profile_part = std::move(t);
    st.profile_part.events.clear();  // written above; the state chunk carries the rest
    st.profile_part.clock = io::ClockRecord{};
    ok = w.write_state(st) && w.publish();
  }
  if (!ok) w.discard();
  return ok || m_checkpointed;
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
  std::unique_lock<std::mutex> lock(m_spill_mutex, std::defer_lock);
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
  const bool writing = m_spill.is_open() && locked;
  if (writing) {
    clock_refresh();
    for (int k = 0; k < thread_count(); ++k) flush_thread_copy(*m_threads[k]);
  }
  while (!m_stack.empty()) close_frame(false);
  if (!writing) return;
  for (size_t i = m_prepared_steps; i < m_steps.size(); ++i) {  // addresses mean nothing in another process
    m_steps[i].t_begin = ticks_to_ns(m_steps[i].t_begin);
    m_steps[i].t_end = ticks_to_ns(m_steps[i].t_end);
  }
  m_prepared_steps = m_steps.size();
  m_spill.write_records({}, {}, {}, m_steps);
  io::SpillState st = snapshot_state(false);
  st.profile_part.callsites = m_sites;
  m_spill.write_state(st);
  m_spill.close();
  m_emergency = true;
}

void Runtime::flush_thread_copy(ThreadState &ts) {
  // In-flight first, then the size: a call committed in between is in [written, ne).
  const Event *flying = __atomic_load_n(&ts.in_flight, __ATOMIC_ACQUIRE);
  const size_t ne = ts.events.size_acquire(), nr = ts.requests.size_acquire(), nc = ts.completions.size_acquire();
  std::vector<Event> events(ts.events.data() + ts.written_events, ts.events.data() + ne);
  if (flying && flying == ts.events.data() + ne) {  // the thread is inside this call: keep it, marked
    Event e = *flying;
    e.t_exit = now_ticks();
    e.flags |= io::kInterrupted;
    e.region = m_main_region.load(std::memory_order_relaxed);
    e.step = m_main_step.load(std::memory_order_relaxed);
    events.push_back(e);
  }
  const size_t prepared = ts.prepared_events > ts.written_events ? ts.prepared_events - ts.written_events : 0;
  std::span<Event> fresh = std::span<Event>(events).subspan(std::min(prepared, events.size()));
  resolve_sites(fresh);
  events_to_ns(ts, fresh);
  m_spill.write_records(events, {ts.requests.data() + ts.written_requests, nr - ts.written_requests},
                        {ts.completions.data() + ts.written_completions, nc - ts.written_completions}, {});
}

}  // namespace perfsift::collect
