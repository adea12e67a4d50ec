#include "io/trace_store.h"

#include <hdf5.h>
#include <fcntl.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <zlib.h>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <type_traits>
#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <unordered_map>

#include "io/atomic_file.h"
#include "io/checksum.h"
#include "io/codec.h"
#include "io/spill.h"

#include "io/global_heap.h"
#include "io/hdf5_util.h"
#include "io/region_path.h"

namespace perfsift::io {

using namespace h5;

namespace {

// ---------------------------------------------------------------- on-disk records

struct DiskEvent {
  int32_t rank;
  uint16_t op, flags;
  int64_t t_enter, t_exit;
  int32_t peer, tag, comm, region, step, callsite;
  int64_t bytes, bytes_recv, request;
};

struct DiskRequest {
  int32_t rank;
  int32_t kind;
  int64_t id, event;
  int32_t peer, tag, comm;
  int64_t bytes;
};

struct DiskCompletion {
  int32_t rank;
  int32_t cancelled;
  int64_t event, request;
  int32_t source, tag;
  int64_t bytes;
};

struct DiskStep {
  int32_t rank, region, step;
  int64_t t_begin, t_end;
};

struct DiskClock {
  int32_t rank;
  int64_t offset_init_ns, offset_fin_ns, local_init_ns, local_fin_ns, error_init_ns, error_fin_ns;
};

// One field table per record: the member names, order and types of its compound
// type in the file (docs/trace-store.md), for writing and reading alike.
template <class Record>
struct Fields;  // specialised for each on-disk record below

// Inside Fields<R>: the member of R of that name, with its offset and C++ type.
#define PS_FIELD(member) PERFSIFT_H5_FIELD(R, member)

template <>
struct Fields<DiskEvent> {
  using R = DiskEvent;
  static constexpr Field list[] = {
      PS_FIELD(rank),     PS_FIELD(op),    PS_FIELD(flags),      PS_FIELD(t_enter), PS_FIELD(t_exit),
      PS_FIELD(peer),     PS_FIELD(tag),   PS_FIELD(comm),       PS_FIELD(region),  PS_FIELD(step),
      PS_FIELD(callsite), PS_FIELD(bytes), PS_FIELD(bytes_recv), PS_FIELD(request),
  };
};

template <>
struct Fields<DiskRequest> {
  using R = DiskRequest;
  static constexpr Field list[] = {
      PS_FIELD(rank), PS_FIELD(kind), PS_FIELD(id),   PS_FIELD(event),
      PS_FIELD(peer), PS_FIELD(tag),  PS_FIELD(comm), PS_FIELD(bytes),
  };
};

template <>
struct Fields<DiskCompletion> {
  using R = DiskCompletion;
  static constexpr Field list[] = {
      PS_FIELD(rank),   PS_FIELD(cancelled), PS_FIELD(event), PS_FIELD(request),
      PS_FIELD(source), PS_FIELD(tag),       PS_FIELD(bytes),
  };
};

template <>
struct Fields<DiskStep> {
  using R = DiskStep;
  static constexpr Field list[] = {
      PS_FIELD(rank), PS_FIELD(region), PS_FIELD(step), PS_FIELD(t_begin), PS_FIELD(t_end),
  };
};

template <>
struct Fields<DiskClock> {
  using R = DiskClock;
  static constexpr Field list[] = {
      PS_FIELD(rank),         PS_FIELD(offset_init_ns), PS_FIELD(offset_fin_ns), PS_FIELD(local_init_ns),
      PS_FIELD(local_fin_ns), PS_FIELD(error_init_ns),  PS_FIELD(error_fin_ns),
  };
};

#undef PS_FIELD

static_assert(fields_fit<DiskEvent>(Fields<DiskEvent>::list) && sizeof(DiskEvent) == 72);
static_assert(fields_fit<DiskRequest>(Fields<DiskRequest>::list) && sizeof(DiskRequest) == 48);
static_assert(fields_fit<DiskCompletion>(Fields<DiskCompletion>::list) && sizeof(DiskCompletion) == 40);
static_assert(fields_fit<DiskStep>(Fields<DiskStep>::list) && sizeof(DiskStep) == 32);
static_assert(fields_fit<DiskClock>(Fields<DiskClock>::list) && sizeof(DiskClock) == 56);

// A record as it goes to the file: its fields, and zeros in its padding. The file holds
// whole records, padding included; without this, stale memory of the writer (names of
// other records) reached the file and two writes of the same run differed.
template <class Record>
Record without_padding(const Record &r) {
  Record clean;
  std::memset(static_cast<void *>(&clean), 0, sizeof clean);
  for (const auto &f : Fields<Record>::list)
    std::memcpy(reinterpret_cast<char *>(&clean) + f.offset, reinterpret_cast<const char *>(&r) + f.offset, f.size);
  return clean;
}

// The compound type of an on-disk record, from its field table.
template <class Record>
Handle record_type() {
  return compound_type<Record>(Fields<Record>::list);
}

Event to_event(const DiskEvent &d) {
  Event e;
  e.t_enter = d.t_enter;
  e.t_exit = d.t_exit;
  e.bytes = d.bytes;
  e.bytes_recv = d.bytes_recv;
  e.request = d.request;
  e.site = static_cast<uint64_t>(static_cast<int64_t>(d.callsite));
  e.peer = d.peer;
  e.tag = d.tag;
  e.comm = d.comm;
  e.region = d.region;
  e.step = d.step;
  e.op = d.op;
  e.flags = d.flags;
  return e;
}

// file:line for call sites from the modules' debug info, one addr2line per module.
void resolve_lines(std::vector<CallSite> &sites) {
  std::map<std::string, std::vector<size_t>> by_module;
  for (size_t i = 0; i < sites.size(); ++i)
    if (!sites[i].module.empty() && access(sites[i].module.c_str(), R_OK) == 0) by_module[sites[i].module].push_back(i);
  if (by_module.empty() || std::system("command -v addr2line >/dev/null 2>&1") != 0) return;
  for (const auto &[module, idx] : by_module) {
    // addr2line runs without the collector's preload list: an uninstrumented program
    // that loads an ASan runtime late (sanitized builds) deadlocks in setlocale.
    std::string cmd = "LD_PRELOAD= addr2line -C -f -e '" + module + "'";
    for (size_t i : idx) {
      char buf[32];
      // The return address points after the call; step back into it.
      std::snprintf(buf, sizeof buf, " 0x%llx",
                    static_cast<unsigned long long>(sites[i].offset ? sites[i].offset - 1 : 0));
      cmd += buf;
    }
    cmd += " 2>/dev/null";
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) continue;
    char fn[4096], loc[4096];
    for (size_t i : idx) {
      if (!std::fgets(fn, sizeof fn, p) || !std::fgets(loc, sizeof loc, p)) break;
      std::string f(fn), l(loc);
      while (!f.empty() && (f.back() == '\n')) f.pop_back();
      while (!l.empty() && (l.back() == '\n')) l.pop_back();
      if (sites[i].function.empty() && f != "??") sites[i].function = f;
      auto colon = l.rfind(':');
      if (colon != std::string::npos && l.substr(0, 2) != "??") {
        sites[i].file = l.substr(0, colon);
        sites[i].line = std::atoi(l.c_str() + colon + 1);
      }
    }
    pclose(p);
  }
}

}  // namespace

