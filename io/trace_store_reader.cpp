// Reading the trace store (io/trace_store.h): opening checks the format, version and the
// tables every reader relies on; per-rank tables are read through the raw-chunk path
// (io/raw_chunk_reader.h) when they have the writer's layout, else through H5Dread.
#include <hdf5.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "io/global_heap.h"
#include "io/hdf5_util.h"
#include "io/raw_chunk_reader.h"
#include "io/trace_store.h"
#include "io/trace_store_schema.h"

namespace perfsift::io {

using namespace h5;
using namespace trace_schema;

namespace {

// The one line for a store this perfsift does not read (docs/trace-store.md, "Compatibility").
std::string unreadable_store(const std::string &path, const std::string &what) {
  return path + ": " + what + "; this perfsift reads trace store version " + std::to_string(kTraceStoreVersion) +
         ": collect the run again (`perfsift collect`) or import its OTF2 archive again (`perfsift import`)";
}

// The root attributes after format and version.
RunInfo read_run_info(const Ctx &ck, hid_t f) {
  RunInfo run;
  run.nranks = read_scalar_attr<int32_t>(ck, f, "nranks", H5T_NATIVE_INT32, 0);
  run.command = read_string_attr(ck, f, "command");
  run.start_time = read_string_attr(ck, f, "start_time");
  run.start_epoch_ns = read_scalar_attr<int64_t>(ck, f, "start_epoch_ns", H5T_NATIVE_INT64, 0);
  run.counters_unavailable = read_string_list_attr(ck, f, "counters_unavailable");
  run.counters_recorded = read_string_list_attr(ck, f, "counters_recorded");
  run.incomplete = read_scalar_attr<uint8_t>(ck, f, "incomplete", H5T_NATIVE_UINT8, 0) != 0;
  run.missing_ranks = read_int_list_attr(ck, f, "missing_ranks");
  run.truncated_ranks = read_int_list_attr(ck, f, "truncated_ranks");
  run.collector_config = read_string_attr(ck, f, "collector_config");
  run.mpi_library = read_string_attr(ck, f, "mpi_library");
  run.hostname_list = read_string_attr(ck, f, "hosts");
  run.timer = read_string_attr(ck, f, "timer");
  run.timer_read_ns = read_scalar_attr<double>(ck, f, "timer_read_ns", H5T_NATIVE_DOUBLE, run.timer_read_ns);
  run.collector_call_ns =
      read_scalar_attr<double>(ck, f, "collector_call_ns", H5T_NATIVE_DOUBLE, run.collector_call_ns);
  return run;
}

NetworkProbe read_network_probe(const Ctx &ck, hid_t f) {
  Handle g(ck(H5Gopen2(f, "network_probe", H5P_DEFAULT), "cannot open /network_probe"), H5Gclose);
  NetworkProbe p;
  p.cost_ns = read_scalar_attr<double>(ck, g, "cost_ns", H5T_NATIVE_DOUBLE, p.cost_ns);
  p.level = read_rows<int32_t>(ck, g, "level", H5T_NATIVE_INT32);
  p.kind = read_rows<int32_t>(ck, g, "kind", H5T_NATIVE_INT32);
  p.bytes = read_rows<int64_t>(ck, g, "bytes", H5T_NATIVE_INT64);
  p.ns = read_rows<int64_t>(ck, g, "ns", H5T_NATIVE_INT64);
  const size_t n = p.level.size();
  if (p.kind.size() != n || p.bytes.size() != n || p.ns.size() != n)
    throw Error(ck.file() + ": /network_probe's columns differ in length (damaged store)");
  return p;
}

std::vector<RegionRow> read_regions(const Ctx &ck, hid_t f) {
  std::vector<RegionRow> regions;
  auto ids = read_rows<int32_t>(ck, f, "regions/id", H5T_NATIVE_INT32);
  auto parents = read_rows<int32_t>(ck, f, "regions/parent", H5T_NATIVE_INT32);
  auto names = read_strings(ck, f, "regions/name");
  auto paths = read_strings(ck, f, "regions/path");
  if (parents.size() != ids.size() || names.size() != ids.size() || paths.size() != ids.size())
    throw Error(ck.file() + ": /regions has " + std::to_string(ids.size()) + " ids, " + std::to_string(parents.size()) +
                " parents, " + std::to_string(names.size()) + " names and " + std::to_string(paths.size()) +
                " paths (damaged store)");
  for (size_t i = 0; i < ids.size(); ++i) {
    // Ids are the rows; parents come before their children (every reader relies on both).
    if (ids[i] != static_cast<int32_t>(i) || parents[i] < -1 || parents[i] >= static_cast<int32_t>(i))
      throw Error(ck.file() + ": /regions row " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                  " and parent " + std::to_string(parents[i]) + " (damaged store)");
    regions.push_back({ids[i], parents[i], names[i], paths[i]});
  }
  return regions;
}

// The datasets of /profile: builtins first, in their documented order; then counters by name.
std::vector<std::string> read_metric_names(const Ctx &ck, hid_t f) {
  std::vector<std::string> metrics;
  Handle g(ck(H5Gopen2(f, "profile", H5P_DEFAULT), "missing group /profile"), H5Gclose);
  hsize_t n = 0;
  H5Gget_num_objs(g, &n);
  for (hsize_t i = 0; i < n; ++i) {
    char name[256];
    H5Gget_objname_by_idx(g, i, name, sizeof name);
    metrics.emplace_back(name);
  }
  std::stable_sort(metrics.begin(), metrics.end(), [](const std::string &a, const std::string &b) {
    auto rank = [](const std::string &m) {
      for (size_t k = 0; k < kMetricNames.size(); ++k)
        if (m == kMetricNames[k]) return static_cast<int>(k);
      return 100;
    };
    return rank(a) < rank(b);
  });
  return metrics;
}

std::vector<CommRow> read_comms(const Ctx &ck, hid_t f) {
  std::vector<CommRow> comms;
  auto keys = read_rows<uint64_t>(ck, f, "comms/key", H5T_NATIVE_UINT64);
  auto members = read_rows<int32_t>(ck, f, "comms/members", H5T_NATIVE_INT32);
  auto moff = read_rows<int64_t>(ck, f, "comms/members_offsets", H5T_NATIVE_INT64);
  auto remote = read_rows<int32_t>(ck, f, "comms/remote", H5T_NATIVE_INT32);
  auto roff = read_rows<int64_t>(ck, f, "comms/remote_offsets", H5T_NATIVE_INT64);
  // Offsets start at 0, never decrease and end inside their table.
  auto valid = [&](const std::vector<int64_t> &off, size_t rows) {
    if (off.empty()) return true;
    if (off.front() != 0 || off.back() > static_cast<int64_t>(rows)) return false;
    return std::is_sorted(off.begin(), off.end());
  };
  if (!valid(moff, members.size()) || !valid(roff, remote.size()))
    throw Error(ck.file() +
                ": /comms/members_offsets or /comms/remote_offsets point outside their tables (damaged store)");
  for (size_t c = 0; c < keys.size() && c + 1 < moff.size() && c + 1 < roff.size(); ++c)
    comms.push_back({keys[c], std::vector<int32_t>(members.begin() + moff[c], members.begin() + moff[c + 1]),
                     std::vector<int32_t>(remote.begin() + roff[c], remote.begin() + roff[c + 1])});
  return comms;
}

// Stores written before call paths were kept, or by runs whose calls went through no
// wrapper function, have no via_rows: every site is a direct call.
void read_wrapper_frames(const Ctx &ck, hid_t f, std::vector<CallSite> &sites) {
  if (H5Lexists(f, "callsites", H5P_DEFAULT) <= 0 || H5Lexists(f, "callsites/via_rows", H5P_DEFAULT) <= 0) return;
  auto rows = read_rows<int64_t>(ck, f, "callsites/via_rows", H5T_NATIVE_INT64);
  auto modules = read_strings(ck, f, "callsites/via_module");
  auto functions = read_strings(ck, f, "callsites/via_function");
  auto offs = read_rows<uint64_t>(ck, f, "callsites/via_offset", H5T_NATIVE_UINT64);
  auto fnoffs = read_rows<uint64_t>(ck, f, "callsites/via_function_offset", H5T_NATIVE_UINT64);
  const size_t n = modules.size();
  if (rows.size() != sites.size() + 1 || rows.front() != 0 || !std::is_sorted(rows.begin(), rows.end()) ||
      static_cast<uint64_t>(rows.back()) > n || functions.size() != n || offs.size() != n || fnoffs.size() != n)
    throw Error(ck.file() + ": /callsites/via_rows does not slice the via_* columns (damaged store)");
  for (size_t s = 0; s < sites.size(); ++s)
    for (auto i = static_cast<size_t>(rows[s]); i < static_cast<size_t>(rows[s + 1]); ++i)
      sites[s].via.push_back({modules[i], offs[i], functions[i], fnoffs[i]});
}

std::vector<CallSite> read_callsites(const Ctx &ck, hid_t f) {
  std::vector<CallSite> sites;
  auto modules = read_strings(ck, f, "callsites/module");
  auto functions = read_strings(ck, f, "callsites/function");
  auto files = read_strings(ck, f, "callsites/file");
  auto offs = read_rows<uint64_t>(ck, f, "callsites/offset", H5T_NATIVE_UINT64);
  auto fnoffs = read_rows<uint64_t>(ck, f, "callsites/function_offset", H5T_NATIVE_UINT64);
  auto lines = read_rows<int32_t>(ck, f, "callsites/line", H5T_NATIVE_INT32);
  for (size_t i = 0; i < modules.size(); ++i)
    sites.push_back({modules[i],
                     i < offs.size() ? offs[i] : 0,
                     i < functions.size() ? functions[i] : "",
                     i < fnoffs.size() ? fnoffs[i] : 0,
                     i < files.size() ? files[i] : "",
                     i < lines.size() ? lines[i] : 0,
                     {}});
  read_wrapper_frames(ck, f, sites);
  return sites;
}

}  // namespace

TraceStore::TraceStore(const std::string &path) : m_path(path) { open(MPI_COMM_NULL, false); }
TraceStore::TraceStore(const std::string &path, MPI_Comm comm) : m_path(path) { open(comm, true); }

TraceStore::~TraceStore() {
  if (m_file >= 0) H5Fclose(m_file);
}

void TraceStore::open(MPI_Comm comm, bool parallel) {
  m_parallel = parallel;
  m_comm = comm;
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  if (access(m_path.c_str(), R_OK) != 0) throw Error(m_path + ": cannot read the file (" + std::strerror(errno) + ")");
  if (H5Fis_hdf5(m_path.c_str()) <= 0)
    throw Error(m_path +
                ": not an HDF5 file, or truncated before its superblock; a perfsift trace store is written by "
                "`perfsift collect`");
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (parallel) {
    H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
    H5Pset_all_coll_metadata_ops(fapl, true);
  }
  hid_t f = H5Fopen(m_path.c_str(), H5F_ACC_RDONLY, fapl);
  if (f < 0)
    throw Error(m_path + ": HDF5 cannot open it (truncated or corrupt; if the run crashed, try `perfsift recover`)");
  m_file = f;
  if (const std::string bad = damaged_global_heap(m_path, f); !bad.empty())
    throw Error(m_path + ": corrupt: " + bad +
                " (HDF5 would crash reading its strings); if the run's spill files are "
                "kept, `perfsift recover` writes the store again");
  const std::string format = read_string_attr(ck, f, "format");
  if (format != kTraceStoreFormat)
    throw Error(m_path + ": not a perfsift trace store (format attribute is '" + format + "', expected '" +
                kTraceStoreFormat + "')");
  m_version = read_scalar_attr<int32_t>(ck, f, "version", H5T_NATIVE_INT32, 0);
  if (m_version != kTraceStoreVersion)
    throw Error(unreadable_store(m_path, "trace store version " + std::to_string(m_version)));
  m_run = read_run_info(ck, f);
  if (m_run.nranks < 0)
    throw Error(m_path + ": the nranks attribute is " + std::to_string(m_run.nranks) + " (damaged store)");
  m_ops = read_strings(ck, f, "ops");
  m_regions = read_regions(ck, f);
  m_metrics = read_metric_names(ck, f);
  m_event_offsets = read_rows<int64_t>(ck, f, "events_offsets", H5T_NATIVE_INT64);
  if (m_event_offsets.size() != static_cast<size_t>(m_run.nranks) + 1)
    throw Error(m_path + ": /events_offsets has " + std::to_string(m_event_offsets.size()) + " entries for " +
                std::to_string(m_run.nranks) + " ranks (damaged store)");
  if (m_event_offsets.front() != 0 || !std::is_sorted(m_event_offsets.begin(), m_event_offsets.end()))
    throw Error(m_path + ": /events_offsets does not start at 0 and rise rank by rank (damaged store)");
  m_comms = read_comms(ck, f);
  m_callsites = read_callsites(ck, f);
  if (H5Lexists(f, "rank_hosts", H5P_DEFAULT) > 0)
    m_run.rank_hosts = read_rows<int32_t>(ck, f, "rank_hosts", H5T_NATIVE_INT32);
  if (H5Lexists(f, "network_probe", H5P_DEFAULT) > 0) m_run.network_probe = read_network_probe(ck, f);
  const htri_t threads = H5Lexists(f, "events_thread", H5P_DEFAULT);
  m_has_threads = threads > 0;
  if (m_has_threads) {
    Handle ds(ck(H5Dopen2(f, "events_thread", H5P_DEFAULT), "cannot open /events_thread"), H5Dclose);
    Handle fs(H5Dget_space(ds), H5Sclose);
    const hsize_t n = H5Sget_simple_extent_type(fs) == H5S_NULL ? 0 : space_elements(ck, fs, 1, "/events_thread");
    if (n != static_cast<hsize_t>(m_event_offsets.back()))
      throw Error(m_path + ": /events_thread has " + std::to_string(n) + " rows for " +
                  std::to_string(m_event_offsets.back()) + " events (damaged store)");
  }
}

// Rows [lo, hi) of /events_thread, or nothing when the store has none. Collective when
// the store was opened in parallel (an empty range selects nothing).
std::vector<int32_t> TraceStore::read_threads(int64_t lo, int64_t hi) const {
  if (!m_has_threads) return {};
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle ds(ck(H5Dopen2(m_file, "events_thread", H5P_DEFAULT), "cannot open /events_thread"), H5Dclose);
  Handle fs(H5Dget_space(ds), H5Sclose);
  const hsize_t start = static_cast<hsize_t>(std::max<int64_t>(lo, 0));
  const hsize_t count = hi > lo ? static_cast<hsize_t>(hi - lo) : 0;
  std::vector<int32_t> out(std::max<hsize_t>(count, 1));
  hsize_t mcount = out.size();
  Handle ms(H5Screate_simple(1, &mcount, nullptr), H5Sclose);
  if (count) {
    ck.ok(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, nullptr, &count, nullptr), "selecting /events_thread");
  } else {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
  }
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (m_parallel) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  if (m_event_offsets.back() > 0)
    ck.ok(H5Dread(ds, H5T_NATIVE_INT32, ms, fs, dxpl, out.data()),
          "reading /events_thread (truncated or corrupt store?)");
  out.resize(count);
  return out;
}

