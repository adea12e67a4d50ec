// Trace stores as OTF2 archives (see otf2_export.h and docs/otf2.md, "Export").
#include "io/otf2_export.h"

#include <hdf5.h>
#include <otf2/otf2.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "io/clock_correction.h"
#include "io/hdf5_util.h"
#include "io/otf2_messages.h"
#include "io/trace_store.h"

namespace perfsift::io {

namespace fs = std::filesystem;

std::string hdf5_store_format(const std::string &path) {
  h5::SilenceHdf5 quiet;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || H5Fis_hdf5(path.c_str()) <= 0) return "";
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0)
    throw Error(path +
                ": HDF5 cannot open it (truncated or corrupt); if it is a collected run that crashed, `perfsift "
                "recover` writes it again from the spill files, else collect the run again");
  h5::Handle file(f, H5Fclose);
  const h5::Ctx ck(path);
  return h5::read_string_attr(ck, file, "format");
}

std::string Otf2Export::warning(const std::string &store) const {
  if (unwritten.empty()) return "";
  std::string w = store + ": not written to the OTF2 archive:";
  bool first = true;
  for (const auto &[kind, n] : unwritten) {
    w += (first ? " " : ", ") + std::to_string(n) + " " + kind;
    first = false;
  }
  return w + " (docs/otf2.md, Export)";
}

namespace {

OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void *, OTF2_FileType, OTF2_LocationRef) { return 0; }

