// Writing the trace store (io/trace_store.h): the run's tables unified across processes,
// each process's rows remapped to them, then one parallel HDF5 file written under a
// temporary name and renamed into place.
#include <hdf5.h>
#include <fcntl.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "io/atomic_file.h"
#include "io/build_id.h"
#include "io/codec.h"
#include "io/hdf5_util.h"
#include "io/region_path.h"
#include "io/spill.h"
#include "io/trace_store.h"
#include "io/trace_store_schema.h"

namespace perfsift::io {

using namespace h5;
using namespace trace_schema;

namespace {

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
// A call site's identity across ranks: its frame and the wrapper frames it was reached by.
using SiteKey = std::tuple<std::string, uint64_t, std::vector<CallFrame>>;
SiteKey site_key(const CallSite &c) { return {c.module, c.offset, c.via}; }

struct Tables {
  std::vector<std::string> region_paths, metric_names;
  std::vector<CommRecord> comms;
  std::vector<CallSite> sites;
  std::vector<std::string> modules, build_ids;  // the modules of the sites' frames, each with its build-id
  std::unordered_map<std::string, int32_t> region_id;
  std::unordered_map<uint64_t, int32_t> comm_id;
  std::map<SiteKey, int32_t> site_id;
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
    for (const auto &c : t.callsites) {
      mine.sites.callsite(c);
      mine.sites.frames(c.via);
    }
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
  std::set<SiteKey> seen_sites;
  for (const auto &s : all_sites)
    for (ByteReader r(s); r.more();) {
      CallSite c = r.callsite();
      c.via = r.frames();
      if (seen_sites.insert(site_key(c)).second) sites.push_back(std::move(c));
    }
  return sites;
}

// Read from the files on process 0's node, as resolve_lines does: the modules the ranks ran.
void module_build_ids(Tables &t) {
  std::set<std::string> modules;
  for (const auto &c : t.sites) {
    modules.insert(c.module);
    for (const auto &f : c.via) modules.insert(f.module);
  }
  for (const auto &m : modules)
    if (!m.empty()) {
      t.modules.push_back(m);
      t.build_ids.push_back(elf_build_id(m));
    }
}

// Every process gets process 0's tables.
void broadcast_tables(MPI_Comm comm, Tables &t) {
  ByteWriter w;
  w.strs(t.region_paths);
  w.strs(t.metric_names);
  w.pod(static_cast<uint64_t>(t.comms.size()));
  for (const auto &c : t.comms) w.comm(c);
  w.pod(static_cast<uint64_t>(t.sites.size()));
  for (const auto &c : t.sites) {
    w.callsite(c);
    w.frames(c.via);
  }
  w.strs(t.modules);
  w.strs(t.build_ids);
  const std::string all = bcast_string(comm, w.take());
  ByteReader r(all);
  t.region_paths = r.strs();
  t.metric_names = r.strs();
  t.comms.clear();
  for (auto n = r.pod<uint64_t>(); n > 0; --n) t.comms.push_back(r.comm());
  t.sites.clear();
  for (auto n = r.pod<uint64_t>(); n > 0; --n) {
    t.sites.push_back(r.callsite());
    t.sites.back().via = r.frames();
  }
  t.modules = r.strs();
  t.build_ids = r.strs();
}

void index_tables(Tables &t) {
  for (size_t i = 0; i < t.region_paths.size(); ++i) t.region_id[t.region_paths[i]] = static_cast<int32_t>(i);
  for (size_t i = 0; i < t.comms.size(); ++i) t.comm_id[t.comms[i].key] = static_cast<int32_t>(i);
  for (size_t i = 0; i < t.sites.size(); ++i) t.site_id[site_key(t.sites[i])] = static_cast<int32_t>(i);
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
    module_build_ids(t);
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
  std::vector<DiskProgramOs> program_os;
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
  for (size_t i = 0; i < m.site.size(); ++i) m.site[i] = g.site_id.at(site_key(t.callsites[i]));
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
  const ProgramOs &os = t.program_os;
  rows.program_os.push_back(without_padding(
      DiskProgramOs{t.rank, os.thread_cpu_s, os.run_delay_s, os.ctx_switches_involuntary, os.ctx_switches_voluntary}));
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
  if (!run.timer.empty()) {
    write_string_attr(ck, file, "timer", run.timer);
    write_scalar_attr(ck, file, "timer_read_ns", H5T_NATIVE_DOUBLE, run.timer_read_ns);
    write_scalar_attr(ck, file, "collector_call_ns", H5T_NATIVE_DOUBLE, run.collector_call_ns);
  }
}

// Where the parent's path ends in `path` (its last separating '/'), or npos at the root.
// Every writer of paths quotes a name holding '/' and adds each parent, but a path from a
// damaged spill file may hold a bare '/' ("io/read" at the top level): when a prefix is no
// region, the nearest shorter one that is wins.
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
         stt = record_type<DiskStep>(), clt = record_type<DiskClock>(), ost = record_type<DiskProgramOs>();
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
  write_table(ck, file, "program_os", ost, rows.program_os, first, static_cast<hsize_t>(nranks), false, "s",
              "per rank, the thread that initialised MPI over the program window: CPU time, time runnable but "
              "waiting for a CPU, context switches; NaN where not recorded");
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

// The wrapper frames of the sites reached through the program's own MPI wrappers; absent
// when no site was (readers of stores without them see direct calls).
void write_wrapper_frames(const Out &out, hid_t g, const std::vector<CallSite> &sites) {
  std::vector<std::string> modules, functions;
  std::vector<uint64_t> offsets, fn_offsets;
  std::vector<int64_t> rows{0};
  for (const auto &s : sites) {
    for (const auto &f : s.via) {
      modules.push_back(f.module);
      offsets.push_back(f.offset);
      functions.push_back(f.function);
      fn_offsets.push_back(f.fn_offset);
    }
    rows.push_back(static_cast<int64_t>(modules.size()));
  }
  if (modules.empty()) return;
  out.strings(g, "via_module", modules, "module of each wrapper frame");
  out.ints(g, "via_offset", H5T_NATIVE_UINT64, offsets, "bytes",
           "wrapper frame's return address relative to its module");
  out.strings(g, "via_function", functions, "wrapper function (empty when its module has no symbols)");
  out.ints(g, "via_function_offset", H5T_NATIVE_UINT64, fn_offsets, "bytes",
           "offset of the return address in the wrapper function");
  out.ints(g, "via_rows", H5T_NATIVE_INT64, rows, "rows",
           "site s went through wrapper frames [s] to [s+1] of via_*, the MPI call's return address first");
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
  write_wrapper_frames(out, g, sites);
}

void write_modules(const Out &out, hid_t file, const Tables &t) {
  Handle g = out.group(file, "modules");
  out.strings(g, "path", t.modules, "executable or shared object of a call site's frame");
  out.strings(g, "build_id", t.build_ids, "its GNU build-id (hex; empty: none), to find its debug symbols");
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
                  rows.clocks.size() * sizeof(DiskClock) + rows.program_os.size() * sizeof(DiskProgramOs);
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
  write_modules(out, file, tables);
  if (!run.rank_hosts.empty())
    out.ints(file, "rank_hosts", H5T_NATIVE_INT32, run.rank_hosts, "",
             "per rank, its node: the index of its name in the hosts attribute");
  if (const NetworkProbe &p = run.network_probe; !p.level.empty()) {
    Handle g = out.group(file, "network_probe");
    write_scalar_attr(ck, g, "cost_ns", H5T_NATIVE_DOUBLE, p.cost_ns);
    out.ints(g, "level", H5T_NATIVE_INT32, p.level, "", "0: a pair of one node, 1: of two nodes");
    out.ints(g, "kind", H5T_NATIVE_INT32, p.kind, "",
             "0 send overhead, 1 receive overhead of a message already there, 2 gap between back-to-back sends, "
             "3 transfer (half a ping-pong's round trip)");
    out.ints(g, "bytes", H5T_NATIVE_INT64, p.bytes, "B", "message size");
    out.ints(g, "ns", H5T_NATIVE_INT64, p.ns, "ns", "the time measured");
  }
  if (H5Fclose(file.release()) < 0) ck.fail("closing the file");
  MPI_Barrier(comm);
}

}  // namespace

}  // namespace perfsift::io