// ---------------------------------------------------------------- write

namespace {
void write_trace_store_tmp(MPI_Comm comm, const std::string &path, const std::string &tmp, const RunInfo &run_in,
                           std::vector<RankTrace> &owned, const std::vector<std::string> &op_names,
                           bool release_traces);
}

void write_trace_store(MPI_Comm comm, const std::string &path, const RunInfo &run_in, std::vector<RankTrace> &owned,
                       const std::vector<std::string> &op_names, bool release_traces) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".tmp-%d", static_cast<int>(getpid()));
  const std::string tmp = path + bcast_string(comm, suffix);
  try {
    write_trace_store_tmp(comm, path, tmp, run_in, owned, op_names, release_traces);
  } catch (...) {
    // Nothing half-written is left behind under any name.
    if (me == 0) std::remove(tmp.c_str());
    throw;
  }
  int rc = 0;
  if (me == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) rc = errno;
  MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
  if (rc) {
    if (me == 0) std::remove(tmp.c_str());
    throw Error(path + ": cannot rename " + tmp + " into place: " + std::strerror(rc));
  }
}

namespace {

// ---- step 1: run facts

// Run facts as process 0 has them; the completeness facts are each process's own.
RunInfo agreed_run(MPI_Comm comm, const RunInfo &run_in) {
  SpillState run_state;
  run_state.run = run_in;
  RunInfo run = deserialize_state(bcast_string(comm, serialize_state(run_state))).run;
  run.incomplete = run_in.incomplete;
  run.missing_ranks = run_in.missing_ranks;
  run.truncated_ranks = run_in.truncated_ranks;
  return run;
}

// ---- step 2: regions, metrics, communicators and call sites unified on process 0

// The run's tables, identical on every process, and the global id of each entry.
struct Tables {
  std::vector<std::string> region_paths, metric_names;
  std::vector<CommRecord> comms;
  std::vector<CallSite> sites;
  std::unordered_map<std::string, int32_t> region_id;
  std::unordered_map<uint64_t, int32_t> comm_id;
  std::map<std::pair<std::string, uint64_t>, int32_t> site_id;
};

// This process's entries, encoded for gathering.
struct LocalTables {
  ByteWriter regions, comms, sites, metrics;
};

LocalTables encode_local_tables(const std::vector<RankTrace> &owned) {
  LocalTables mine;
  // Each distinct path and communicator once per process: a process owning many ranks
  // (recover, synth) must not send O(ranks x members) bytes. Records of a communicator
  // are equal by contract; one with its member list wins over a key-only one.
  std::set<std::string> my_paths;
  std::vector<const CommRecord *> my_comms;  // first-seen order: MPI_COMM_WORLD stays first
  std::unordered_map<uint64_t, size_t> comm_slot;
  for (const auto &t : owned) {
    my_paths.insert(t.region_paths.begin(), t.region_paths.end());
    for (const auto &c : t.comms) {
      auto [it, fresh] = comm_slot.emplace(c.key, my_comms.size());
      if (fresh)
        my_comms.push_back(&c);
      else if (my_comms[it->second]->members.empty() && !c.members.empty())
        my_comms[it->second] = &c;
    }
  }
  for (const auto &p : my_paths) mine.regions.str(p);
  for (const auto *c : my_comms) mine.comms.comm(*c);
  // Metric names: the union, in order of first appearance (a rank lost in a crash has none).
  std::vector<std::string> metrics;
  for (const auto &t : owned) {
    for (const auto &c : t.callsites) mine.sites.callsite(c);
    for (const auto &m : t.metric_names)
      if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
  }
  if (!metrics.empty()) mine.metrics.strs(metrics);
  return mine;
}

std::vector<std::string> merge_region_paths(const std::vector<std::string> &all_regions) {
  std::set<std::string> paths;
  for (const auto &s : all_regions)
    for (ByteReader r(s); r.more();) paths.insert(r.str());
  paths.erase(kRootRegionPath);
  std::vector<std::string> region_paths{kRootRegionPath};
  region_paths.insert(region_paths.end(), paths.begin(), paths.end());  // parents sort before children
  return region_paths;
}

std::vector<std::string> merge_metric_names(const std::vector<std::string> &all_metrics) {
  std::vector<std::string> metric_names;
  for (const auto &s : all_metrics) {
    if (s.empty()) continue;
    for (auto &m : ByteReader(s).strs())
      if (std::find(metric_names.begin(), metric_names.end(), m) == metric_names.end()) metric_names.push_back(m);
  }
  return metric_names;
}

std::vector<CommRecord> merge_comms(const std::vector<std::string> &all_comms) {
  std::vector<CommRecord> comms;
  std::set<uint64_t> seen;
  for (const auto &s : all_comms)
    for (ByteReader r(s); r.more();) {
      CommRecord c = r.comm();
      if (seen.insert(c.key).second)
        comms.push_back(std::move(c));
      else if (!c.members.empty())
        for (auto &known : comms)
          if (known.key == c.key && known.members.empty()) known = c;
    }
  return comms;
}

std::vector<CallSite> merge_sites(const std::vector<std::string> &all_sites) {
  std::vector<CallSite> sites;
  std::set<std::pair<std::string, uint64_t>> seen_sites;
  for (const auto &s : all_sites)
    for (ByteReader r(s); r.more();) {
      CallSite c = r.callsite();
      if (seen_sites.insert({c.module, c.offset}).second) sites.push_back(std::move(c));
    }
  return sites;
}

// Every process gets process 0's tables.
void broadcast_tables(MPI_Comm comm, Tables &t) {
  ByteWriter w;
  w.strs(t.region_paths);
  w.strs(t.metric_names);
  w.pod(static_cast<uint64_t>(t.comms.size()));
  for (const auto &c : t.comms) w.comm(c);
  w.pod(static_cast<uint64_t>(t.sites.size()));
  for (const auto &c : t.sites) w.callsite(c);
  const std::string all = bcast_string(comm, w.take());
  ByteReader r(all);
  t.region_paths = r.strs();
  t.metric_names = r.strs();
  t.comms.clear();
  for (auto n = r.pod<uint64_t>(); n > 0; --n) t.comms.push_back(r.comm());
  t.sites.clear();
  for (auto n = r.pod<uint64_t>(); n > 0; --n) t.sites.push_back(r.callsite());
}

void index_tables(Tables &t) {
  for (size_t i = 0; i < t.region_paths.size(); ++i) t.region_id[t.region_paths[i]] = static_cast<int32_t>(i);
  for (size_t i = 0; i < t.comms.size(); ++i) t.comm_id[t.comms[i].key] = static_cast<int32_t>(i);
  for (size_t i = 0; i < t.sites.size(); ++i)
    t.site_id[{t.sites[i].module, t.sites[i].offset}] = static_cast<int32_t>(i);
}

Tables unified_tables(MPI_Comm comm, const std::vector<RankTrace> &owned) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  const LocalTables mine = encode_local_tables(owned);
  auto all_regions = gather_strings(comm, mine.regions.bytes());
  auto all_comms = gather_strings(comm, mine.comms.bytes());
  auto all_sites = gather_strings(comm, mine.sites.bytes());
  auto all_metrics = gather_strings(comm, mine.metrics.bytes());
  Tables t;
  if (me == 0) {
    t.region_paths = merge_region_paths(all_regions);
    t.metric_names = merge_metric_names(all_metrics);
    t.comms = merge_comms(all_comms);
    t.sites = merge_sites(all_sites);
    resolve_lines(t.sites);
  }
  broadcast_tables(comm, t);
  index_tables(t);
  return t;
}