const std::set<std::string> kSends = {"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend"};
const std::map<std::string, OTF2_CollectiveOp> kCollectives = {
    {"MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER},
    {"MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST},
    {"MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE},
    {"MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
    {"MPI_Gather", OTF2_COLLECTIVE_OP_GATHER},
    {"MPI_Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
    {"MPI_Scatter", OTF2_COLLECTIVE_OP_SCATTER},
    {"MPI_Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
    {"MPI_Allgather", OTF2_COLLECTIVE_OP_ALLGATHER},
    {"MPI_Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
    {"MPI_Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL},
    {"MPI_Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
    {"MPI_Alltoallw", OTF2_COLLECTIVE_OP_ALLTOALLW},
    {"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},
    {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN},
    {"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
    {"MPI_Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
};

// The collective of a nonblocking one (MPI_Iallreduce -> MPI_Allreduce), if any.
const OTF2_CollectiveOp *collective_of(const std::string &op) {
  auto it = kCollectives.find(op);
  if (it == kCollectives.end() && op.rfind("MPI_I", 0) == 0) it = kCollectives.find("MPI_" + op.substr(5));
  return it == kCollectives.end() ? nullptr : &it->second;
}

OTF2_RegionRole role_of(const std::string &op) {
  static const std::map<OTF2_CollectiveOp, OTF2_RegionRole> roles = {
      {OTF2_COLLECTIVE_OP_BARRIER, OTF2_REGION_ROLE_BARRIER},
      {OTF2_COLLECTIVE_OP_BCAST, OTF2_REGION_ROLE_COLL_ONE2ALL},
      {OTF2_COLLECTIVE_OP_SCATTER, OTF2_REGION_ROLE_COLL_ONE2ALL},
      {OTF2_COLLECTIVE_OP_SCATTERV, OTF2_REGION_ROLE_COLL_ONE2ALL},
      {OTF2_COLLECTIVE_OP_REDUCE, OTF2_REGION_ROLE_COLL_ALL2ONE},
      {OTF2_COLLECTIVE_OP_GATHER, OTF2_REGION_ROLE_COLL_ALL2ONE},
      {OTF2_COLLECTIVE_OP_GATHERV, OTF2_REGION_ROLE_COLL_ALL2ONE},
      {OTF2_COLLECTIVE_OP_SCAN, OTF2_REGION_ROLE_COLL_OTHER},
      {OTF2_COLLECTIVE_OP_EXSCAN, OTF2_REGION_ROLE_COLL_OTHER},
  };
  if (const OTF2_CollectiveOp *c = collective_of(op)) {
    auto it = roles.find(*c);
    return it == roles.end() ? OTF2_RegionRole{OTF2_REGION_ROLE_COLL_ALL2ALL} : it->second;
  }
  for (const char *p2p : {"send", "recv", "Send", "Recv"})
    if (op.find(p2p) != std::string::npos) return OTF2_REGION_ROLE_POINT2POINT;
  return OTF2_REGION_ROLE_FUNCTION;
}

bool ends_with(const std::string &s, const char *tail) {
  const std::string t(tail);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

constexpr uint32_t kNoRank = OTF2_UNDEFINED_UINT32;
constexpr uint32_t kCommandString = 1;  // global string 0 is "", 1 the run's command
constexpr uint32_t kSiteStrings = 2;    // then the call sites' files, functions and modules

// The attributes of an MPI call's Enter that carry its call site (the store's /callsites
// row); only those with a value are written. perfsift's import reads them back.
enum SiteAttribute : uint32_t {
  kSiteLocation,
  kSiteFunction,
  kSiteModule,
  kSiteOffset,
  kSiteFunctionOffset,
  kSiteAttrs
};
struct SiteAttributeDef {
  const char *name, *description;
  OTF2_Type type;
};
const SiteAttributeDef kSiteAttributeDefs[kSiteAttrs] = {
    {"perfsift::call_site", "source file and line of the MPI call", OTF2_TYPE_SOURCE_CODE_LOCATION},
    {"perfsift::call_site_function", "function that made the MPI call", OTF2_TYPE_STRING},
    {"perfsift::call_site_module", "executable or shared object that made the MPI call", OTF2_TYPE_STRING},
    {"perfsift::call_site_offset", "return address of the MPI call relative to the module's load base",
     OTF2_TYPE_UINT64},
    {"perfsift::call_site_function_offset", "return address of the MPI call relative to the function's start",
     OTF2_TYPE_UINT64},
};

// The archive being written; on any way out but finish() it is closed and its
// temporary directory removed.
class Writer {
 public:
  Writer(const std::string &tmp, const std::string &dir) : m_tmp(tmp), m_dir(dir) {
    m_ar = OTF2_Archive_Open(tmp.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                             OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!m_ar) fail("cannot create the archive", "check that the directory is writable");
    m_flush = {pre_flush, post_flush};
    ok(OTF2_Archive_SetFlushCallbacks(m_ar, &m_flush, nullptr), "setting up the archive");
    ok(OTF2_Archive_SetSerialCollectiveCallbacks(m_ar), "setting up the archive");
    ok(OTF2_Archive_SetCreator(m_ar, "perfsift export (measured run)"), "setting up the archive");
    ok(OTF2_Archive_SetDescription(m_ar, "a perfsift trace store written as Score-P lays out a run"),
       "setting up the archive");
  }
  ~Writer() {
    if (m_ar) OTF2_Archive_Close(m_ar);
    if (!m_done) {
      std::error_code ec;
      fs::remove_all(m_tmp, ec);
    }
  }
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;

  OTF2_Archive *get() const { return m_ar; }
  [[noreturn]] void fail(const std::string &what, const std::string &fix) const {
    std::string m = m_dir + ": writing the OTF2 archive: " + what + Otf2MessageCapture::quoted();
    throw Error(m + "; " + fix + "; nothing was written");
  }
  void ok(OTF2_ErrorCode e, const char *what) const {
    if (e == OTF2_SUCCESS) return;
    Otf2MessageCapture::quoted(e);
    fail(what, "check the free space and permissions of the directory");
  }
  // Closes the archive and renames it into place.
  void finish() {
    const OTF2_ErrorCode e = OTF2_Archive_Close(m_ar);
    m_ar = nullptr;
    ok(e, "closing the archive");
    // A previous archive at DIR steps aside until the new one is in place.
    std::error_code ec;
    const std::string old = m_dir + ".old-" + std::to_string(::getpid());
    const bool replace = fs::exists(m_dir, ec);
    if (replace) {
      fs::remove_all(old, ec);
      fs::rename(m_dir, old, ec);
      if (ec) throw Error(m_dir + ": cannot replace the previous archive (" + ec.message() + "); nothing was written");
    }
    fs::rename(m_tmp, m_dir, ec);
    if (ec) {
      std::error_code back;
      if (replace) fs::rename(old, m_dir, back);
      throw Error(m_dir + ": cannot move the archive into place (" + ec.message() + "); nothing was written");
    }
    m_done = true;
    if (replace) fs::remove_all(old, ec);
  }

 private:
  Otf2MessageCapture m_messages;  // constructed before the archive opens, restored after it closes
  std::string m_tmp, m_dir;
  OTF2_Archive *m_ar = nullptr;
  OTF2_FlushCallbacks m_flush{};
  bool m_done = false;
};

// Everything the archive's definitions need, gathered while the events are written.
struct Plan {
  Plan(const TraceStore &st, Otf2Export &out) : st(st), out(out) {}
  const TraceStore &st;
  Otf2Export &out;
  int64_t start = 0;                  // the global clock's value at the store's time 0 (the clock's global offset)
  int64_t t_max = 0;                  // the largest global time written
  std::vector<std::string> counters;  // PAPI and other counters of the profile
  std::unordered_map<std::string, uint32_t> names;  // user region name -> OTF2 region
  std::vector<std::string> region_names;            // OTF2 region -> name (user regions, then ops)
  std::vector<uint32_t> region_of;                  // store region -> OTF2 region
  std::vector<bool> comm_written;                   // store comm -> defined in the archive
  struct Location {
    uint64_t id;
    int32_t rank, thread;
    uint64_t events;
  };
  std::vector<Location> locations;
  std::vector<std::vector<ClockRecord>> clock_points;  // per location: (time, offset) as local ClockOffsets
  std::set<int32_t> created;                           // store comms a CommCreate record names
  std::set<std::string> silent_ops;                    // ops whose partner or communicator has no record
  int64_t silent_calls = 0;
  // Call sites: the strings their attributes name (global string kSiteStrings + k), and
  // per store call site its SourceCodeLocation (when it has a file or line) and strings.
  std::vector<std::string> site_strings;
  std::unordered_map<std::string, uint32_t> site_string_ref;
  struct Site {
    uint32_t location = OTF2_UNDEFINED_SOURCE_CODE_LOCATION;
    uint32_t function = OTF2_UNDEFINED_STRING, module = OTF2_UNDEFINED_STRING, file = OTF2_UNDEFINED_STRING;
  };
  std::vector<Site> sites;
  std::vector<std::pair<uint32_t, uint32_t>> locations_written;  // SourceCodeLocation: (file string, line)
  int64_t sited_calls = 0;

  uint32_t site_string(const std::string &s) {
    auto [it, fresh] = site_string_ref.emplace(s, kSiteStrings + static_cast<uint32_t>(site_strings.size()));
    if (fresh) site_strings.push_back(s);
    return it->second;
  }
  void plan_sites() {
    for (const CallSite &c : st.callsites()) {
      Site s;
      if (!c.file.empty() || c.line > 0) {
        s.file = site_string(c.file);
        s.location = static_cast<uint32_t>(locations_written.size());
        locations_written.emplace_back(s.file, static_cast<uint32_t>(std::max(c.line, 0)));
      }
      if (!c.function.empty()) s.function = site_string(c.function);
      if (!c.module.empty()) s.module = site_string(c.module);
      sites.push_back(s);
    }
  }

  uint32_t op_region(uint16_t op) const { return static_cast<uint32_t>(region_names.size() - st.ops().size()) + op; }
};

// One rank's clock: global = local + offset(local), the store's linear model.
struct Clock {
  ClockRecord c;
  bool any = false;
  int64_t start = 0;
  // The local time whose corrected time is store time t.
  int64_t local(int64_t t) const {
    const int64_t g = t + start;
    if (!any) return g;
    int64_t l = g - c.offset_init_ns;
    for (int k = 0; k < 3; ++k) l = g - clock_offset_at(c, l);
    return l;
  }
};

// One rank's events of one thread, written to its location.
class RankWriter {
 public:
  RankWriter(Plan &p, const Writer &wr, int32_t rank, const std::vector<Event> &ev,
             const std::vector<RequestRecord> &requests, const std::vector<CompletionRecord> &completions,
             std::vector<StepRecord> steps, const Clock &clock, bool truncated)
      : p(p), wr(wr), rank(rank), ev(ev), clock(clock), truncated(truncated), steps(std::move(steps)) {
    for (const auto &q : requests) {
      request_of[q.id] = &q;
      if (q.event >= 0 && static_cast<size_t>(q.event) < ev.size() &&
          !ends_with(p.st.ops()[ev[static_cast<size_t>(q.event)].op], "_init"))
        activated.emplace(q.event, &q);
    }
    for (const auto &c : completions) completed.emplace(c.event, &c);
  }

  // Writes thread `thread`'s calls (and, for thread 0, the regions and counters).
  void write(int32_t thread, const std::vector<double> &profile) {
    const uint64_t loc = (static_cast<uint64_t>(thread) << 32) | static_cast<uint64_t>(rank);
    w = OTF2_Archive_GetEvtWriter(wr.get(), loc);
    if (!w) wr.ok(OTF2_ERROR_INVALID, "opening an event writer");
    last = INT64_MIN;
    lo = INT64_MAX, hi = INT64_MIN;
    if (thread == 0) plan_counters(profile);
    bool first = true, stopped = false;
    for (size_t i = 0; i < ev.size() && !stopped; ++i) {
      const Event &e = ev[i];
      if (e.thread != thread) continue;
      if (first && thread == 0) {
        int64_t t0 = e.t_enter;
        if (!steps.empty()) t0 = std::min(t0, steps.front().t_begin);
        program_begin(t0);
      }
      first = false;
      if (thread == 0) regions_until(e.t_enter, e.region);
      stopped = call(i, e);
    }
    if (first && thread == 0 && !steps.empty()) program_begin(steps.front().t_begin);
    if (thread == 0 && !stopped) {
      regions_until(INT64_MAX / 4, -1);
      if (!p.counters.empty() && last != INT64_MIN) {  // (program)'s own share, at the end
        for (size_t k = 0; k < cum.size(); ++k) cum[k] += root_share[k];
        metric(last);
      }
      if (!truncated && last != INT64_MIN)
        wr.ok(OTF2_EvtWriter_ProgramEnd(w, nullptr, stamp(last, false), 0), "writing ProgramEnd");
    }
    uint64_t n = 0;
    wr.ok(OTF2_EvtWriter_GetNumberOfEvents(w, &n), "counting events");
    wr.ok(OTF2_Archive_CloseEvtWriter(wr.get(), w), "closing an event file");
    p.locations.push_back({loc, rank, thread, n});
    // The clock offsets: the store's measurements, and the same line at this location's
    // first and last local time (so the reader interpolates, never extrapolates).
    std::vector<ClockRecord> pts;
    if (clock.any) {
      auto point = [&](int64_t l, int64_t err) {
        ClockRecord c;
        c.local_init_ns = l;
        c.offset_init_ns = clock_offset_at(clock.c, l);
        c.error_init_ns = err;
        pts.push_back(c);
      };
      if (lo != INT64_MAX) point(lo, clock.c.error_init_ns);
      point(clock.c.local_init_ns, clock.c.error_init_ns);
      if (clock.c.local_fin_ns > clock.c.local_init_ns) point(clock.c.local_fin_ns, clock.c.error_fin_ns);
      if (hi != INT64_MIN) point(hi, clock.c.error_fin_ns);
      std::sort(pts.begin(), pts.end(),
                [](const ClockRecord &a, const ClockRecord &b) { return a.local_init_ns < b.local_init_ns; });
      pts.erase(
          std::unique(pts.begin(), pts.end(),
                      [](const ClockRecord &a, const ClockRecord &b) { return a.local_init_ns == b.local_init_ns; }),
          pts.end());
    }
    p.clock_points.push_back(std::move(pts));
  }

 private:
  Plan &p;
  const Writer &wr;
  int32_t rank;
  const std::vector<Event> &ev;
  const Clock &clock;
  bool truncated;
  std::vector<StepRecord> steps;  // thread 0's region visits, by begin (outer first)
  std::map<int64_t, const RequestRecord *> request_of;
  std::multimap<int64_t, const RequestRecord *> activated;
  std::multimap<int64_t, const CompletionRecord *> completed;
  OTF2_EvtWriter *w = nullptr;
  int64_t last = INT64_MIN;                // store time of the last record (records never go back in time)
  int64_t lo = INT64_MAX, hi = INT64_MIN;  // local times written
  std::vector<const StepRecord *> open;
  size_t next_step = 0;
  // Counters: per store region, the share added at each Leave; (program)'s own share.
  std::vector<std::vector<double>> share;
  std::vector<double> root_share, cum;
  std::unique_ptr<OTF2_AttributeList, OTF2_ErrorCode (*)(OTF2_AttributeList *)> attrs{nullptr,
                                                                                      OTF2_AttributeList_Delete};

  OTF2_TimeStamp stamp(int64_t t, bool advance = true) {
    t = std::max(t, last);
    if (advance) last = t;
    const int64_t l = std::max<int64_t>(0, clock.local(t));
    lo = std::min(lo, l), hi = std::max(hi, l);
    p.t_max = std::max(p.t_max, t + p.start);
    return static_cast<OTF2_TimeStamp>(l);
  }

  void program_begin(int64_t t) {
    wr.ok(OTF2_EvtWriter_ProgramBegin(w, nullptr, stamp(t), kCommandString, 0, nullptr), "writing ProgramBegin");
  }

  // The counter timeline: each visit of region R adds R's exclusive count / its visits at
  // its Leave, so the growth from Enter to Leave summed over R's visits is R's inclusive
  // count (rounded to whole counts as the timeline goes).
  void plan_counters(const std::vector<double> &profile) {
    const size_t nc = p.counters.size(), nr = p.st.regions().size();
    cum.assign(nc, 0.0);
    root_share.assign(nc, 0.0);
    share.assign(nr, std::vector<double>(nc, 0.0));
    if (!nc) return;
    std::vector<int64_t> visits(nr, 0);
    for (const auto &s : steps)
      if (s.region >= 0 && static_cast<size_t>(s.region) < nr) ++visits[static_cast<size_t>(s.region)];
    for (size_t k = 0; k < nc; ++k)
      for (size_t r = 0; r < nr; ++r) {
        double excl = profile[k * nr + r];
        for (size_t c = 0; c < nr; ++c)
          if (p.st.regions()[c].parent == static_cast<int32_t>(r) && c != r) excl -= profile[k * nr + c];
        if (r == 0)
          root_share[k] = excl;
        else if (visits[r] > 0)
          share[r][k] = excl / static_cast<double>(visits[r]);
        else
          root_share[k] += excl;
      }
  }

  void metric(int64_t t) {
    if (p.counters.empty()) return;
    std::vector<OTF2_Type> types(p.counters.size(), OTF2_TYPE_UINT64);
    std::vector<OTF2_MetricValue> values(p.counters.size());
    for (size_t k = 0; k < cum.size(); ++k)
      values[k].unsigned_int = static_cast<uint64_t>(std::llround(std::max(0.0, cum[k])));
    wr.ok(
        OTF2_EvtWriter_Metric(w, nullptr, stamp(t), 0, static_cast<uint8_t>(types.size()), types.data(), values.data()),
        "writing a Metric");
  }

  void enter_region(const StepRecord &s) {
    metric(s.t_begin);
    wr.ok(OTF2_EvtWriter_Enter(w, nullptr, stamp(s.t_begin), p.region_of[static_cast<size_t>(s.region)]),
          "writing an Enter");
    open.push_back(&s);
  }
  void leave_region() {
    const StepRecord &s = *open.back();
    if (!p.counters.empty())
      for (size_t k = 0; k < cum.size(); ++k) cum[k] += share[static_cast<size_t>(s.region)][k];
    metric(s.t_end);
    wr.ok(OTF2_EvtWriter_Leave(w, nullptr, stamp(s.t_end), p.region_of[static_cast<size_t>(s.region)]),
          "writing a Leave");
    open.pop_back();
  }

  // Closes the open regions that end by t, then opens those that begin by t; `region` is
  // the innermost region of the call at t (checked: the call must be inside it).
  void regions_until(int64_t t, int32_t region) {
    for (;;) {
      while (!open.empty() && open.back()->t_end <= t &&
             (next_step >= steps.size() || open.back()->t_end <= steps[next_step].t_begin))
        leave_region();
      if (next_step < steps.size() && steps[next_step].t_begin <= t) {
        enter_region(steps[next_step++]);
        continue;
      }
      break;
    }
    if (region >= 0 && (open.empty() ? 0 : open.back()->region) != region)
      ++p.out.unwritten["MPI calls outside every recorded visit of their region (imported under the enclosing one)"];
  }

  uint32_t comm_rank(int32_t comm, int32_t world, bool remote = false) const {
    const auto &comms = p.st.comms();
    if (comm < 0 || static_cast<size_t>(comm) >= comms.size()) return static_cast<uint32_t>(world);
    const auto &m = remote ? comms[static_cast<size_t>(comm)].remote : comms[static_cast<size_t>(comm)].members;
    auto it = std::find(m.begin(), m.end(), world);
    return it == m.end() ? kNoRank : static_cast<uint32_t>(it - m.begin());
  }
  OTF2_CommRef comm_ref(int32_t comm) const {
    if (comm < 0) return 0;  // MPI_COMM_WORLD
    if (static_cast<size_t>(comm) < p.comm_written.size() && p.comm_written[static_cast<size_t>(comm)])
      return static_cast<OTF2_CommRef>(comm);
    return OTF2_UNDEFINED_COMM;
  }

  // The attributes naming call site `site` of the store (none for a call without one).
  OTF2_AttributeList *site_attributes(uint64_t site) {
    if (site >= p.sites.size()) return nullptr;
    const Plan::Site &s = p.sites[site];
    const CallSite &c = p.st.callsites()[site];
    if (!attrs) attrs.reset(OTF2_AttributeList_New());
    OTF2_AttributeList *a = attrs.get();
    if (!a) wr.ok(OTF2_ERROR_MEM_ALLOC_FAILED, "making an attribute list");
    OTF2_AttributeList_RemoveAllAttributes(a);
    if (s.location != OTF2_UNDEFINED_SOURCE_CODE_LOCATION)
      wr.ok(OTF2_AttributeList_AddSourceCodeLocationRef(a, kSiteLocation, s.location), "adding an attribute");
    if (s.function != OTF2_UNDEFINED_STRING) {
      wr.ok(OTF2_AttributeList_AddStringRef(a, kSiteFunction, s.function), "adding an attribute");
      wr.ok(OTF2_AttributeList_AddUint64(a, kSiteFunctionOffset, c.fn_offset), "adding an attribute");
    }
    if (s.module != OTF2_UNDEFINED_STRING) {
      wr.ok(OTF2_AttributeList_AddStringRef(a, kSiteModule, s.module), "adding an attribute");
      wr.ok(OTF2_AttributeList_AddUint64(a, kSiteOffset, c.offset), "adding an attribute");
    }
    if (OTF2_AttributeList_GetNumberOfElements(a) == 0) return nullptr;
    ++p.sited_calls;
    return a;
  }

  // One call with the MPI records inside; true when the rank died in it (nothing follows).
  bool call(size_t i, const Event &e) {
    const std::string &op = p.st.ops()[e.op];
    const uint32_t region = p.op_region(e.op);
    const bool nomsg = (e.flags & kProcNull) != 0, inter = (e.flags & kInterComm) != 0;
    const bool interrupted = (e.flags & kInterrupted) != 0;
    bool carried = false;  // a record names the call's partner or communicator
    if (e.flags & (kWildcardSource | kWildcardTag))
      ++p.out.unwritten["wildcard marks of receives (OTF2 records the matched source and tag only)"];
    wr.ok(OTF2_EvtWriter_Enter(w, site_attributes(e.site), stamp(e.t_enter), region), "writing an Enter");
    ++p.out.calls;
    const uint32_t peer = e.peer >= 0 ? comm_rank(e.comm, e.peer, inter) : kNoRank;
    const OTF2_CollectiveOp *coll = collective_of(op);
    const bool blocking_coll = coll && kCollectives.count(op);
    if (kSends.count(op) && !nomsg && e.peer >= 0) {
      wr.ok(OTF2_EvtWriter_MpiSend(w, nullptr, stamp(e.t_enter), peer, comm_ref(e.comm), static_cast<uint32_t>(e.tag),
                                   static_cast<uint64_t>(e.bytes)),
            "writing an MpiSend");
      carried = true;
    } else if (op.rfind("MPI_Sendrecv", 0) == 0 && !nomsg && e.peer >= 0) {
      wr.ok(OTF2_EvtWriter_MpiSend(w, nullptr, stamp(e.t_enter), peer, comm_ref(e.comm), static_cast<uint32_t>(e.tag),
                                   static_cast<uint64_t>(std::max<int64_t>(0, e.bytes - e.bytes_recv))),
            "writing an MpiSend");
      carried = true;
    }
    if (blocking_coll || (e.flags & kTagIsComm)) {
      wr.ok(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, stamp(e.t_enter)), "writing an MpiCollectiveBegin");
      carried = true;
    }
    // Requests the call starts.
    for (auto [it, end] = activated.equal_range(static_cast<int64_t>(i)); it != end; ++it) {
      const RequestRecord &q = *it->second;
      const auto id = static_cast<uint64_t>(q.id);
      if (q.kind == kReqSend) {
        if (q.peer < 0) continue;  // MPI_PROC_NULL: no message
        wr.ok(OTF2_EvtWriter_MpiIsend(w, nullptr, stamp(e.t_enter), comm_rank(q.comm, q.peer, inter), comm_ref(q.comm),
                                      static_cast<uint32_t>(q.tag), static_cast<uint64_t>(q.bytes), id),
              "writing an MpiIsend");
      } else if (q.kind == kReqRecv) {
        if (q.peer == -1) continue;
        wr.ok(OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, stamp(e.t_enter), id), "writing an MpiIrecvRequest");
      } else if (q.kind == kReqCollective) {
        wr.ok(OTF2_EvtWriter_NonBlockingCollectiveRequest(w, nullptr, stamp(e.t_enter), id),
              "writing a NonBlockingCollectiveRequest");
      } else {
        ++p.out.unwritten["requests of other kinds (generalized, I/O)"];
        continue;
      }
      carried = true;
    }
    if (interrupted) {  // the rank died in the call: no completion, no Leave; the measurement ends then
      wr.ok(OTF2_EvtWriter_MeasurementOnOff(w, nullptr, stamp(e.t_exit), OTF2_MEASUREMENT_OFF),
            "writing a MeasurementOnOff");
      return true;
    }
    if (op == "MPI_Recv" && !nomsg && e.peer >= 0) {
      wr.ok(OTF2_EvtWriter_MpiRecv(w, nullptr, stamp(e.t_exit), peer, comm_ref(e.comm), static_cast<uint32_t>(e.tag),
                                   static_cast<uint64_t>(e.bytes_recv)),
            "writing an MpiRecv");
      carried = true;
    }
    // Requests the call completes.
    bool completes = false;
    for (auto [it, end] = completed.equal_range(static_cast<int64_t>(i)); it != end; ++it) {
      const CompletionRecord &c = *it->second;
      completes = true;
      if (c.request < 0) {  // the receive half of a Sendrecv
        if (c.source < 0) continue;
        wr.ok(OTF2_EvtWriter_MpiRecv(w, nullptr, stamp(e.t_exit), comm_rank(e.comm, c.source, inter), comm_ref(e.comm),
                                     static_cast<uint32_t>(c.tag), static_cast<uint64_t>(c.bytes)),
              "writing an MpiRecv");
        continue;
      }
      auto q = request_of.find(c.request);
      const auto id = static_cast<uint64_t>(c.request);
      if (q == request_of.end()) {
        ++p.out.unwritten["completions of requests never started"];
      } else if (c.cancelled) {
        wr.ok(OTF2_EvtWriter_MpiRequestCancelled(w, nullptr, stamp(e.t_exit), id), "writing an MpiRequestCancelled");
      } else if (q->second->kind == kReqSend) {
        if (q->second->peer >= 0)
          wr.ok(OTF2_EvtWriter_MpiIsendComplete(w, nullptr, stamp(e.t_exit), id), "writing an MpiIsendComplete");
      } else if (q->second->kind == kReqRecv) {
        if (c.source >= 0) {
          const int32_t qc = q->second->comm;
          wr.ok(OTF2_EvtWriter_MpiIrecv(w, nullptr, stamp(e.t_exit), comm_rank(qc, c.source, inter), comm_ref(qc),
                                        static_cast<uint32_t>(c.tag), static_cast<uint64_t>(c.bytes), id),
                "writing an MpiIrecv");
        } else if (q->second->peer != -1) {
          ++p.out.unwritten["receive completions without a source"];
        }
      } else if (q->second->kind == kReqCollective) {
        const RequestRecord &r = *q->second;
        const std::string &started = r.event >= 0 && static_cast<size_t>(r.event) < ev.size()
                                         ? p.st.ops()[ev[static_cast<size_t>(r.event)].op]
                                         : op;
        const OTF2_CollectiveOp *k = collective_of(started);
        wr.ok(OTF2_EvtWriter_NonBlockingCollectiveComplete(
                  w, nullptr, stamp(e.t_exit), k ? *k : OTF2_CollectiveOp{OTF2_COLLECTIVE_OP_BARRIER}, comm_ref(r.comm),
                  r.peer >= 0 ? comm_rank(r.comm, r.peer) : kNoRank, static_cast<uint64_t>(r.bytes), 0, id),
              "writing a NonBlockingCollectiveComplete");
      }
    }
    if ((e.flags & kNoMatch) && !completes)
      wr.ok(OTF2_EvtWriter_MpiRequestTest(w, nullptr, stamp(e.t_exit),
                                          static_cast<uint64_t>(std::max<int64_t>(0, e.request))),
            "writing an MpiRequestTest");
    if (e.flags & kTagIsComm) {
      if (e.tag >= 0 && comm_ref(e.tag) != OTF2_UNDEFINED_COMM) {
        p.created.insert(e.tag);
        wr.ok(OTF2_EvtWriter_CommCreate(w, nullptr, stamp(e.t_exit), comm_ref(e.tag)), "writing a CommCreate");
      }
      wr.ok(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, stamp(e.t_exit), OTF2_COLLECTIVE_OP_CREATE_HANDLE,
                                            comm_ref(e.comm), kNoRank, 0, 0),
            "writing an MpiCollectiveEnd");
    } else if (blocking_coll) {
      wr.ok(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, stamp(e.t_exit), *coll, comm_ref(e.comm),
                                            e.peer >= 0 ? peer : kNoRank,
                                            static_cast<uint64_t>(std::max<int64_t>(0, e.bytes - e.bytes_recv)),
                                            static_cast<uint64_t>(e.bytes_recv)),
            "writing an MpiCollectiveEnd");
    }
    if (!carried && !nomsg && (e.peer >= 0 || e.comm > 0)) {
      ++p.silent_calls;
      p.silent_ops.insert(op);
    }
    wr.ok(OTF2_EvtWriter_Leave(w, nullptr, stamp(e.t_exit), region), "writing a Leave");
    return false;
  }
};

void split(const std::string &s, char sep, std::vector<std::string> &out) {
  size_t b = 0;
  while (b <= s.size()) {
    size_t e = s.find(sep, b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
}

void write_definitions(const Writer &wr, const Plan &p) {
  const TraceStore &st = p.st;
  const RunInfo &run = st.run();
  const int32_t P = st.nranks();
  // Local definitions: the clock offsets of each location.
  wr.ok(OTF2_Archive_OpenDefFiles(wr.get()), "opening the definition files");
  for (size_t k = 0; k < p.locations.size(); ++k) {
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(wr.get(), p.locations[k].id);
    if (!dw) wr.ok(OTF2_ERROR_INVALID, "opening a definition writer");
    for (const ClockRecord &c : p.clock_points[k])
      wr.ok(OTF2_DefWriter_WriteClockOffset(dw, static_cast<OTF2_TimeStamp>(std::max<int64_t>(0, c.local_init_ns)),
                                            c.offset_init_ns, static_cast<double>(c.error_init_ns)),
            "writing a ClockOffset");
    wr.ok(OTF2_Archive_CloseDefWriter(wr.get(), dw), "closing a definition file");
  }
  wr.ok(OTF2_Archive_CloseDefFiles(wr.get()), "closing the definition files");

  OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(wr.get());
  if (!g) wr.ok(OTF2_ERROR_INVALID, "opening the global definitions");
  wr.ok(
      OTF2_GlobalDefWriter_WriteClockProperties(
          g, 1000000000, static_cast<uint64_t>(p.start), static_cast<uint64_t>(std::max<int64_t>(0, p.t_max - p.start)),
          run.start_epoch_ns > 0 ? static_cast<uint64_t>(run.start_epoch_ns) : OTF2_UNDEFINED_TIMESTAMP),
      "writing the ClockProperties");
  uint32_t next = 0;
  auto str = [&](const std::string &s) {
    wr.ok(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()), "writing a String");
    return next++;
  };
  const uint32_t empty = str("");
  str(run.command);  // kCommandString: ProgramBegin's name (the whole command line, no separate arguments)
  for (const auto &s : p.site_strings) str(s);  // kSiteStrings...
  // Call sites: their attributes and source code locations.
  if (!p.sites.empty()) {
    for (uint32_t k = 0; k < kSiteAttrs; ++k) {
      const SiteAttributeDef &a = kSiteAttributeDefs[k];
      const uint32_t name = str(a.name), description = str(a.description);
      wr.ok(OTF2_GlobalDefWriter_WriteAttribute(g, k, name, description, a.type), "writing an Attribute");
    }
    for (size_t k = 0; k < p.locations_written.size(); ++k)
      wr.ok(OTF2_GlobalDefWriter_WriteSourceCodeLocation(g, static_cast<uint32_t>(k), p.locations_written[k].first,
                                                         p.locations_written[k].second),
            "writing a SourceCodeLocation");
  }
  // The system tree: the machine, a node per host, the ranks below their host.
  std::vector<std::string> hosts;
  split(run.hostname_list, ',', hosts);
  if (hosts.empty()) hosts.push_back("localhost");
  wr.ok(
      OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("perfsift"), str("machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE),
      "writing a SystemTreeNode");
  const uint32_t node_class = str("node");
  for (size_t h = 0; h < hosts.size(); ++h)
    wr.ok(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, static_cast<uint32_t>(h + 1), str(hosts[h]), node_class, 0),
          "writing a SystemTreeNode");
  const size_t per_host = (static_cast<size_t>(std::max(P, 1)) + hosts.size() - 1) / hosts.size();
  for (int32_t r = 0; r < P; ++r)
    wr.ok(OTF2_GlobalDefWriter_WriteLocationGroup(
              g, static_cast<uint32_t>(r), str("MPI Rank " + std::to_string(r)), OTF2_LOCATION_GROUP_TYPE_PROCESS,
              static_cast<uint32_t>(1 + static_cast<size_t>(r) / per_host), OTF2_UNDEFINED_LOCATION_GROUP),
          "writing a LocationGroup");
  for (const auto &l : p.locations)
    wr.ok(OTF2_GlobalDefWriter_WriteLocation(
              g, l.id, str(l.thread == 0 ? "Master thread" : "Pthread thread " + std::to_string(l.thread)),
              OTF2_LOCATION_TYPE_CPU_THREAD, l.events, static_cast<uint32_t>(l.rank)),
          "writing a Location");
  // Regions: user regions by name, then one MPI region per operation.
  const size_t user = p.region_names.size() - st.ops().size();
  for (size_t k = 0; k < p.region_names.size(); ++k) {
    const uint32_t n = str(p.region_names[k]);
    const bool mpi = k >= user;
    wr.ok(OTF2_GlobalDefWriter_WriteRegion(
              g, static_cast<uint32_t>(k), n, n, empty,
              mpi ? role_of(p.region_names[k]) : OTF2_RegionRole{OTF2_REGION_ROLE_FUNCTION},
              mpi ? OTF2_PARADIGM_MPI : OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, empty, 0, 0),
          "writing a Region");
  }
  // Groups and communicators: MPI_COMM_WORLD's locations in rank order, then one group per
  // distinct member list (world ranks), one communicator per store communicator.
  std::vector<uint64_t> locations;
  for (int32_t r = 0; r < P; ++r) locations.push_back(static_cast<uint64_t>(r));
  wr.ok(OTF2_GlobalDefWriter_WriteGroup(g, 0, str("MPI_COMM_WORLD locations"), OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                        OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(P),
                                        locations.data()),
        "writing a Group");
  std::map<std::vector<int32_t>, uint32_t> groups;
  const auto &comms = st.comms();
  for (size_t c = 0; c < comms.size(); ++c) {
    if (!p.comm_written[c]) continue;
    auto [it, fresh] = groups.emplace(comms[c].members, static_cast<uint32_t>(groups.size() + 1));
    if (fresh) {
      std::vector<uint64_t> m(comms[c].members.begin(), comms[c].members.end());
      wr.ok(OTF2_GlobalDefWriter_WriteGroup(g, it->second, empty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                            OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(m.size()), m.data()),
            "writing a Group");
    }
    const std::string name = c == 0                         ? "MPI_COMM_WORLD"
                             : comms[c].members.size() == 1 ? "MPI_COMM_SELF"
                                                            : "Comm " + std::to_string(c);
    wr.ok(OTF2_GlobalDefWriter_WriteComm(
              g, static_cast<uint32_t>(c), str(name), it->second, OTF2_UNDEFINED_COMM,
              p.created.count(static_cast<int32_t>(c)) ? OTF2_COMM_FLAG_CREATE_DESTROY_EVENTS : OTF2_COMM_FLAG_NONE),
          "writing a Comm");
  }
  // Counters: accumulated PAPI members of one synchronous metric class.
  if (!p.counters.empty()) {
    std::vector<OTF2_MetricMemberRef> members;
    const uint32_t unit = str("#");
    for (size_t k = 0; k < p.counters.size(); ++k) {
      const uint32_t n = str(p.counters[k]);
      wr.ok(OTF2_GlobalDefWriter_WriteMetricMember(
                g, static_cast<uint32_t>(k), n, n,
                p.counters[k].rfind("PAPI_", 0) == 0 ? OTF2_METRIC_TYPE_PAPI : OTF2_METRIC_TYPE_OTHER,
                OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0, unit),
            "writing a MetricMember");
      members.push_back(static_cast<uint32_t>(k));
    }
    wr.ok(OTF2_GlobalDefWriter_WriteMetricClass(g, 0, static_cast<uint8_t>(members.size()), members.data(),
                                                OTF2_METRIC_SYNCHRONOUS_STRICT, OTF2_RECORDER_KIND_CPU),
          "writing a MetricClass");
  }
  wr.ok(OTF2_Archive_CloseGlobalDefWriter(wr.get(), g), "closing the global definitions");
}

// DIR: a previous archive may be replaced; anything else is the user's and stays.
void check_output(const std::string &dir) {
  std::error_code ec;
  const fs::path d(dir);
  const std::string leaf = d.filename().string();
  if (leaf.empty() || leaf == "." || leaf == "..")
    throw Error(dir + ": name a new directory for the archive (-o run-otf2); it is replaced whole");
  const fs::path parent = d.has_parent_path() ? d.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    throw Error(dir + ": the directory " + parent.string() + " does not exist; create it or choose another -o");
  if (!fs::exists(d, ec)) return;
  if (!fs::is_directory(d, ec))
    throw Error(dir + ": is a file; -o names the directory to write the archive into (DIR/traces.otf2)");
  // Only an archive as this command writes it is replaced: anything else there is the user's.
  bool archive = false;
  for (const auto &entry : fs::directory_iterator(d, ec)) {
    const std::string n = entry.path().filename().string();
    if (n == "traces.otf2")
      archive = true;
    else if (n != "traces.def" && n != "traces")
      throw Error(dir + ": exists and holds other files than an OTF2 archive (" + n +
                  "); choose a new directory for -o (it is replaced whole)");
  }
  if (!archive && !fs::is_empty(d, ec))
    throw Error(dir + ": exists and is not an OTF2 archive; choose a new directory for -o (it is replaced whole)");
}

}  // namespace

Otf2Export write_store_otf2(const std::string &store, const std::string &output) {
  std::string dir = output;  // run-otf2/ is run-otf2
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const TraceStore st(store);
  check_output(dir);
  Otf2Export out;
  const RunInfo &run = st.run();
  const int32_t P = st.nranks();
  out.ranks = P;
  Plan p(st, out);
  // Counters: the profile's metrics beyond the built-in ones.
  for (size_t k = kBuiltinMetricCount; k < st.metrics().size(); ++k) p.counters.push_back(st.metrics()[k]);
  if (p.counters.size() > 255) {
    out.unwritten["counters beyond 255 (one metric class)"] += static_cast<int64_t>(p.counters.size() - 255);
    p.counters.resize(255);
  }
  // Regions: one OTF2 region per user region name (the tree is the nesting of Enter/Leave).
  const auto &regions = st.regions();
  p.region_of.assign(regions.size(), 0);
  for (size_t k = 1; k < regions.size(); ++k) {
    auto [it, fresh] = p.names.emplace(regions[k].name, static_cast<uint32_t>(p.region_names.size()));
    if (fresh) p.region_names.push_back(regions[k].name);
    p.region_of[k] = it->second;
  }
  for (const auto &op : st.ops()) p.region_names.push_back(op);
  p.plan_sites();
  p.comm_written.assign(st.comms().size(), true);
  for (size_t c = 0; c < st.comms().size(); ++c)
    if (!st.comms()[c].remote.empty()) {
      p.comm_written[c] = false;
      ++out.unwritten["intercommunicators (their messages name no communicator)"];
    }
  if (!run.missing_ranks.empty())
    out.unwritten["ranks without data (written as ranks without events)"] +=
        static_cast<int64_t>(run.missing_ranks.size());
  {
    std::vector<std::string> hosts;
    split(run.hostname_list, ',', hosts);
    if (hosts.size() > 1 && static_cast<int32_t>(hosts.size()) < P)
      out.unwritten["hosts whose ranks the store does not name (ranks placed in blocks)"] +=
          static_cast<int64_t>(hosts.size());
  }

  // Clocks: the global clock is rank 0's; store time t is global time t + start.
  std::vector<ClockRecord> clocks = st.clocks();
  clocks.resize(static_cast<size_t>(P));
  int64_t start = clocks.empty() ? 0 : std::max<int64_t>(0, clocks[0].local_init_ns);
  {
    // Every local time well above 0 (a second of margin): the global offset moves up when
    // the store's clocks do not give one (an imported store) or times reach below it.
    int64_t need = 1000000000;
    const std::vector<Event> ends = st.rank_ends(0, P);  // each rank's first and last event
    for (int32_t r = 0; r < P; ++r)
      if (st.event_offsets()[static_cast<size_t>(r) + 1] > st.event_offsets()[static_cast<size_t>(r)])
        need = std::max(need, 1000000000 - ends[2 * static_cast<size_t>(r)].t_enter);
    int64_t off = 0;
    for (const auto &c : clocks) off = std::max({off, std::abs(c.offset_init_ns), std::abs(c.offset_fin_ns)});
    if (start < need + off) start += need + off;
  }
  p.start = start;

  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  {
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }
  Writer wr(tmp, dir);
  wr.ok(OTF2_Archive_OpenEvtFiles(wr.get()), "opening the event files");
  const std::set<int32_t> truncated(run.truncated_ranks.begin(), run.truncated_ranks.end());
  int64_t step_numbers = 0;
  for (int32_t r = 0; r < P; ++r) {
    const std::vector<Event> ev = st.events(r, r + 1);
    const std::vector<RequestRecord> requests = st.requests(r, r + 1);
    const std::vector<CompletionRecord> completions = st.completions(r, r + 1);
    std::vector<StepRecord> steps = st.steps(r, r + 1);
    for (const auto &s : steps) {
      if (s.region <= 0 || static_cast<size_t>(s.region) >= regions.size())
        throw Error(store + ": /steps of rank " + std::to_string(r) + " names region " + std::to_string(s.region) +
                    " outside /regions (damaged store); collect the run again");
      step_numbers += s.step >= 0;
    }
    std::sort(steps.begin(), steps.end(), [](const StepRecord &a, const StepRecord &b) {
      return a.t_begin != b.t_begin ? a.t_begin < b.t_begin : a.t_end > b.t_end;
    });
    for (const auto &e : ev)
      if (e.op >= st.ops().size())
        throw Error(store + ": an event of rank " + std::to_string(r) + " names operation " + std::to_string(e.op) +
                    " outside /ops (damaged store); collect the run again");
    std::vector<double> profile;
    for (const auto &name : p.counters) {
      const auto row = st.profile(name, r, r + 1);
      profile.insert(profile.end(), row.begin(), row.end());
    }
    Clock clock;
    clock.c = clocks[static_cast<size_t>(r)];
    clock.any = clock.c.offset_init_ns != 0 || clock.c.offset_fin_ns != 0 || clock.c.local_init_ns != 0;
    clock.start = start;
    std::set<int32_t> threads{0};
    for (const auto &e : ev) threads.insert(e.thread);
    RankWriter rw(p, wr, r, ev, requests, completions, std::move(steps), clock, truncated.count(r) > 0);
    for (int32_t t : threads) rw.write(t, profile);
  }
  wr.ok(OTF2_Archive_CloseEvtFiles(wr.get()), "closing the event files");
  if (step_numbers) out.unwritten["step numbers of step-region visits"] += step_numbers;
  if (p.silent_calls) {
    std::string ops;
    for (const auto &o : p.silent_ops) ops += (ops.empty() ? "" : ", ") + o;
    out.unwritten["partners or communicators of MPI calls without an OTF2 record for them (" + ops + ")"] +=
        p.silent_calls;
  }
  write_definitions(wr, p);
  out.locations = static_cast<int64_t>(p.locations.size());
  wr.finish();
  return out;
}

}  // namespace perfsift::io