std::vector<double> TraceStore::profile(const std::string &metric) const { return profile(metric, 0, m_run.nranks); }

std::vector<double> TraceStore::profile(const std::string &metric, int32_t first, int32_t last) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  if (first < 0 || last > m_run.nranks || first > last) throw Error(m_path + ": bad rank range for /profile");
  Handle ds(ck(H5Dopen2(m_file, ("profile/" + metric).c_str(), H5P_DEFAULT), "no metric '" + metric + "' in /profile"),
            H5Dclose);
  const hsize_t nreg = m_regions.size();
  std::vector<double> out(static_cast<size_t>(last - first) * nreg);
  hsize_t start[2] = {static_cast<hsize_t>(first), 0}, count[2] = {static_cast<hsize_t>(last - first), nreg};
  hsize_t mcount[2] = {std::max<hsize_t>(count[0], 1), std::max<hsize_t>(nreg, 1)};
  Handle fs(H5Dget_space(ds), H5Sclose);
  hsize_t dims[2] = {0, 0};
  if (H5Sget_simple_extent_ndims(fs) != 2 || H5Sget_simple_extent_dims(fs, dims, nullptr) != 2 ||
      dims[0] != static_cast<hsize_t>(m_run.nranks) || dims[1] != nreg)
    throw Error(m_path + ": /profile/" + metric + " is not " + std::to_string(m_run.nranks) + " ranks x " +
                std::to_string(nreg) + " regions (damaged store)");
  Handle ms(H5Screate_simple(2, mcount, nullptr), H5Sclose);
  if (out.empty()) {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
  } else {
    ck.ok(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr), "selecting /profile/" + metric);
  }
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (m_parallel) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  std::vector<double> dummy(1);
  ck.ok(H5Dread(ds, H5T_NATIVE_DOUBLE, ms, fs, dxpl, out.empty() ? dummy.data() : out.data()),
        "reading /profile/" + metric + " (truncated or corrupt store?)");
  return out;
}

