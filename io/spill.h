// Per-rank spill files: where the collector puts events when its buffer is full and
// everything it has when the rank dies. `perfsift recover` reads them back.
//
// Layout: a fixed header, then chunks {u32 type, u32 reserved, u64 bytes, payload}.
// Event, request, completion and step chunks are arrays of the trace_model structs
// (raw clock times); a state chunk closes a flush with the rank's region profile,
// communicators, call sites, clock record and run facts. Plain write(2) calls only,
// so a signal handler can flush.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::io {

inline constexpr char kSpillMagic[8] = {'P', 'S', 'S', 'P', 'I', 'L', 'L', '1'};
// Version 3: events carry their thread (80 bytes); the state chunk carries the program
// window's OS figures after the clock record, and may end with the call sites' wrapper
// frames (read when present). The reader reads this version only
// (docs/crashes.md, "Spill files").
inline constexpr int32_t kSpillVersion = 3;
inline constexpr int32_t kSpillMaxRanks = 1 << 22;  // a header claiming more is damaged

enum SpillChunk : uint32_t { kChunkEvents = 1, kChunkRequests, kChunkCompletions, kChunkSteps, kChunkState };

struct SpillHeader {
  char magic[8];
  int32_t version;
  int32_t rank;
  int32_t nranks;
  int32_t pad;
  int64_t start_ns;  // rank 0's raw clock at MPI_Init: time zero of the store
};
SpillHeader make_spill_header(int32_t rank, int32_t nranks, int64_t start_ns);

// Facts a recovered store needs that only the state chunk carries.
struct SpillState {
  RunInfo run;             // nranks, command, start time, counters, config
  RankTrace profile_part;  // region_paths, metric_names, profile, comms, callsites, clock, complete
};

class SpillWriter {
 public:
  SpillWriter() = default;
  ~SpillWriter();
  // Creates the directory if needed and opens DIR/rank-R.bin for appending; when
  // `temporary`, a file beside it that publish() renames over it once it is whole.
  bool open(const std::string &dir, const SpillHeader &header, std::string *error, bool temporary = false);
  bool is_open() const { return m_fd >= 0; }
  bool write_chunk(SpillChunk type, const void *data, uint64_t bytes);
  // One flush of records, one chunk per kind; true when the events chunk was written.
  bool write_records(std::span<const Event> events, std::span<const RequestRecord> requests,
                     std::span<const CompletionRecord> completions, std::span<const StepRecord> steps);
  bool write_state(const SpillState &state);
  void close();
  // A temporary file: fsync, close and rename into place (true), or remove it (discard).
  bool publish();
  void discard();
  const std::string &path() const { return m_path; }

 private:
  int m_fd = -1;
  std::string m_path, m_final_path;
};

std::string spill_path(const std::string &dir, int rank);
std::string serialize_state(const SpillState &state);
SpillState deserialize_state(const std::string &bytes);

// Reads one rank's spill file. Events, requests, completions and steps are appended in
// file order; the last state chunk (if any) fills the rest. Every length and count read
// from the file is checked against the bytes left before it is used. Throws io::Error
// (one line naming the file and what is wrong) when the file is empty, shorter than its
// header, not a spill file, of another format version, or damaged in its first chunk.
// A file cut short (a kill during a flush) keeps every complete record before the cut,
// and damage after the first chunk keeps the chunks before it; both set `*warning`.
struct SpillContents {
  SpillHeader header{};
  RankTrace trace;
  bool has_state = false;
  RunInfo run;
  std::string warning;
};
// With `merge_threads` the threads' events are merged into one stream by entry time and
// the request and completion event fields become indices within the rank (see below).
SpillContents read_spill(const std::string &path, bool merge_threads = true);

// The collector's per-thread streams as one rank: the events of each thread keep their
// order and are merged by entry time; request and completion `event` fields (thread_event
// form) become indices into the merged events, and both tables are ordered by them. A
// single-threaded rank is left as it is. A record naming an event that was lost (a
// thread's call cut by a crash) gets the index past the rank's last event.
void merge_thread_streams(RankTrace &t);

}  // namespace perfsift::io