// ---- step 3: this process's rows, remapped to global ids

struct Rows {
  std::vector<DiskEvent> events;
  std::vector<DiskRequest> requests;
  std::vector<DiskCompletion> completions;
  std::vector<DiskStep> steps;
  std::vector<DiskClock> clocks;
  std::vector<int32_t> event_threads;        // per event: its thread (written when any is not 0)
  bool threaded = false;                     // some rank of the run has events of several threads
  std::vector<int64_t> counts;               // per rank: events requests completions steps (all processes)
  std::vector<std::vector<double>> profile;  // per owned rank: [metric][region]
};

// One rank's local region, communicator and call-site ids to global ones.
struct IdMap {
  std::vector<int32_t> region, comm, site;
  int32_t comm_of(int32_t c) const { return c >= 0 && c < static_cast<int32_t>(comm.size()) ? comm[c] : -1; }
  int32_t region_of(int32_t r) const { return r >= 0 && r < static_cast<int32_t>(region.size()) ? region[r] : 0; }
  int32_t site_of(uint64_t s) const { return s < site.size() ? site[s] : -1; }
};

IdMap id_map(const RankTrace &t, const Tables &g) {
  IdMap m;
  m.region.resize(t.region_paths.size());
  m.comm.resize(t.comms.size());
  m.site.resize(t.callsites.size());
  for (size_t i = 0; i < m.region.size(); ++i) m.region[i] = g.region_id.at(t.region_paths[i]);
  for (size_t i = 0; i < m.comm.size(); ++i) m.comm[i] = g.comm_id.at(t.comms[i].key);
  for (size_t i = 0; i < m.site.size(); ++i) m.site[i] = g.site_id.at({t.callsites[i].module, t.callsites[i].offset});
  return m;
}

void append_records(const RankTrace &t, const IdMap &ids, Rows &rows) {
  for (const auto &e : t.events) {
    DiskEvent d{t.rank,
                e.op,
                e.flags,
                e.t_enter,
                e.t_exit,
                e.peer,
                e.tag,
                ids.comm_of(e.comm),
                ids.region_of(e.region),
                e.step,
                ids.site_of(e.site),
                e.bytes,
                e.bytes_recv,
                e.request};
    if (e.flags & kTagIsComm) d.tag = ids.comm_of(e.tag);
    rows.events.push_back(d);
    rows.event_threads.push_back(e.thread);
    rows.threaded |= e.thread != 0;
  }
  for (const auto &r : t.requests)
    rows.requests.push_back(
        without_padding(DiskRequest{t.rank, r.kind, r.id, r.event, r.peer, r.tag, ids.comm_of(r.comm), r.bytes}));
  for (const auto &c : t.completions)
    rows.completions.push_back({t.rank, c.cancelled, c.event, c.request, c.source, c.tag, c.bytes});
  for (const auto &s : t.steps)
    rows.steps.push_back(without_padding(DiskStep{t.rank, ids.region_of(s.region), s.step, s.t_begin, s.t_end}));
  rows.clocks.push_back(
      without_padding(DiskClock{t.rank, t.clock.offset_init_ns, t.clock.offset_fin_ns, t.clock.local_init_ns,
                                t.clock.local_fin_ns, t.clock.error_init_ns, t.clock.error_fin_ns}));
  size_t r = static_cast<size_t>(t.rank);
  rows.counts[r * 4 + 0] = static_cast<int64_t>(t.events.size());
  rows.counts[r * 4 + 1] = static_cast<int64_t>(t.requests.size());
  rows.counts[r * 4 + 2] = static_cast<int64_t>(t.completions.size());
  rows.counts[r * 4 + 3] = static_cast<int64_t>(t.steps.size());
}