void TraceStore::scan_events(int32_t first, int32_t last, int64_t rows_per_read, int threads,
                             const EventSink &fn) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  if (first < 0 || last > m_run.nranks || first > last) throw Error(m_path + ": bad rank range for /events");
  constexpr int64_t kChunkRows = 65536;  // the writer's chunk size: reads aligned to it decompress each chunk once
  rows_per_read = std::max<int64_t>(kChunkRows, rows_per_read / kChunkRows * kChunkRows);
  const int64_t row_begin = m_event_offsets[first], row_end = m_event_offsets[last];
  // Read boundaries at multiples of rows_per_read (chunk-aligned).
  std::vector<std::pair<int64_t, int64_t>> reads;
  for (int64_t r = row_begin; r < row_end;) {
    const int64_t next = std::min(row_end, (r / rows_per_read + 1) * rows_per_read);
    reads.emplace_back(r, next);
    r = next;
  }
  const ChunkIndex &chunks = chunks_of<DiskEvent>("events");
  // Threads of the block's events (stores of multi-threaded runs only): one read.
  const std::vector<int32_t> thread_of = read_threads(row_begin, row_end);
  const EventSink with_threads = [&](int64_t first_row, const std::vector<Event> &events) {
    if (thread_of.empty()) return fn(first_row, events);
    std::vector<Event> copy = events;
    for (size_t i = 0; i < copy.size(); ++i) {
      const int64_t k = first_row + static_cast<int64_t>(i) - row_begin;
      if (k >= 0 && k < static_cast<int64_t>(thread_of.size())) copy[i].thread = thread_of[static_cast<size_t>(k)];
    }
    fn(first_row, copy);
  };
  // PERFSIFT_HDF5_READ=1 forces the H5Dread path (tests compare both).
  if (chunks.usable && !std::getenv("PERFSIFT_HDF5_READ"))
    return scan_table_chunks<DiskEvent, Event>("events", row_begin, row_end, rows_per_read, threads, to_event,
                                               with_threads);
  int64_t rounds = static_cast<int64_t>(reads.size());
  if (m_parallel) MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_INT64_T, MPI_MAX, m_comm);
  Handle ds(ck(H5Dopen2(m_file, "events", H5P_DEFAULT), "missing dataset /events (truncated store?)"), H5Dclose);
  Handle fs(H5Dget_space(ds), H5Sclose);
  const hsize_t total =
      H5Sget_simple_extent_type(fs) == H5S_NULL ? 0 : static_cast<hsize_t>(H5Sget_simple_extent_npoints(fs));
  if (static_cast<hsize_t>(row_end) > total)
    throw Error(m_path + ": /events has " + std::to_string(total) +
                " rows, fewer than its offsets say (truncated store?)");
  Handle type = record_type<DiskEvent>();
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  if (m_parallel) H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  std::vector<DiskEvent> rows;
  std::vector<Event> events;
  for (int64_t k = 0; k < rounds; ++k) {
    const bool mine = k < static_cast<int64_t>(reads.size());
    const hsize_t start = mine ? static_cast<hsize_t>(reads[k].first) : 0;
    const hsize_t count = mine ? static_cast<hsize_t>(reads[k].second - reads[k].first) : 0;
    rows.resize(std::max<hsize_t>(count, 1));
    hsize_t mcount = rows.size();
    Handle ms(H5Screate_simple(1, &mcount, nullptr), H5Sclose);
    Handle sel(H5Scopy(fs), H5Sclose);
    if (count)
      H5Sselect_hyperslab(sel, H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    else {
      H5Sselect_none(sel);
      H5Sselect_none(ms);
    }
    if (total) ck.ok(H5Dread(ds, type, ms, sel, dxpl, rows.data()), "reading /events (truncated or corrupt store?)");
    if (!count) continue;
    events.resize(count);
    for (hsize_t i = 0; i < count; ++i) events[i] = to_event(rows[i]);
    with_threads(static_cast<int64_t>(start), events);
  }
}

