// The in-memory form of one application rank's trace: what the collector fills,
// what the spill files hold, what the store writer writes and the reader returns.
// Plain data only (no HDF5, no MPI) so every layer can share it.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace perfsift::io {

inline constexpr int kTraceStoreVersion = 2;
inline constexpr const char *kTraceStoreFormat = "perfsift-trace";

// Event flags.
enum EventFlag : uint16_t {
  kWildcardSource = 1u << 0,  // receive posted with MPI_ANY_SOURCE; peer is the matched source
  kWildcardTag = 1u << 1,     // receive posted with MPI_ANY_TAG; tag is the matched tag
  kProcNull = 1u << 2,        // peer was MPI_PROC_NULL: no message
  kNoMatch = 1u << 3,         // test/probe that found nothing
  kInterComm = 1u << 4,       // peer/root is in the remote group of an intercommunicator
  kTagIsComm = 1u << 5,       // communicator constructor: tag holds the new communicator's index
  kInterrupted = 1u << 6,     // the rank died inside this call; t_exit is the time of death
};

// One MPI call. 80 bytes in memory; shuffled and deflated on disk.
struct Event {
  int64_t t_enter = 0;  // ns since the run's start, after clock correction
  int64_t t_exit = 0;
  int64_t bytes = 0;       // bytes moved by this call at this rank, sent plus received
  int64_t bytes_recv = 0;  // the received part of `bytes`
  int64_t request = -1;    // first request activated by this call (see /requests), or -1
  uint64_t site = 0;       // collector: return address; store: call-site id
  int32_t peer = -1;       // world rank of the partner, the root of a rooted collective, or -1
  int32_t tag = -1;
  int32_t comm = -1;   // index into /comms
  int32_t region = 0;  // innermost region (index into /regions)
  int32_t step = -1;   // step number of the innermost active step region, or -1
  uint16_t op = 0;     // index into /ops
  uint16_t flags = 0;
  int32_t thread = 0;  // the rank's thread that made the call: 0 initialised MPI, others by first call
  int32_t reserved = 0;
};

// Collector and spill files: the `event` of a request or completion names its thread's
// event (thread << 40 | index among that thread's events); merge_thread_streams turns
// these into indices within the rank. Thread 0's indices are the same either way.
static_assert(sizeof(Event) == 80);

inline constexpr int kThreadEventShift = 40;
inline constexpr int64_t kThreadEventMask = (int64_t{1} << kThreadEventShift) - 1;
inline int64_t thread_event(int32_t thread, int64_t index) {
  return (static_cast<int64_t>(thread) << kThreadEventShift) | index;
}

// A request activation: Isend/Irecv/Start/nonblocking collective.
struct RequestRecord {
  int64_t id = 0;     // unique within the rank
  int64_t event = 0;  // index of the activating event within the rank (see thread_event)
  int32_t peer = -1;  // world rank, -2 for MPI_ANY_SOURCE, -1 for none
  int32_t tag = -1;
  int32_t comm = -1;
  int32_t kind = 0;  // RequestKind
  int64_t bytes = 0;
};
enum RequestKind : int32_t { kReqSend = 1, kReqRecv = 2, kReqCollective = 3, kReqOther = 4 };

// A request completed by a Wait/Test family call (or the receive half of a Sendrecv,
// request = -1).
struct CompletionRecord {
  int64_t event = 0;     // index of the completing event within the rank (see thread_event)
  int64_t request = -1;  // a request may complete on another thread than the one that started it
  int32_t source = -1;   // status source as world rank (receives), -1 otherwise
  int32_t tag = -1;      // status tag (receives)
  int64_t bytes = 0;     // received bytes (receives)
  int32_t cancelled = 0;
  int32_t pad = 0;
};

struct StepRecord {
  int32_t region = 0;
  int32_t step = 0;
  int64_t t_begin = 0;
  int64_t t_end = 0;
};

// Metrics of the profile cube, in the order of /profile. The last six are what the OS
// gives per region without hardware counters (thread 0's, the thread that keeps the
// regions). The collector, synth and import write all of them; readers find metrics by name.
enum Metric : int {
  kVisits,
  kWall,
  kCpu,
  kMpiTime,
  kMpiBytesSent,
  kMpiBytesRecv,
  kIoBytesRead,
  kIoBytesWritten,
  kThreadCpu,             // CPU time of the thread (CLOCK_THREAD_CPUTIME_ID), s
  kCtxSwitchVoluntary,    // the thread blocked (I/O, sleep, a blocking wait)
  kCtxSwitchInvoluntary,  // the thread was descheduled while runnable
  kPageFaultsMinor,       // faults served without I/O (first touch, copy on write)
  kPageFaultsMajor,       // faults that read from disk
  kMaxRssGrowth,          // growth of the process's resident-set high-water mark, bytes
  kBuiltinMetricCount
};
// The first OS metric: the collector samples the OS for these, the others come from its
// running totals.
inline constexpr int kFirstOsMetric = kThreadCpu;
inline constexpr std::array<const char *, kBuiltinMetricCount> kMetricNames = {"visits",
                                                                               "wall",
                                                                               "cpu",
                                                                               "mpi_time",
                                                                               "mpi_bytes_sent",
                                                                               "mpi_bytes_recv",
                                                                               "io_bytes_read",
                                                                               "io_bytes_written",
                                                                               "thread_cpu",
                                                                               "ctx_switches_voluntary",
                                                                               "ctx_switches_involuntary",
                                                                               "page_faults_minor",
                                                                               "page_faults_major",
                                                                               "max_rss_growth"};