// One rank's profile as [metric][region] of the global tables.
std::vector<double> profile_row(const RankTrace &t, const IdMap &ids, const Tables &g) {
  const size_t nregions = g.region_paths.size(), nmetrics = g.metric_names.size();
  // A rank without data (lost in a crash) gets NaN, not zeros that look measured.
  std::vector<double> prof(nmetrics * nregions, t.region_paths.empty() ? std::nan("") : 0.0);
  const size_t local_nm = t.metric_names.size();
  for (size_t m = 0; m < local_nm; ++m) {
    auto it = std::find(g.metric_names.begin(), g.metric_names.end(), t.metric_names[m]);
    size_t gm = static_cast<size_t>(it - g.metric_names.begin());
    for (size_t reg = 0; reg < t.region_paths.size(); ++reg)
      prof[gm * nregions + ids.region[reg]] = t.profile[reg * local_nm + m];
  }
  return prof;
}

Rows local_rows(MPI_Comm comm, std::vector<RankTrace> &owned, const Tables &g, int32_t nranks, bool release_traces) {
  Rows rows;
  rows.counts.assign(static_cast<size_t>(nranks) * 4, 0);
  size_t events = 0, requests = 0, completions = 0, steps = 0;
  for (const auto &t : owned) {
    events += t.events.size();
    requests += t.requests.size();
    completions += t.completions.size();
    steps += t.steps.size();
  }
  rows.events.reserve(events);  // exact: no growth slack beside the traces
  rows.event_threads.reserve(events);
  rows.requests.reserve(requests);
  rows.completions.reserve(completions);
  rows.steps.reserve(steps);
  size_t freed = 0;
  for (auto &t : owned) {
    const IdMap ids = id_map(t, g);
    append_records(t, ids, rows);
    rows.profile.push_back(profile_row(t, ids, g));
    if (!release_traces) continue;
    freed += t.events.capacity() * sizeof(Event) + t.requests.capacity() * sizeof(RequestRecord) +
             t.completions.capacity() * sizeof(CompletionRecord) + t.steps.capacity() * sizeof(StepRecord);
    // Assigning `{}` would pick the initializer-list overload and keep the capacity.
    t.events = std::vector<Event>();
    t.requests = std::vector<RequestRecord>();
    t.completions = std::vector<CompletionRecord>();
    t.steps = std::vector<StepRecord>();
#ifdef __GLIBC__
    // Freed traces lie between live blocks of the heap: hand their pages back now and
    // then, or the rows grow beside them instead of in their place.
    if (freed > (size_t{256} << 20)) malloc_trim(0), freed = 0;
#endif
  }
  MPI_Allreduce(MPI_IN_PLACE, rows.counts.data(), static_cast<int>(rows.counts.size()), MPI_INT64_T, MPI_SUM, comm);
  int threaded = rows.threaded ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &threaded, 1, MPI_INT, MPI_MAX, comm);
  rows.threaded = threaded != 0;
  return rows;
}

// Row offsets (nranks + 1) of table k (0 events, 1 requests, 2 completions, 3 steps).
std::vector<int64_t> offsets_of(const std::vector<int64_t> &counts, int32_t nranks, int k) {
  std::vector<int64_t> off(nranks + 1, 0);
  for (int r = 0; r < nranks; ++r) off[r + 1] = off[r] + counts[static_cast<size_t>(r) * 4 + k];
  return off;
}

// ---- step 4: the file

// What the writing steps share: checked calls, and whether this process is process 0.
struct Out {
  const Ctx &ck;
  int me;

  // Fixed-width string columns keep parallel writes simple (no variable-length data).
  void strings(hid_t parent, const char *name, const std::vector<std::string> &v, const std::string &desc) const {
    hsize_t n = v.size();
    size_t width = 1;
    for (const auto &s : v) width = std::max(width, s.size() + 1);
    Handle t(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(t, width);
    H5Tset_cset(t, H5T_CSET_UTF8);
    std::vector<char> buf(std::max<size_t>(1, n * width), 0);
    for (size_t i = 0; i < n; ++i) std::memcpy(&buf[i * width], v[i].data(), v[i].size());
    Handle space(n ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_NULL), H5Sclose);
    Handle ds(
        ck(H5Dcreate2(parent, name, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), std::string("creating ") + name),
        H5Dclose);
    describe(ck, ds, "", desc);
    if (!n || me != 0) return;  // process 0 writes the rows alone (see write_table)
    Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT);
    ck.ok(H5Dwrite(ds, t, H5S_ALL, H5S_ALL, dxpl, buf.data()), std::string("writing ") + name);
  }

  // Small tables every process holds identically: process 0 writes the rows.
  template <class T>
  void ints(hid_t parent, const char *name, hid_t type, const std::vector<T> &v, const std::string &units,
            const std::string &desc) const {
    std::vector<T> rows;
    if (me == 0) rows = v;
    write_table(ck, parent, name, type, rows, 0, v.size(), false, units, desc);
  }

  Handle group(hid_t parent, const char *name) const {
    return Handle(ck(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), std::string("creating /") + name),
                  H5Gclose);
  }
};

void write_run_attributes(const Ctx &ck, hid_t file, const RunInfo &run) {
  write_string_attr(ck, file, "format", kTraceStoreFormat);
  write_scalar_attr(ck, file, "version", H5T_NATIVE_INT32, kTraceStoreVersion);
  write_scalar_attr(ck, file, "nranks", H5T_NATIVE_INT32, run.nranks);
  write_string_attr(ck, file, "command", run.command);
  write_string_attr(ck, file, "start_time", run.start_time);
  write_scalar_attr(ck, file, "start_epoch_ns", H5T_NATIVE_INT64, run.start_epoch_ns);
  write_string_list_attr(ck, file, "counters_unavailable", run.counters_unavailable);
  write_string_list_attr(ck, file, "counters_recorded", run.counters_recorded);
  write_scalar_attr(ck, file, "incomplete", H5T_NATIVE_UINT8, static_cast<uint8_t>(run.incomplete));
  write_int_list_attr(ck, file, "missing_ranks", run.missing_ranks);
  write_int_list_attr(ck, file, "truncated_ranks", run.truncated_ranks);
  write_string_attr(ck, file, "collector_config", run.collector_config);
  write_string_attr(ck, file, "mpi_library", run.mpi_library);
  write_string_attr(ck, file, "hosts", run.hostname_list);
}