template <class Disk>
const ChunkIndex &TraceStore::chunks_of(const char *table) const {
  auto &idx = m_chunk_indexes[table];
  if (!idx) {
    Ctx ck(m_path);
    Handle mtype = record_type<Disk>();
    idx = std::make_shared<ChunkIndex>(chunk_index(ck, m_file, table, mtype, sizeof(Disk)));
  }
  return *idx;
}

// A table's read buffers: each thread's chunk (compressed, decompressed, unshuffled) and
// the converted rows of a batch. A thread's are allocated when it first reads (a batch
// of c chunks uses at most c threads).
template <class Disk, class Out>
struct TraceStore::TableReadBuffers : ReadBuffers {
  struct Chunk {
    std::vector<unsigned char> packed, shuffled;
    std::vector<Disk> rows;
  };
  std::vector<Chunk> threads;
  std::vector<Out> out;
  std::vector<Disk> whole;  // a slice read through HDF5 (a table without a usable chunk index)
};

template <class Disk, class Out>
TraceStore::TableReadBuffers<Disk, Out> *TraceStore::kept_read_buffers(const char *table) const {
  auto &slot = m_read_buffers[table];
  if (slot && slot->in_use) return nullptr;
  auto *kept = dynamic_cast<TableReadBuffers<Disk, Out> *>(slot.get());
  if (!kept) slot.reset(kept = new TableReadBuffers<Disk, Out>);
  return kept;
}

