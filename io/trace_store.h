// The trace store: one HDF5 file per run (schema in docs/trace-store.md).
// Every HDF5 call of perfsift lives in io/; errors become io::Error with the file
// name, the place and what to do.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::io {

struct ChunkIndex;  // where a table's chunks lie (io/raw_chunk_reader.h)

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A collective call that failed on some processes, thrown on every process of it: a failure
// every process meets (a full disk, a file size limit) is then said once, by `said_here`'s
// process, and the others end quietly beside it.
class CollectiveError : public Error {
 public:
  CollectiveError(const std::string &what, bool said_here) : Error(what), m_said_here(said_here) {}
  bool said_here() const { return m_said_here; }

 private:
  bool m_said_here;
};

// Collective over `comm`: each process passes the application ranks it owns (any
// subset; together all of 0..run.nranks-1 that have data). Region, communicator and
// call-site ids are unified across ranks here. Writes PATH.tmp-XXXX and renames it.
// `release_traces`: each trace's records are freed once turned into rows, halving the
// peak for a caller that keeps nothing of them (synth of 10^8 events); their records are
// then gone after the call (some of them already when it throws).
void write_trace_store(MPI_Comm comm, const std::string &path, const RunInfo &run, std::vector<RankTrace> &owned,
                       const std::vector<std::string> &op_names, bool release_traces = false);

// A program ended by MPI_Abort: the store keeps the call as the aborting rank's last event,
// an MPI_Abort flagged interrupted, with the error code in `tag` (docs/trace-store.md).
struct AbortRecord {
  int32_t rank = -1;  // the rank that called MPI_Abort first; -1: no rank did
  int32_t error_code = 0;
  int32_t comm = -1;      // index into /comms
  uint64_t callsite = 0;  // id into /callsites
  int64_t t_ns = 0;       // when, since the run's start
  int32_t ranks = 0;      // how many ranks called it
};
// The earliest MPI_Abort among ranks first, first + 1, ... from their ends as
// TraceStore::rank_ends returns them (two events per rank).
AbortRecord find_abort(const std::vector<std::string> &ops, const std::vector<Event> &ends, int32_t first);

struct RegionRow {
  int32_t id, parent;
  std::string name, path;
};

struct CommRow {
  uint64_t key;
  std::vector<int32_t> members, remote;
};

// Read access. Opening checks format, version and completeness of the file, and refuses
// a store of another version in one line (docs/trace-store.md, "Compatibility").
class TraceStore {
 public:
  explicit TraceStore(const std::string &path);        // serial open
  TraceStore(const std::string &path, MPI_Comm comm);  // parallel open (collective)
  ~TraceStore();
  TraceStore(const TraceStore &) = delete;
  TraceStore &operator=(const TraceStore &) = delete;

  const std::string &path() const { return m_path; }
  const RunInfo &run() const { return m_run; }
  int version() const { return m_version; }
  int32_t nranks() const { return m_run.nranks; }
  const std::vector<RegionRow> &regions() const { return m_regions; }
  const std::vector<std::string> &ops() const { return m_ops; }
  const std::vector<std::string> &metrics() const { return m_metrics; }
  const std::vector<CommRow> &comms() const { return m_comms; }
  const std::vector<CallSite> &callsites() const { return m_callsites; }
  const std::vector<int64_t> &event_offsets() const { return m_event_offsets; }
  // The store has /events_thread: some rank called MPI from several threads (Event::thread).