// Where the parent's path ends in `path` (its last separating '/'), or npos at the root.
// Stores written before names were quoted hold names with a bare '/' ("io/read" opened at
// the top level): when a prefix is no region, the nearest shorter one that is wins.
size_t enclosing_region_end(const Tables &t, const std::string &path) {
  for (size_t slash = region_path_parent_end(path); slash != std::string::npos && slash > 0;
       slash = path.rfind('/', slash - 1))
    if (t.region_id.count(path.substr(0, slash))) return slash;
  return std::string::npos;
}

void write_regions(const Out &out, hid_t file, const Tables &t) {
  Handle g = out.group(file, "regions");
  const size_t nregions = t.region_paths.size();
  std::vector<int32_t> ids(nregions), parents(nregions);
  std::vector<std::string> names(nregions);
  for (size_t i = 0; i < nregions; ++i) {
    ids[i] = static_cast<int32_t>(i);
    const std::string &p = t.region_paths[i];
    const size_t cut = i == 0 ? std::string::npos : enclosing_region_end(t, p);
    names[i] =
        i == 0 ? p : region_name_of_component(std::string_view(p).substr(cut == std::string::npos ? 0 : cut + 1));
    parents[i] = i == 0 ? -1 : (cut == std::string::npos ? 0 : t.region_id.at(p.substr(0, cut)));
  }
  out.ints(g, "id", H5T_NATIVE_INT32, ids, "", "region id: the column of /profile datasets");
  out.ints(g, "parent", H5T_NATIVE_INT32, parents, "", "parent region id, -1 for the root");
  out.strings(g, "name", names, "region name");
  out.strings(g, "path", t.region_paths,
              "names from the root down, joined by /; a name holding / or starting with a double quote is quoted, with "
              "backslash escapes; the root is (program)");
}

// /profile/METRIC: [rank][region]; this process writes its owned ranks' rows (one hyperslab).
void write_profile_metric(const Out &out, hid_t g, const Tables &t, size_t m,
                          const std::vector<std::vector<double>> &profile, int32_t first_rank, int32_t nranks) {
  const std::string &metric = t.metric_names[m];
  const hsize_t nregions = t.region_paths.size();
  hsize_t dims[2] = {static_cast<hsize_t>(nranks), nregions};
  Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
  Handle ds(out.ck(H5Dcreate2(g, metric.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                   "creating /profile/" + metric),
            H5Dclose);
  std::string units = m < kMetricUnits.size() && metric == kMetricNames[m] ? kMetricUnits[m] : "count";
  describe(out.ck, ds, units, "inclusive " + metric + " per [rank][region]");
  std::vector<double> buf;
  for (const auto &row : profile) buf.insert(buf.end(), row.begin() + m * nregions, row.begin() + (m + 1) * nregions);
  hsize_t start[2] = {static_cast<hsize_t>(first_rank), 0}, count[2] = {profile.size(), nregions};
  if (profile.empty() || nregions == 0) return;
  Handle fs(H5Dget_space(ds), H5Sclose);
  Handle ms(H5Screate_simple(2, count, nullptr), H5Sclose);
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT);  // see write_table
  out.ck.ok(H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, dxpl, buf.data()), "writing /profile/" + metric);
}

void write_profile(const Out &out, hid_t file, const Tables &t, const Rows &rows, int32_t first_rank, int32_t nranks) {
  Handle g = out.group(file, "profile");
  for (size_t m = 0; m < t.metric_names.size(); ++m)
    write_profile_metric(out, g, t, m, rows.profile, first_rank, nranks);
}

// The per-rank record tables and their rank offsets. Owned ranks must be contiguous
// per process for one hyperslab; the collector and recover both satisfy this.
void write_records(const Out &out, hid_t file, const Rows &rows, int32_t first_rank, int32_t nranks) {
  const Ctx &ck = out.ck;
  const auto ev_off = offsets_of(rows.counts, nranks, 0), rq_off = offsets_of(rows.counts, nranks, 1);
  const auto cp_off = offsets_of(rows.counts, nranks, 2), st_off = offsets_of(rows.counts, nranks, 3);
  const hsize_t first = static_cast<hsize_t>(first_rank);
  Handle et = record_type<DiskEvent>(), rt = record_type<DiskRequest>(), ct = record_type<DiskCompletion>(),
         stt = record_type<DiskStep>(), clt = record_type<DiskClock>();
  write_table(ck, file, "events", et, rows.events, ev_off[first], ev_off[nranks], true, "ns",
              "one row per MPI call, by rank then enter time; see docs/trace-store.md");
  out.ints(file, "events_offsets", H5T_NATIVE_INT64, ev_off, "rows",
           "rank r's events are rows [r] to [r+1] of /events");
  // Each owned rank's first and last event again, uncompressed: the program window
  // (MPI_Init's exit to MPI_Finalize's entry) is read without inflating every chunk of
  // /events, which one rank boundary per chunk would otherwise cost.
  std::vector<DiskEvent> ends;
  ends.reserve(rows.clocks.size() * 2);
  int64_t at = 0;
  for (size_t i = 0; i < rows.clocks.size(); ++i) {
    const int64_t n = rows.counts[(static_cast<size_t>(first_rank) + i) * 4];
    DiskEvent none;
    std::memset(static_cast<void *>(&none), 0, sizeof none);
    ends.push_back(n ? rows.events[static_cast<size_t>(at)] : none);
    ends.push_back(n ? rows.events[static_cast<size_t>(at + n - 1)] : none);
    at += n;
  }
  write_table(ck, file, "events_ends", et, ends, 2 * first, 2 * static_cast<hsize_t>(nranks), false, "ns",
              "rows [2r] and [2r+1]: rank r's first and last rows of /events (zeros when it has none)");
  // Only runs with several threads calling MPI on some rank: a store without it has
  // every event on thread 0 (and reads as before).
  if (rows.threaded)
    write_table(ck, file, "events_thread", H5T_NATIVE_INT32, rows.event_threads, ev_off[first], ev_off[nranks], true,
                "", "per row of /events: the rank's thread that made the call (0: the one that initialised MPI)");
  write_table(ck, file, "requests", rt, rows.requests, rq_off[first], rq_off[nranks], true, "",
              "request activations (Isend, Irecv, Start, nonblocking collectives)");
  out.ints(file, "requests_offsets", H5T_NATIVE_INT64, rq_off, "rows", "rank slices of /requests");
  write_table(ck, file, "completions", ct, rows.completions, cp_off[first], cp_off[nranks], true, "",
              "requests completed by Wait/Test calls; request -1 is the receive half of a Sendrecv");
  out.ints(file, "completions_offsets", H5T_NATIVE_INT64, cp_off, "rows", "rank slices of /completions");
  write_table(ck, file, "steps", stt, rows.steps, st_off[first], st_off[nranks], false, "ns",
              "executions of step regions (perfsift_step_begin/end)");
  out.ints(file, "steps_offsets", H5T_NATIVE_INT64, st_off, "rows", "rank slices of /steps");
  write_table(ck, file, "clocks", clt, rows.clocks, first, static_cast<hsize_t>(nranks), false, "ns",
              "clock offsets to rank 0 at init and finalize, and their error bounds; already applied to all times");
}