void TraceStore::release_read_buffers() const {
  std::erase_if(m_read_buffers, [](const auto &kv) { return !kv.second->in_use; });  // a read's own stay
}

// Rows [row_begin, row_end) of `table` (its ChunkIndex usable), in batches of about
// rows_per_read rows aligned to its chunks: `threads` take the batch's chunks in turn
// (std::thread: io/ stays free of OpenMP, which the collector library must not pull into
// applications), each row becomes convert(record), and fn(first_row, rows) sees each batch.
template <class Disk, class Out, class Convert, class Fn>
void TraceStore::scan_table_chunks(const char *table, int64_t row_begin, int64_t row_end, int64_t rows_per_read,
                                   int threads, Convert convert, Fn fn) const {
  const ChunkIndex &idx = chunks_of<Disk>(table);
  const int64_t cr = idx.chunk_rows;
  if (row_end > idx.rows)
    throw Error(m_path + ": /" + table + " has " + std::to_string(idx.rows) +
                " rows, fewer than its offsets say (truncated store?)");
  if (row_begin >= row_end) return;
  struct File {
    int fd;
    ~File() { ::close(fd); }
  };
  const File file{::open(m_path.c_str(), O_RDONLY)};
  if (file.fd < 0) throw Error(m_path + ": cannot read the file (" + std::strerror(errno) + ")");
  const int64_t c_first = row_begin / cr, c_last = (row_end - 1) / cr + 1;  // chunks [c_first, c_last)
  const int64_t per_batch = std::max<int64_t>(1, rows_per_read / cr);
  // The table's buffers from its last read, unless a read of it is under way (this one is
  // inside its callback): then buffers of this read's own.
  TableReadBuffers<Disk, Out> own;
  TableReadBuffers<Disk, Out> *kept = kept_read_buffers<Disk, Out>(table);
  TableReadBuffers<Disk, Out> &buffers = kept ? *kept : own;
  struct InUse {
    ReadBuffers &b;
    explicit InUse(ReadBuffers &x) : b(x) { b.in_use = true; }
    ~InUse() { b.in_use = false; }
  } in_use(buffers);
  std::vector<Out> &out = buffers.out;
  if (buffers.threads.size() < static_cast<size_t>(std::max(1, threads)))
    buffers.threads.resize(static_cast<size_t>(std::max(1, threads)));
  using Buffers = typename TableReadBuffers<Disk, Out>::Chunk;
  for (int64_t b = c_first; b < c_last; b += per_batch) {
    const int64_t b_end = std::min(c_last, b + per_batch);
    const int64_t lo = std::max(row_begin, b * cr), hi = std::min(row_end, b_end * cr);
    out.resize(static_cast<size_t>(hi - lo));
    std::atomic<int64_t> next{b};
    std::mutex error_lock;
    std::string error;
    auto work = [&](Buffers &buf) {
      auto &[packed, shuffled, rows] = buf;
      for (int64_t c = next++; c < b_end; c = next++) {
        if (!read_chunk(file.fd, idx, c, packed, shuffled, rows)) {
          std::lock_guard<std::mutex> g(error_lock);
          error = "reading /" + std::string(table) + " chunk " + std::to_string(c) +
                  " failed (truncated or corrupt store?)";
          continue;
        }
        const int64_t r0 = std::max(lo, c * cr), r1 = std::min(hi, (c + 1) * cr);
        for (int64_t r = r0; r < r1; ++r)
          out[static_cast<size_t>(r - lo)] = convert(rows[static_cast<size_t>(r - c * cr)]);
      }
    };
    const int nthreads = static_cast<int>(std::min<int64_t>(std::max(1, threads), b_end - b));
    std::vector<std::thread> pool;
    for (int t = 1; t < nthreads; ++t) pool.emplace_back(work, std::ref(buffers.threads[static_cast<size_t>(t)]));
    work(buffers.threads[0]);
    for (auto &t : pool) t.join();
    if (!error.empty()) throw Error(m_path + ": " + error);
    fn(lo, out);
  }
}