inline constexpr std::array<const char *, kBuiltinMetricCount> kMetricUnits = {
    "count", "s", "s", "s", "bytes", "bytes", "bytes", "bytes", "s", "count", "count", "count", "count", "bytes"};

struct CommRecord {
  uint64_t key = 0;              // identical on every member rank
  std::vector<int32_t> members;  // world ranks in comm-rank order (local group)
  std::vector<int32_t> remote;   // world ranks of the remote group (intercommunicators)
};

// One frame of a call path: a return address by its module and function.
struct CallFrame {
  std::string module;
  uint64_t offset = 0;  // relative to the module's load base
  std::string function;
  uint64_t fn_offset = 0;
  auto operator<=>(const CallFrame &) const = default;
};

// A call site is the innermost frame the program's author wrote: the return address of
// the MPI call, or, when that lies in one of the program's own MPI wrapper functions
// (collect TOML `sites.wrappers`), the caller of the wrapper layer; the wrapper frames
// the call went through stay in `via` as evidence.
struct CallSite {
  std::string module;      // shared object or executable
  uint64_t offset = 0;     // address relative to the module's load base
  std::string function;    // demangled where possible
  uint64_t fn_offset = 0;  // offset from the function's start
  std::string file;        // from debug info, else empty
  int32_t line = 0;
  std::vector<CallFrame> via;  // wrapper frames, the MPI call's return address first; empty: a direct call
};

struct ClockRecord {
  int64_t offset_init_ns = 0;  // add to this rank's clock to get rank 0's, at init
  int64_t offset_fin_ns = 0;   // the same at finalize
  int64_t local_init_ns = 0;   // this rank's raw clock at the init measurement
  int64_t local_fin_ns = 0;
  int64_t error_init_ns = 0;  // half the best round trip: bound on the offset error
  int64_t error_fin_ns = 0;
};

// What the OS counted for the thread that initialised MPI over the program window
// (MPI_Init's exit to MPI_Finalize's entry). NaN where not recorded: a rank that ended
// without MPI_Finalize, a store made by `perfsift synth` or imported from OTF2, a kernel
// without schedstat (run_delay_s). The replay of dedicated cores cannot reproduce the
// run delay, so the what-if stage weighs its error against it.
struct ProgramOs {
  static constexpr double kNotRecorded = std::numeric_limits<double>::quiet_NaN();
  double thread_cpu_s = kNotRecorded;
  double run_delay_s = kNotRecorded;  // runnable but waiting for a CPU (/proc/thread-self/schedstat)
  double ctx_switches_involuntary = kNotRecorded;
  double ctx_switches_voluntary = kNotRecorded;
};

struct RankTrace {
  int32_t rank = 0;
  bool complete = true;  // false when the rank ended without MPI_Finalize
  std::vector<Event> events;
  std::vector<RequestRecord> requests;
  std::vector<CompletionRecord> completions;
  std::vector<StepRecord> steps;
  std::vector<std::string> region_paths;  // local region id -> path ("(program)", "solve/smooth")
  std::vector<std::string> metric_names;  // builtins then PAPI events
  std::vector<double> profile;            // [region][metric], inclusive
  std::vector<CommRecord> comms;          // local comm index -> comm
  std::vector<CallSite> callsites;        // local call-site id -> site (resolved)
  ClockRecord clock;
  ProgramOs program_os;
};

// The collector's short measurement of the network (collect/network_probe.h): samples in
// the network estimator's form, one row each. Empty when not measured.
struct NetworkProbe {
  enum Kind : int32_t { SendOverhead = 0, RecvOverhead = 1, Gap = 2, Transfer = 3 };
  std::vector<int32_t> level;  // 0 on-node pair, 1 off-node
  std::vector<int32_t> kind;   // Kind
  std::vector<int64_t> bytes, ns;
  double cost_ns = std::numeric_limits<double>::quiet_NaN();  // what it took rank 0
  void add(int32_t l, Kind k, int64_t b, int64_t t) {
    level.push_back(l);
    kind.push_back(k);
    bytes.push_back(b);
    ns.push_back(t);
  }
};

// Run-wide facts, written as root attributes.
struct RunInfo {
  int32_t nranks = 0;
  std::string command;
  std::string start_time;  // ISO-8601 UTC of rank 0's MPI_Init
  int64_t start_epoch_ns = 0;
  std::vector<std::string> counters_unavailable;
  std::vector<std::string> counters_recorded;
  bool incomplete = false;
  std::vector<int32_t> missing_ranks;    // no data at all
  std::vector<int32_t> truncated_ranks;  // data up to a crash, no MPI_Finalize
  std::string collector_config;          // the TOML text in force
  std::string mpi_library;
  std::string hostname_list;
  // Per rank, its node: the index of its name in hostname_list. Empty when not recorded
  // (older stores, imports): which rank ran where is then unknown.
  std::vector<int32_t> rank_hosts;
  NetworkProbe network_probe;
  // Rank 0's collector cost, measured at its start-up: the timer it chose (empty: not
  // recorded) with the ns one read takes, and the ns recording one call took.
  std::string timer;
  double timer_read_ns = std::numeric_limits<double>::quiet_NaN();
  double collector_call_ns = std::numeric_limits<double>::quiet_NaN();
};

inline const std::string kRootRegionPath = "(program)";

}  // namespace perfsift::io