void write_comms(const Out &out, hid_t file, const std::vector<CommRecord> &comms) {
  Handle g = out.group(file, "comms");
  std::vector<uint64_t> keys;
  std::vector<int64_t> moff{0}, roff{0};
  std::vector<int32_t> members, remote;
  for (const auto &c : comms) {
    keys.push_back(c.key);
    members.insert(members.end(), c.members.begin(), c.members.end());
    remote.insert(remote.end(), c.remote.begin(), c.remote.end());
    moff.push_back(static_cast<int64_t>(members.size()));
    roff.push_back(static_cast<int64_t>(remote.size()));
  }
  out.ints(g, "key", H5T_NATIVE_UINT64, keys, "", "communicator identity, equal on all member ranks");
  out.ints(g, "members", H5T_NATIVE_INT32, members, "", "world ranks of each communicator in comm-rank order");
  out.ints(g, "members_offsets", H5T_NATIVE_INT64, moff, "rows", "communicator c's members are rows [c] to [c+1]");
  out.ints(g, "remote", H5T_NATIVE_INT32, remote, "", "remote group of intercommunicators (world ranks)");
  out.ints(g, "remote_offsets", H5T_NATIVE_INT64, roff, "rows", "slices of remote");
}

void write_callsites(const Out &out, hid_t file, const std::vector<CallSite> &sites) {
  Handle g = out.group(file, "callsites");
  std::vector<std::string> modules, functions, files;
  std::vector<uint64_t> offsets, fn_offsets;
  std::vector<int32_t> lines;
  for (const auto &s : sites) {
    modules.push_back(s.module);
    functions.push_back(s.function);
    files.push_back(s.file);
    offsets.push_back(s.offset);
    fn_offsets.push_back(s.fn_offset);
    lines.push_back(s.line);
  }
  out.strings(g, "module", modules, "executable or shared object of the call");
  out.ints(g, "offset", H5T_NATIVE_UINT64, offsets, "bytes", "return address relative to the module base");
  out.strings(g, "function", functions, "calling function (empty when the module has no symbols)");
  out.ints(g, "function_offset", H5T_NATIVE_UINT64, fn_offsets, "bytes",
           "offset of the return address in the function");
  out.strings(g, "file", files, "source file from debug info, else empty");
  out.ints(g, "line", H5T_NATIVE_INT32, lines, "", "source line from debug info, else 0");
}

// Fixed-width string columns: rows times the longest.
template <class Get>
uint64_t string_column_bytes(size_t n, Get get) {
  size_t width = 1;
  for (size_t i = 0; i < n; ++i) width = std::max(width, get(i).size() + 1);
  return static_cast<uint64_t>(n) * width;
}

// Room for the whole store, reserved before HDF5 writes a byte: a full disk or a file size
// limit (EFBIG) is said in one line by every process together, whereas a parallel HDF5
// write that fails on some processes leaves them waiting in different collectives. The
// estimate is generous (records uncompressed, string columns, metadata); a file system
// without fallocate is not checked.
void reserve_room(MPI_Comm comm, int me, const std::string &path, const std::string &tmp, const Rows &rows,
                  const Tables &t) {
  uint64_t mine = rows.events.size() * sizeof(DiskEvent) + rows.requests.size() * sizeof(DiskRequest) +
                  rows.completions.size() * sizeof(DiskCompletion) + rows.steps.size() * sizeof(DiskStep) +
                  rows.clocks.size() * sizeof(DiskClock);
  for (const auto &p : rows.profile) mine += p.size() * sizeof(double);
  uint64_t total = 0;
  MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm);
  int err = 0;
  if (me == 0) {
    total += 3 * string_column_bytes(t.region_paths.size(),
                                     [&](size_t i) -> const std::string & { return t.region_paths[i]; });
    for (const auto &c : t.comms) total += 8 + 4 * (c.members.size() + c.remote.size());
    total += string_column_bytes(t.sites.size(), [&](size_t i) -> const std::string & { return t.sites[i].module; });
    total += string_column_bytes(t.sites.size(), [&](size_t i) -> const std::string & { return t.sites[i].function; });
    total += string_column_bytes(t.sites.size(), [&](size_t i) -> const std::string & { return t.sites[i].file; });
    total += t.sites.size() * 24;
    total += total / 8 + (256 << 10);  // headers, chunk indexes, attributes
    const FileSizeSignalIgnored guard;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      err = errno;
    } else {
      if (::fallocate(fd, 0, 0, static_cast<off_t>(total)) != 0 && errno != EOPNOTSUPP && errno != ENOSYS) err = errno;
      ::close(fd);
    }
  }
  MPI_Bcast(&err, 1, MPI_INT, 0, comm);
  MPI_Bcast(&total, 1, MPI_UINT64_T, 0, comm);
  if (err) {
    if (me == 0) std::remove(tmp.c_str());
    char size[32];
    std::snprintf(size, sizeof size, "%.1f MiB", static_cast<double>(total) / (1 << 20));
    throw Error(path + ": no room for the trace store (about " + size + "): " + std::strerror(err));
  }
}