template <class Disk, class Out, class Convert>
void TraceStore::slice(const char *table, int32_t first, int32_t last, Convert convert, std::vector<Out> &out) const {
  out.clear();  // a read that throws leaves no rows of the last one
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  auto off = read_rows<int64_t>(ck, m_file, std::string(table) + "_offsets", H5T_NATIVE_INT64);
  if (off.size() != static_cast<size_t>(m_run.nranks) + 1 || first < 0 || last > m_run.nranks || first > last ||
      off[first] < 0 || off[first] > off[last])
    throw Error(m_path + ": bad rank range or damaged /" + table + "_offsets");
  // Every process opens the table's chunks here together (metadata reads are collective).
  const ChunkIndex &idx = chunks_of<Disk>(table);
  if (!idx.usable || std::getenv("PERFSIFT_HDF5_READ")) {
    Handle t = record_type<Disk>();
    std::vector<Disk> own;
    auto *kept = kept_read_buffers<Disk, Out>(table);
    std::vector<Disk> &rows = kept ? kept->whole : own;
    read_rows_into<Disk>(ck, m_file, table, t, static_cast<hsize_t>(off[first]), off[last], rows);
    out.reserve(rows.size());
    for (const auto &d : rows) out.push_back(convert(d));
    return;
  }
  // At most the rows the table holds (offsets past them are refused by the read).
  out.reserve(static_cast<size_t>(std::min(off[last], idx.rows) - std::min(off[first], idx.rows)));
  // Batches of a few chunks: the batch's converted rows are copied on (and kept for the next read).
  scan_table_chunks<Disk, Out>(
      table, off[first], off[last], 4 * idx.chunk_rows, 1, convert,
      [&out](int64_t, const std::vector<Out> &rows) { out.insert(out.end(), rows.begin(), rows.end()); });
}