  // Profile metric as [nranks][nregions], row-major.
  std::vector<double> profile(const std::string &metric) const;
  // Rows [first, last) of a profile metric: [last-first][nregions] (one hyperslab).
  // Collective when the store was opened in parallel.
  std::vector<double> profile(const std::string &metric, int32_t first, int32_t last) const;
  // Streams the events of ranks [first, last) in reads of about `rows_per_read` rows
  // aligned to the dataset's chunks, calling fn(first_row, events) for each. Memory
  // stays at one read whatever the block's size; `threads` decompress chunks in
  // parallel. Collective when opened in parallel: every process calls it.
  using EventSink = std::function<void(int64_t first_row, const std::vector<Event> &events)>;
  void scan_events(int32_t first, int32_t last, int64_t rows_per_read, int threads, const EventSink &fn) const;
  // Events of ranks [first, last): one hyperslab read.
  std::vector<Event> events(int32_t first, int32_t last) const;
  // The events at these rows of /events (any order; each a row of the table). Collective
  // when opened in parallel: every process calls it, with rows of its own or none.
  std::vector<Event> events_at(const std::vector<int64_t> &rows) const;
  // Each rank of [first, last)'s first and last event (two per rank; default events for a
  // rank without any), from /events_ends. Collective when opened in parallel.
  std::vector<Event> rank_ends(int32_t first, int32_t last) const;
  std::vector<RequestRecord> requests(int32_t first, int32_t last) const;
  std::vector<CompletionRecord> completions(int32_t first, int32_t last) const;
  std::vector<StepRecord> steps(int32_t first, int32_t last) const;
  // The same into `out`, its rows replaced: a series of reads into one vector (a stage's
  // blocks of ranks) reuses its pages, where a fresh vector faults every page in again.
  void requests(int32_t first, int32_t last, std::vector<RequestRecord> &out) const;
  void completions(int32_t first, int32_t last, std::vector<CompletionRecord> &out) const;
  void steps(int32_t first, int32_t last, std::vector<StepRecord> &out) const;
  std::vector<ClockRecord> clocks() const;
  // Per rank: the OS's figures over the program window (NaN where not recorded).
  std::vector<ProgramOs> program_os() const;
  // Row offsets (nranks + 1) of a per-rank table: events, requests, completions, steps.
  std::vector<int64_t> offsets(const std::string &table) const;
  // Bytes /events occupies in the file (after compression).
  int64_t events_storage_bytes() const;
  // Frees what reads keep for the next read of their table (decompressed chunks, converted
  // rows): a series of reads (a stage's blocks of ranks) reuses them, as fresh buffers cost
  // a page fault per page at every read. Between stages: they need not outlive a series.
  // Reads therefore change the store's state: one thread reads a store at a time.
  void release_read_buffers() const;

 private:
  void open(MPI_Comm comm, bool parallel);
  // Ranks [first, last) of a per-rank table into `out` (its rows replaced), each row
  // converted as it is read.
  template <class Disk, class Out, class Convert>
  void slice(const char *table, int32_t first, int32_t last, Convert convert, std::vector<Out> &out) const;
  std::vector<int32_t> read_threads(int64_t lo, int64_t hi) const;
  template <class Disk, class Out, class Convert, class Fn>
  void scan_table_chunks(const char *table, int64_t row_begin, int64_t row_end, int64_t rows_per_read, int threads,
                         Convert convert, Fn fn) const;
  // A table's chunks (the raw-chunk read path), found at its first read.
  template <class Disk>
  const ChunkIndex &chunks_of(const char *table) const;
  mutable std::map<std::string, std::shared_ptr<ChunkIndex>, std::less<>> m_chunk_indexes;
  struct ReadBuffers {
    virtual ~ReadBuffers() = default;
    bool in_use = false;  // a read inside another's callback takes buffers of its own
  };
  template <class Disk, class Out>
  struct TableReadBuffers;
  // The table's read buffers kept from its last read, or null while a read of it is under
  // way (a read inside another's callback brings its own).
  template <class Disk, class Out>
  TableReadBuffers<Disk, Out> *kept_read_buffers(const char *table) const;
  mutable std::map<std::string, std::unique_ptr<ReadBuffers>, std::less<>> m_read_buffers;  // per table
  std::string m_path;
  int64_t m_file = -1;
  bool m_parallel = false;
  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_version = 0;
  RunInfo m_run;
  std::vector<RegionRow> m_regions;
  std::vector<std::string> m_ops, m_metrics;
  std::vector<CommRow> m_comms;
  std::vector<CallSite> m_callsites;
  std::vector<int64_t> m_event_offsets;
  bool m_has_threads = false;
};

}  // namespace perfsift::io