void write_trace_store_tmp(MPI_Comm comm, const std::string &path, const std::string &tmp, const RunInfo &run_in,
                           std::vector<RankTrace> &owned, const std::vector<std::string> &op_names,
                           bool release_traces) {
  SilenceHdf5 quiet;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  std::sort(owned.begin(), owned.end(), [](const RankTrace &a, const RankTrace &b) { return a.rank < b.rank; });
  const RunInfo run = agreed_run(comm, run_in);
  const int32_t nranks = run.nranks;
  const Tables tables = unified_tables(comm, owned);
  const Rows rows = local_rows(comm, owned, tables, nranks, release_traces);
  const int32_t first_rank = owned.empty() ? 0 : owned.front().rank;
  reserve_room(comm, me, path, tmp, rows, tables);

  Ctx ck(tmp);
  Handle fapl = parallel_write_fapl(comm);
  Handle file(ck(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl),
                 "cannot create file (check the directory exists and is writable)"),
              H5Fclose);
  const Out out{ck, me};
  write_run_attributes(ck, file, run);
  out.strings(file, "ops", op_names, "operation names; /events.op indexes this table");
  write_regions(out, file, tables);
  write_profile(out, file, tables, rows, first_rank, nranks);
  write_records(out, file, rows, first_rank, nranks);
  write_comms(out, file, tables.comms);
  write_callsites(out, file, tables.sites);
  if (H5Fclose(file.release()) < 0) ck.fail("closing the file");
  MPI_Barrier(comm);
}

}  // namespace

}  // namespace perfsift::io

// ---------------------------------------------------------------- read

namespace perfsift::io {

namespace {

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
  if (H5Aexists(f, "hosts") > 0)
    run.hostname_list = read_string_attr(ck, f, "hosts");  // optional: older stores lack it
  return run;
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

std::vector<CallSite> read_callsites(const Ctx &ck, hid_t f) {
  std::vector<CallSite> sites;
  auto modules = read_strings(ck, f, "callsites/module");
  auto functions = read_strings(ck, f, "callsites/function");
  auto files = read_strings(ck, f, "callsites/file");
  auto offs = read_rows<uint64_t>(ck, f, "callsites/offset", H5T_NATIVE_UINT64);
  auto fnoffs = read_rows<uint64_t>(ck, f, "callsites/function_offset", H5T_NATIVE_UINT64);
  auto lines = read_rows<int32_t>(ck, f, "callsites/line", H5T_NATIVE_INT32);
  for (size_t i = 0; i < modules.size(); ++i)
    sites.push_back({modules[i], i < offs.size() ? offs[i] : 0, i < functions.size() ? functions[i] : "",
                     i < fnoffs.size() ? fnoffs[i] : 0, i < files.size() ? files[i] : "",
                     i < lines.size() ? lines[i] : 0});
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
  if (m_version > kTraceStoreVersion)
    throw Error(m_path + ": trace store version " + std::to_string(m_version) + " is newer than this perfsift reads (" +
                std::to_string(kTraceStoreVersion) + "); upgrade perfsift");
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

static ChunkIndex chunk_index(const Ctx &ck, hid_t file, const char *table, hid_t mem_type, size_t record_size);

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

// ---- fast path: a table's chunks read with pread and decompressed here (the events' by
// several threads). HDF5 1.10 inflates and unshuffles serially inside H5Dread (most of a
// scan's time) and sums each chunk's Adler-32 byte by byte; reading the raw chunks lets
// every core decompress. Used when the dataset has exactly the writer's layout (our
// compound type, chunked, shuffle then deflate); otherwise the reads go through H5Dread.
#if defined(__SSE2__)
// Rows x[0..7] of 8 bytes each (the low halves) transposed into 8 rows of E bytes at dst.
static inline void transpose_8x8(const __m128i *x, unsigned char *dst, size_t E) {
  const __m128i a0 = _mm_unpacklo_epi8(x[0], x[1]), a1 = _mm_unpacklo_epi8(x[2], x[3]);
  const __m128i a2 = _mm_unpacklo_epi8(x[4], x[5]), a3 = _mm_unpacklo_epi8(x[6], x[7]);
  const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
  const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
  const __m128i c[4] = {_mm_unpacklo_epi32(b0, b2), _mm_unpackhi_epi32(b0, b2), _mm_unpacklo_epi32(b1, b3),
                        _mm_unpackhi_epi32(b1, b3)};
  for (size_t k = 0; k < 4; ++k) {
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + 2 * k * E), c[k]);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + (2 * k + 1) * E), _mm_unpackhi_epi64(c[k], c[k]));
  }
}
#endif

// Undoes HDF5's shuffle filter for n rows of E bytes: byte j of every row is stored
// contiguously (src[j * n + i]). 8 byte streams x 16 rows are transposed in SSE2 registers,
// several times faster than HDF5's byte loop. The rows go in blocks of 64: each stream's
// cache line is used whole before the next block, as the E streams lie n bytes apart (the
// writer's chunks make that a power of two: the streams share cache sets, and a line
// fetched again for every 16 rows was most of the time).
template <size_t E>
static void unshuffle(const unsigned char *src, unsigned char *dst, size_t n) {
  static_assert(E % 8 == 0, "rows are whole 8-byte words");
  size_t i = 0;
#if defined(__SSE2__)
  constexpr size_t kBlockRows = 64;
  const size_t whole = n / 16 * 16;
  for (size_t block = 0; block < whole; block += kBlockRows) {
    const size_t block_end = std::min(whole, block + kBlockRows);
    for (size_t j = 0; j < E; j += 8)
      for (size_t r0 = block; r0 < block_end; r0 += 16) {
        __m128i lo[8], hi[8];
        for (size_t s = 0; s < 8; ++s) {
          lo[s] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + (j + s) * n + r0));
          hi[s] = _mm_unpackhi_epi64(lo[s], lo[s]);
        }
        transpose_8x8(lo, dst + r0 * E + j, E);
        transpose_8x8(hi, dst + (r0 + 8) * E + j, E);
      }
  }
  i = whole;
#endif
  for (; i < n; ++i)
    for (size_t j = 0; j < E; ++j) dst[i * E + j] = src[j * n + i];
}