std::vector<Event> TraceStore::events(int32_t first, int32_t last) const {
  std::vector<Event> out;
  slice<DiskEvent>("events", first, last, to_event, out);
  if (m_has_threads) {
    const auto threads =
        read_threads(m_event_offsets[first], m_event_offsets[first] + static_cast<int64_t>(out.size()));
    for (size_t i = 0; i < threads.size() && i < out.size(); ++i) out[i].thread = threads[i];
  }
  return out;
}

std::vector<Event> TraceStore::events_at(const std::vector<int64_t> &rows) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  const int64_t total = m_event_offsets.empty() ? 0 : m_event_offsets.back();
  for (int64_t r : rows)
    if (r < 0 || r >= total)
      throw Error(m_path + ": event row " + std::to_string(r) + " outside /events (" + std::to_string(total) +
                  " rows)");
  Handle ds(ck(H5Dopen2(m_file, "events", H5P_DEFAULT), "missing dataset events"), H5Dclose);
  Handle fs(H5Dget_space(ds), H5Sclose);
  const hsize_t n = rows.size();
  std::vector<DiskEvent> disk(n);
  std::vector<hsize_t> coords(rows.begin(), rows.end());
  if (n)
    ck.ok(H5Sselect_elements(fs, H5S_SELECT_SET, n, coords.data()), "selecting rows of events");
  else
    ck.ok(H5Sselect_none(fs), "selecting no rows of events");
  const hsize_t mem_n = std::max<hsize_t>(n, 1);
  Handle ms(H5Screate_simple(1, &mem_n, nullptr), H5Sclose);
  if (!n) ck.ok(H5Sselect_none(ms), "selecting no rows of events");
  Handle t = record_type<DiskEvent>();
  DiskEvent none{};
  ck.ok(H5Dread(ds, t, ms, fs, H5P_DEFAULT, n ? disk.data() : &none), "reading events (truncated or corrupt store?)");
  std::vector<Event> out;
  out.reserve(n);
  for (const auto &d : disk) out.push_back(to_event(d));
  return out;
}

std::vector<Event> TraceStore::rank_ends(int32_t first, int32_t last) const {
  if (first < 0 || last > m_run.nranks || first > last) throw Error(m_path + ": bad rank range for /events");
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle t = record_type<DiskEvent>();
  const auto rows = read_rows<DiskEvent>(ck, m_file, "events_ends", t, 2 * static_cast<hsize_t>(first), 2 * last);
  if (rows.size() != static_cast<size_t>(last - first) * 2)
    throw Error(m_path + ": /events_ends is shorter than 2 rows per rank (damaged store)");
  std::vector<Event> out;
  out.reserve(rows.size());
  for (const auto &d : rows) out.push_back(to_event(d));
  return out;
}

AbortRecord find_abort(const std::vector<std::string> &ops, const std::vector<Event> &ends, int32_t first) {
  AbortRecord found;
  const auto code = static_cast<size_t>(std::find(ops.begin(), ops.end(), "MPI_Abort") - ops.begin());
  if (code == ops.size()) return found;
  for (size_t i = 1; i < ends.size(); i += 2) {
    const Event &last = ends[i];
    if (last.op != code) continue;
    ++found.ranks;
    if (found.rank >= 0 && last.t_enter >= found.t_ns) continue;
    found.rank = first + static_cast<int32_t>(i / 2);
    found.error_code = last.tag;
    found.comm = last.comm;
    found.callsite = last.site;
    found.t_ns = last.t_enter;
  }
  return found;
}

void TraceStore::requests(int32_t first, int32_t last, std::vector<RequestRecord> &out) const {
  slice<DiskRequest>(
      "requests", first, last,
      [](const DiskRequest &d) { return RequestRecord{d.id, d.event, d.peer, d.tag, d.comm, d.kind, d.bytes}; }, out);
}

void TraceStore::completions(int32_t first, int32_t last, std::vector<CompletionRecord> &out) const {
  slice<DiskCompletion>(
      "completions", first, last,
      [](const DiskCompletion &d) {
        return CompletionRecord{d.event, d.request, d.source, d.tag, d.bytes, d.cancelled, 0};
      },
      out);
}

void TraceStore::steps(int32_t first, int32_t last, std::vector<StepRecord> &out) const {
  slice<DiskStep>(
      "steps", first, last,
      [](const DiskStep &d) {
        return StepRecord{d.region, d.step, d.t_begin, d.t_end};
      },
      out);
}

std::vector<RequestRecord> TraceStore::requests(int32_t first, int32_t last) const {
  std::vector<RequestRecord> out;
  requests(first, last, out);
  return out;
}

std::vector<CompletionRecord> TraceStore::completions(int32_t first, int32_t last) const {
  std::vector<CompletionRecord> out;
  completions(first, last, out);
  return out;
}

std::vector<StepRecord> TraceStore::steps(int32_t first, int32_t last) const {
  std::vector<StepRecord> out;
  steps(first, last, out);
  return out;
}

std::vector<int64_t> TraceStore::offsets(const std::string &table) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  auto off = read_rows<int64_t>(ck, m_file, table + "_offsets", H5T_NATIVE_INT64);
  if (off.size() != static_cast<size_t>(m_run.nranks) + 1) throw Error(m_path + ": damaged /" + table + "_offsets");
  return off;
}

int64_t TraceStore::events_storage_bytes() const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle ds(ck(H5Dopen2(m_file, "events", H5P_DEFAULT), "missing dataset /events"), H5Dclose);
  return static_cast<int64_t>(H5Dget_storage_size(ds));
}

std::vector<ClockRecord> TraceStore::clocks() const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle t = record_type<DiskClock>();
  std::vector<ClockRecord> out;
  for (const auto &d : read_rows<DiskClock>(ck, m_file, "clocks", t))
    out.push_back(
        {d.offset_init_ns, d.offset_fin_ns, d.local_init_ns, d.local_fin_ns, d.error_init_ns, d.error_fin_ns});
  return out;
}

std::vector<ProgramOs> TraceStore::program_os() const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle t = record_type<DiskProgramOs>();
  std::vector<ProgramOs> out;
  for (const auto &d : read_rows<DiskProgramOs>(ck, m_file, "program_os", t))
    out.push_back({d.thread_cpu_s, d.run_delay_s, d.ctx_switches_involuntary, d.ctx_switches_voluntary});
  if (out.size() != static_cast<size_t>(m_run.nranks))
    throw Error(m_path + ": /program_os has " + std::to_string(out.size()) + " rows for " +
                std::to_string(m_run.nranks) + " ranks (damaged store)");
  return out;
}

}  // namespace perfsift::io