// A zlib stream (HDF5's deflate filter) inflated into out[0, *out_len), its Adler-32
// trailer checked with io::adler32 (zlib's uncompress() spent most of its time summing
// byte by byte). False on any error: a bad header, a corrupt or short stream, a wrong sum.
static bool inflate_zlib(const std::vector<unsigned char> &in, unsigned char *out, uLongf *out_len) {
  if (in.size() < 6) return false;
  const unsigned cmf = in[0], flg = in[1];
  if ((cmf & 0x0F) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flg) % 31 != 0 || (flg & 0x20)) return false;
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) return false;  // raw deflate: the trailer is ours to check
  zs.next_in = const_cast<unsigned char *>(in.data() + 2);
  zs.avail_in = static_cast<uInt>(in.size() - 2);
  zs.next_out = out;
  zs.avail_out = static_cast<uInt>(*out_len);
  const int rc = inflate(&zs, Z_FINISH);
  const size_t produced = zs.total_out;
  const unsigned char *tail = zs.next_in;
  const uInt tail_len = zs.avail_in;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || tail_len < 4) return false;
  const uint32_t stored = uint32_t{tail[0]} << 24 | uint32_t{tail[1]} << 16 | uint32_t{tail[2]} << 8 | tail[3];
  *out_len = static_cast<uLongf>(produced);
  return adler32(1, out, produced) == stored;
}

// Where each chunk of table `table` (records of `record_size` bytes, `mem_type` in memory)
// lies in the file; not usable unless the table has the writer's layout.
static ChunkIndex chunk_index(const Ctx &ck, hid_t file, const char *table, hid_t mem_type, size_t record_size) {
  ChunkIndex idx;
  const std::string name = std::string("/") + table;
  Handle ds(ck(H5Dopen2(file, table, H5P_DEFAULT), "missing dataset " + name + " (truncated store?)"), H5Dclose);
  Handle ftype(H5Dget_type(ds), H5Tclose);
  if (H5Tequal(ftype, mem_type) <= 0 || H5Tget_size(ftype) != record_size) return idx;
  Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  if (H5Pget_layout(dcpl) != H5D_CHUNKED) return idx;
  hsize_t chunk = 0;
  if (H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0 || chunk > (hsize_t{1} << 20)) return idx;
  if (H5Pget_nfilters(dcpl) != 2) return idx;
  unsigned flags = 0, cd[8];
  size_t ncd = 8;
  if (H5Pget_filter2(dcpl, 0, &flags, &ncd, cd, 0, nullptr, nullptr) != H5Z_FILTER_SHUFFLE) return idx;
  ncd = 8;
  if (H5Pget_filter2(dcpl, 1, &flags, &ncd, cd, 0, nullptr, nullptr) != H5Z_FILTER_DEFLATE) return idx;
  Handle fs(H5Dget_space(ds), H5Sclose);
  if (H5Sget_simple_extent_type(fs) == H5S_NULL) return idx;
  const hsize_t rows = space_elements(ck, fs, 1, name);
  check_claim(ck, ds, rows, record_size, name);
  hsize_t file_bytes = 0;
  H5Fget_filesize(file, &file_bytes);
  idx.chunk_rows = static_cast<int64_t>(chunk);
  idx.rows = static_cast<int64_t>(rows);
  // Every process makes the same calls: metadata reads may be collective.
  for (hsize_t off = 0; off < rows; off += chunk) {
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(ds, &off, &mask, &addr, &size) < 0 || mask != 0 || addr == HADDR_UNDEF ||
        addr > file_bytes || size > file_bytes - addr)  // a chunk inside the file
      return ChunkIndex{};
    idx.addr.push_back(static_cast<int64_t>(addr));
    idx.size.push_back(static_cast<int64_t>(size));
  }
  idx.usable = true;
  return idx;
}

// Chunk c of a table with the writer's layout (ChunkIndex usable) read from `fd`, inflated
// and unshuffled into `rows` (idx.chunk_rows records; `packed` and `shuffled` are reused
// buffers). False when the chunk is short, corrupt or fails its checksum.
template <class Disk>
static bool read_chunk(int fd, const ChunkIndex &idx, int64_t c, std::vector<unsigned char> &packed,
                       std::vector<unsigned char> &shuffled, std::vector<Disk> &rows) {
  const auto cr = static_cast<size_t>(idx.chunk_rows);
  packed.resize(static_cast<size_t>(idx.size[static_cast<size_t>(c)]));
  shuffled.resize(cr * sizeof(Disk));
  rows.resize(cr);
  uLongf out_len = static_cast<uLongf>(shuffled.size());
  const bool ok = ::pread(fd, packed.data(), packed.size(), idx.addr[static_cast<size_t>(c)]) ==
                      static_cast<ssize_t>(packed.size()) &&
                  inflate_zlib(packed, shuffled.data(), &out_len) && out_len == shuffled.size();
  if (ok) unshuffle<sizeof(Disk)>(shuffled.data(), reinterpret_cast<unsigned char *>(rows.data()), cr);
  return ok;
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
  std::vector<Event> out(static_cast<size_t>(last - first) * 2);
  if (H5Lexists(m_file, "events_ends", H5P_DEFAULT) > 0) {
    SilenceHdf5 quiet;
    Ctx ck(m_path);
    Handle t = record_type<DiskEvent>();
    const auto rows = read_rows<DiskEvent>(ck, m_file, "events_ends", t, 2 * static_cast<hsize_t>(first), 2 * last);
    if (rows.size() != out.size())
      throw Error(m_path + ": /events_ends is shorter than 2 rows per rank (damaged store)");
    for (size_t i = 0; i < rows.size(); ++i) out[i] = to_event(rows[i]);
    return out;
  }
  // Stores written before /events_ends: the rows themselves.
  std::vector<int64_t> rows;
  std::vector<size_t> slot;
  for (int32_t r = first; r < last; ++r)
    if (m_event_offsets[r + 1] > m_event_offsets[r]) {
      rows.push_back(m_event_offsets[r]);
      rows.push_back(m_event_offsets[r + 1] - 1);
      slot.push_back(static_cast<size_t>(r - first) * 2);
    }
  const auto found = events_at(rows);
  for (size_t k = 0; k < slot.size(); ++k) {
    out[slot[k]] = found[2 * k];
    out[slot[k] + 1] = found[2 * k + 1];
  }
  return out;
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

}  // namespace perfsift::io
