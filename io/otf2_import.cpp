// OTF2 archives into RankTraces (see otf2_import.h and docs/otf2.md).
#include "io/otf2_import.h"

#include <otf2/otf2.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <system_error>
#include <unordered_map>

#include "io/otf2_messages.h"
#include "io/region_path.h"
#include "io/trace_store.h"

namespace perfsift::io {

namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- definitions

struct RegionDef {
  std::string name;
  bool mpi = false;
};

struct GroupDef {
  OTF2_GroupType type = OTF2_GROUP_TYPE_UNKNOWN;
  OTF2_Paradigm paradigm = OTF2_PARADIGM_UNKNOWN;
  std::vector<uint64_t> members;
};

struct CommDef {
  std::string name;
  uint32_t group = OTF2_UNDEFINED_GROUP;
  bool inter = false;
};

struct MemberDef {
  std::string name;
  bool accumulated = false;
};

struct Defs {
  uint64_t resolution = 0, offset = 0, realtime = OTF2_UNDEFINED_TIMESTAMP;
  bool have_clock = false;
  std::unordered_map<uint32_t, std::string> strings;
  struct Node {
    uint32_t name, cls, parent;
  };
  std::unordered_map<uint32_t, Node> nodes;
  struct Group {
    uint32_t name;
    OTF2_LocationGroupType type;
    uint32_t node;
  };
  std::map<uint32_t, Group> location_groups;
  struct Location {
    OTF2_LocationType type;
    uint32_t group;
    uint64_t events;
  };
  std::map<uint64_t, Location> locations;
  std::unordered_map<uint32_t, RegionDef> regions;
  std::unordered_map<uint32_t, GroupDef> groups;
  std::map<uint32_t, CommDef> comms;
  std::unordered_map<uint32_t, MemberDef> members;
  std::unordered_map<uint32_t, std::vector<uint32_t>> metric_classes;
  // What an attribute of an MPI call's Enter says of its call site (by name and type).
  enum SiteRole : int { kNotSite, kSiteLocation, kSiteFunction, kSiteModule, kSiteOffset, kSiteFnOffset, kAnyLocation };
  std::unordered_map<uint32_t, SiteRole> attributes;
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> source_locations;  // (file string, line)

  std::string str(uint32_t k) const {
    auto it = strings.find(k);
    return it == strings.end() ? std::string() : it->second;
  }
};

#define OTF2_CB(name, ...)                        \
  OTF2_CallbackCode name(void *ud, __VA_ARGS__) { \
    [[maybe_unused]] Defs &d = *static_cast<Defs *>(ud);
#define OTF2_CB_END             \
  return OTF2_CALLBACK_SUCCESS; \
  }

OTF2_CB(def_clock, uint64_t resolution, uint64_t offset, uint64_t, uint64_t realtime)
d.resolution = resolution;
d.offset = offset;
d.realtime = realtime;
d.have_clock = true;
OTF2_CB_END
OTF2_CB(def_string, OTF2_StringRef self, const char *s)
d.strings[self] = s ? s : "";
OTF2_CB_END
OTF2_CB(def_node, OTF2_SystemTreeNodeRef self, OTF2_StringRef name, OTF2_StringRef cls, OTF2_SystemTreeNodeRef parent)
d.nodes[self] = {name, cls, parent};
OTF2_CB_END
OTF2_CB(def_lgroup, OTF2_LocationGroupRef self, OTF2_StringRef name, OTF2_LocationGroupType type,
        OTF2_SystemTreeNodeRef node, OTF2_LocationGroupRef)
d.location_groups[self] = {name, type, node};
OTF2_CB_END
OTF2_CB(def_location, OTF2_LocationRef self, OTF2_StringRef, OTF2_LocationType type, uint64_t events,
        OTF2_LocationGroupRef group)
d.locations[self] = {type, group, events};
OTF2_CB_END
OTF2_CB(def_region, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef canonical, OTF2_StringRef, OTF2_RegionRole,
        OTF2_Paradigm paradigm, OTF2_RegionFlag, OTF2_StringRef, uint32_t, uint32_t)
RegionDef r;
r.name = d.str(name);
if (r.name.empty()) r.name = d.str(canonical);
r.mpi = paradigm == OTF2_PARADIGM_MPI;
d.regions[self] = std::move(r);
OTF2_CB_END
OTF2_CB(def_group, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type, OTF2_Paradigm paradigm, OTF2_GroupFlag,
        uint32_t n, const uint64_t *members)
d.groups[self] = {type, paradigm, std::vector<uint64_t>(members, members + n)};
OTF2_CB_END
OTF2_CB(def_comm, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group, OTF2_CommRef, OTF2_CommFlag)
d.comms[self] = {d.str(name), group, false};
OTF2_CB_END
OTF2_CB(def_intercomm, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef, OTF2_GroupRef, OTF2_CommRef,
        OTF2_CommFlag)
d.comms[self] = {d.str(name), OTF2_UNDEFINED_GROUP, true};
OTF2_CB_END
OTF2_CB(def_member, OTF2_MetricMemberRef self, OTF2_StringRef name, OTF2_StringRef, OTF2_MetricType,
        OTF2_MetricMode mode, OTF2_Type, OTF2_Base, int64_t, OTF2_StringRef)
const auto timing = mode & OTF2_METRIC_TIMING_MASK;
d.members[self] = {d.str(name), timing == OTF2_METRIC_ACCUMULATED_START || timing == OTF2_METRIC_ACCUMULATED_POINT ||
                                    timing == OTF2_METRIC_ACCUMULATED_LAST || timing == OTF2_METRIC_ACCUMULATED_NEXT};
OTF2_CB_END
OTF2_CB(def_attribute, OTF2_AttributeRef self, OTF2_StringRef name, OTF2_StringRef, OTF2_Type type)
const std::string n = d.str(name);
Defs::SiteRole role = Defs::kNotSite;
if (n == "perfsift::call_site" && type == OTF2_TYPE_SOURCE_CODE_LOCATION)
  role = Defs::kSiteLocation;
else if (n == "perfsift::call_site_function" && type == OTF2_TYPE_STRING)
  role = Defs::kSiteFunction;
else if (n == "perfsift::call_site_module" && type == OTF2_TYPE_STRING)
  role = Defs::kSiteModule;
else if (n == "perfsift::call_site_offset" && type == OTF2_TYPE_UINT64)
  role = Defs::kSiteOffset;
else if (n == "perfsift::call_site_function_offset" && type == OTF2_TYPE_UINT64)
  role = Defs::kSiteFnOffset;
else if (type == OTF2_TYPE_SOURCE_CODE_LOCATION)
  role = Defs::kAnyLocation;
if (role != Defs::kNotSite) d.attributes[self] = role;
OTF2_CB_END
OTF2_CB(def_source_location, OTF2_SourceCodeLocationRef self, OTF2_StringRef file, uint32_t line)
d.source_locations[self] = {file, line};
OTF2_CB_END
OTF2_CB(def_class, OTF2_MetricRef self, uint8_t n, const OTF2_MetricMemberRef *members, OTF2_MetricOccurrence,
        OTF2_RecorderKind)
d.metric_classes[self] = std::vector<uint32_t>(members, members + n);
OTF2_CB_END

// ---------------------------------------------------------------- the ranks

// Which location is which rank: Score-P's COMM_LOCATIONS group lists MPI_COMM_WORLD's
// locations in rank order; without it, process location groups in id order, each
// represented by its first location.
struct RankMap {
  std::vector<uint64_t> location_of;  // rank -> location
  std::unordered_map<uint64_t, int32_t> rank_of;
};

RankMap map_ranks(const Defs &d) {
  RankMap m;
  for (const auto &[id, g] : d.groups)
    if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS && g.paradigm == OTF2_PARADIGM_MPI && !g.members.empty()) {
      m.location_of = g.members;
      break;
    }
  if (m.location_of.empty()) {
    std::map<uint32_t, uint64_t> first;  // process location group -> its first CPU thread
    for (const auto &[lid, l] : d.locations) {
      auto g = d.location_groups.find(l.group);
      if (g != d.location_groups.end() && g->second.type == OTF2_LOCATION_GROUP_TYPE_PROCESS &&
          (l.type == OTF2_LOCATION_TYPE_CPU_THREAD || l.type == OTF2_LOCATION_TYPE_UNKNOWN))
        first.emplace(l.group, lid);
    }
    for (const auto &[gid, lid] : first) m.location_of.push_back(lid);
  }
  for (size_t r = 0; r < m.location_of.size(); ++r)
    if (!m.rank_of.emplace(m.location_of[r], static_cast<int32_t>(r)).second || !d.locations.count(m.location_of[r]))
      throw Error("the archive's group of MPI_COMM_WORLD's locations names location " +
                  std::to_string(m.location_of[r]) + " twice or never defines it");
  return m;
}

// Communicators as the store keeps them: MPI_COMM_WORLD first (one that holds every rank,
// or one made up when the archive defines none), then the others in definition order.
struct Comms {
  std::vector<CommRecord> records;              // self communicators: members filled per rank
  std::vector<bool> self;                       // MPI_COMM_SELF-like (one member: the rank itself)
  std::unordered_map<uint32_t, int32_t> index;  // OTF2 comm -> index
};

constexpr uint64_t kCommKeyBase = 0x4F54463200000000ull;  // "OTF2"

Comms map_comms(const Defs &d, int32_t nranks, std::map<std::string, int64_t> &unmapped) {
  Comms c;
  std::vector<int32_t> all(static_cast<size_t>(nranks));
  for (int32_t r = 0; r < nranks; ++r) all[static_cast<size_t>(r)] = r;
  int64_t world = -1;
  for (const auto &[id, cd] : d.comms) {
    if (cd.inter) continue;
    auto g = d.groups.find(cd.group);
    if (g == d.groups.end() || g->second.type != OTF2_GROUP_TYPE_COMM_GROUP) continue;
    std::vector<int32_t> m(g->second.members.begin(), g->second.members.end());
    if (m == all && (world < 0 || cd.name == "MPI_COMM_WORLD")) world = id;
  }
  if (world < 0) {
    c.records.push_back({kCommKeyBase | 0xFFFFFFFFull, all, {}});
    c.self.push_back(false);
  }
  auto add = [&](uint32_t id, const CommDef &cd) {
    CommRecord rec;
    rec.key = kCommKeyBase | id;
    bool self = false;
    auto g = d.groups.find(cd.group);
    if (cd.inter) {
      ++unmapped["intercommunicators (their messages keep comm -1)"];
      return;
    }
    if (g != d.groups.end() && g->second.type == OTF2_GROUP_TYPE_COMM_SELF)
      self = true;
    else if (g != d.groups.end())
      for (uint64_t r : g->second.members) {
        if (r >= static_cast<uint64_t>(nranks)) {
          ++unmapped["communicators with members outside MPI_COMM_WORLD"];
          return;
        }
        rec.members.push_back(static_cast<int32_t>(r));
      }
    else {
      ++unmapped["communicators without a group"];
      return;
    }
    c.index[id] = static_cast<int32_t>(c.records.size());
    c.records.push_back(std::move(rec));
    c.self.push_back(self);
  };
  if (world >= 0) add(static_cast<uint32_t>(world), d.comms.at(static_cast<uint32_t>(world)));
  for (const auto &[id, cd] : d.comms)
    if (static_cast<int64_t>(id) != world) add(id, cd);
  return c;
}

// ---------------------------------------------------------------- events

// Kinds of records that are not mapped, counted by the generic callback below.
const char *const kUnmappedKinds[] = {
    "RMA events",
    "OpenMP and thread events",
    "I/O events",
    "parameter events",
    "calling-context (unwinding) events",
    "nonblocking-collective events",
    "measurement on/off markers",
    "buffer flushes",
    "records of kinds unknown to this OTF2 version",
};
enum UnmappedKind { kRma, kThread, kIo, kParam, kContext, kNbc, kOnOff, kFlush, kUnknown };

struct Frame {
  int32_t node;  // region tree node (user regions), or -1 for an MPI call
  int64_t t0;
  double mpi_time, sent, recv;  // the rank's totals at entry
  std::vector<double> counters;
};

// One location's events into one RankTrace.
struct RankReader {
  const Defs &d;
  const Comms &comms;
  const std::vector<std::string> &op_names;
  const std::unordered_map<std::string, uint16_t> &op_index;
  const std::vector<std::string> &extra_ops;
  std::map<std::string, int64_t> &unmapped;
  const std::vector<std::string> &metric_names;              // PAPI and other counters, profile order
  const std::unordered_map<uint32_t, int32_t> &metric_slot;  // metric member -> index in metric_names
  RankTrace &tr;
  std::string program;  // from ProgramBegin

  RankReader(const Defs &d, const Comms &comms, const std::vector<std::string> &op_names,
             const std::unordered_map<std::string, uint16_t> &op_index, const std::vector<std::string> &extra_ops,
             std::map<std::string, int64_t> &unmapped, const std::vector<std::string> &metric_names,
             const std::unordered_map<uint32_t, int32_t> &metric_slot, RankTrace &tr)
      : d(d),
        comms(comms),
        op_names(op_names),
        op_index(op_index),
        extra_ops(extra_ops),
        unmapped(unmapped),
        metric_names(metric_names),
        metric_slot(metric_slot),
        tr(tr),
        counters(metric_names.size(), 0.0) {}

  std::map<std::pair<int32_t, std::string>, int32_t> children;
  std::vector<int32_t> parent{-1};
  std::vector<std::string> node_name{""};  // region tree node -> its region's name ("" for the root)
  std::vector<Frame> stack;
  int mpi_depth = 0;
  Event ev;
  bool in_call = false, call_completed = false, call_tested = false;
  std::unordered_map<uint64_t, int64_t> active;  // OTF2 request id -> our request id
  int64_t next_request = 0;
  double mpi_time = 0, sent = 0, recv = 0;
  std::vector<double> counters;
  int64_t first_t = INT64_MAX, last_t = INT64_MIN;

  int64_t ns(OTF2_TimeStamp t) const {
    const long double ticks = static_cast<long double>(t) - static_cast<long double>(d.offset);
    return static_cast<int64_t>(std::llround(ticks * 1e9L / static_cast<long double>(d.resolution)));
  }
  size_t nm() const { return kBuiltinMetricCount + metric_names.size(); }
  double &prof(int32_t node, int m) { return tr.profile[static_cast<size_t>(node) * nm() + static_cast<size_t>(m)]; }
  void seen(OTF2_TimeStamp t) {
    const int64_t v = ns(t);
    first_t = std::min(first_t, v);
    last_t = std::max(last_t, v);
  }

  int32_t node(int32_t up, const std::string &name) {
    auto [it, fresh] = children.emplace(std::make_pair(up, name), static_cast<int32_t>(tr.region_paths.size()));
    if (fresh) {
      tr.region_paths.push_back(child_region_path(tr.region_paths[static_cast<size_t>(up)], up == 0, name));
      parent.push_back(up);
      node_name.push_back(name);
      tr.profile.resize(tr.region_paths.size() * nm(), 0.0);
    }
    return it->second;
  }
  int32_t current_node() const {
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
      if (it->node >= 0) return it->node;
    return 0;
  }
  uint16_t op(const std::string &name) const { return op_index.at(name); }  // every MPI region is listed
  // A rank within communicator `c` as a world rank, or -1.
  int32_t world_rank(OTF2_CommRef c, uint32_t r, int32_t &comm_index) {
    comm_index = -1;
    auto it = comms.index.find(c);
    if (it == comms.index.end()) {
      ++unmapped["messages on undefined or intercommunicators (peer unknown)"];
      return -1;
    }
    comm_index = it->second;
    if (comms.self[static_cast<size_t>(comm_index)]) return r == 0 ? tr.rank : -1;
    const auto &m = comms.records[static_cast<size_t>(comm_index)].members;
    if (r >= m.size()) {
      ++unmapped["messages to ranks outside their communicator"];
      return -1;
    }
    return m[r];
  }
  bool call() {
    if (in_call) return true;
    ++unmapped["MPI records outside an MPI region"];
    return false;
  }

  // The call site named by an MPI call's Enter attributes: perfsift's own
  // (perfsift::call_site*, written by `perfsift export`), else any attribute of type
  // SOURCE_CODE_LOCATION (file and line). Its local id, or kNoSite.
  static constexpr uint64_t kNoSite = UINT64_MAX;
  // Per distinct set of attribute values (perfsift's location, function and module
  // references and offsets; another tool's location and the enclosing region): its id.
  std::map<std::array<uint64_t, 7>, uint64_t> site_ids;
  uint64_t call_site(const OTF2_AttributeList *attrs) {
    const uint32_t n = attrs && !d.attributes.empty() ? OTF2_AttributeList_GetNumberOfElements(attrs) : 0;
    if (n == 0) return kNoSite;
    constexpr uint64_t kNone = UINT64_MAX;
    std::array<uint64_t, 7> key{kNone, kNone, kNone, 0, 0, kNone, kNone};  // roles 1-5, any location, node
    bool found = false;
    for (uint32_t k = 0; k < n; ++k) {
      OTF2_AttributeRef id;
      OTF2_Type type;
      OTF2_AttributeValue v;
      if (OTF2_AttributeList_GetAttributeByIndex(attrs, k, &id, &type, &v) != OTF2_SUCCESS) continue;
      auto def = d.attributes.find(id);
      if (def == d.attributes.end()) continue;
      found = true;
      switch (def->second) {
        case Defs::kSiteLocation:
          key[0] = v.sourceCodeLocationRef;
          break;
        case Defs::kSiteFunction:
          key[1] = v.stringRef;
          break;
        case Defs::kSiteModule:
          key[2] = v.stringRef;
          break;
        case Defs::kSiteOffset:
          key[3] = v.uint64;
          break;
        case Defs::kSiteFnOffset:
          key[4] = v.uint64;
          break;
        case Defs::kAnyLocation:
          if (key[5] == kNone) key[5] = v.sourceCodeLocationRef;
          break;
        default:
          break;
      }
    }
    if (!found) return kNoSite;
    const bool ours = key[0] != kNone || key[1] != kNone || key[2] != kNone || key[3] || key[4];
    if (ours)
      key[5] = kNone;
    else
      key[6] = static_cast<uint64_t>(current_node());  // another tool's location: the function is the region's
    auto [it, fresh] = site_ids.emplace(key, tr.callsites.size());
    if (!fresh) return it->second;
    CallSite c;
    auto location = [&](uint64_t ref) {
      auto l = ref == kNone ? d.source_locations.end() : d.source_locations.find(static_cast<uint32_t>(ref));
      if (l == d.source_locations.end()) return;
      c.file = d.str(l->second.first);
      c.line = static_cast<int32_t>(std::min<uint32_t>(l->second.second, INT32_MAX));
    };
    location(ours ? key[0] : key[5]);
    if (key[1] != kNone) c.function = d.str(static_cast<uint32_t>(key[1]));
    if (key[2] != kNone) c.module = d.str(static_cast<uint32_t>(key[2]));
    c.offset = key[3], c.fn_offset = key[4];
    // The module names a file that the store's writer may hand to addr2line: no quotes.
    std::replace(c.module.begin(), c.module.end(), '\'', '?');
    if (c.module.empty() && c.offset == 0) {
      // A source location only (another tool): the function is the innermost enclosing
      // region (Score-P's compiler instrumentation makes one per function); the store
      // tells call sites apart by module and offset, so the offset is a hash of file and line.
      if (c.function.empty()) c.function = node_name[static_cast<size_t>(current_node())];
      uint64_t h = 1469598103934665603ull;
      for (unsigned char ch : c.file + ":" + std::to_string(c.line)) h = (h ^ ch) * 1099511628211ull;
      c.offset = h;
    }
    tr.callsites.push_back(std::move(c));
    return it->second;
  }

  void enter(OTF2_TimeStamp t, OTF2_RegionRef region, const OTF2_AttributeList *attrs) {
    seen(t);
    auto it = d.regions.find(region);
    const RegionDef *r = it == d.regions.end() ? nullptr : &it->second;
    Frame f{-1, ns(t), mpi_time, sent, recv, counters};
    if (r && r->mpi) {
      if (mpi_depth++ == 0) {
        ev = Event{};
        ev.t_enter = f.t0;
        ev.region = current_node();
        ev.op = op(r->name);
        ev.site = call_site(attrs);
        in_call = true;
        call_completed = call_tested = false;
      }
    } else {
      f.node = node(current_node(), r ? r->name : "region " + std::to_string(region));
    }
    stack.push_back(std::move(f));
  }

  void leave(OTF2_TimeStamp t) {
    seen(t);
    if (stack.empty()) {
      ++unmapped["Leave records without an Enter"];
      return;
    }
    leave_at(ns(t));
  }
  void leave_at(int64_t now) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (f.node < 0) {
      if (--mpi_depth == 0) finish_call(now);
      return;
    }
    prof(f.node, kVisits) += 1;
    const double wall = static_cast<double>(now - f.t0) * 1e-9, mpi = mpi_time - f.mpi_time;
    prof(f.node, kWall) += wall;
    prof(f.node, kCpu) += std::max(0.0, wall - mpi);
    prof(f.node, kMpiTime) += mpi;
    prof(f.node, kMpiBytesSent) += sent - f.sent;
    prof(f.node, kMpiBytesRecv) += recv - f.recv;
    for (size_t k = 0; k < counters.size(); ++k)
      prof(f.node, kBuiltinMetricCount + static_cast<int>(k)) += counters[k] - f.counters[k];
    tr.steps.push_back({f.node, -1, f.t0, now});
  }

  void finish_call(int64_t now) {
    ev.t_exit = std::max(ev.t_enter, now);
    if (call_tested && !call_completed) ev.flags |= kNoMatch;
    mpi_time += static_cast<double>(ev.t_exit - ev.t_enter) * 1e-9;
    sent += static_cast<double>(ev.bytes - ev.bytes_recv);
    recv += static_cast<double>(ev.bytes_recv);
    tr.events.push_back(ev);
    in_call = false;
  }

  int64_t event_index() const { return static_cast<int64_t>(tr.events.size()); }

  void send(uint32_t receiver, OTF2_CommRef c, uint32_t tag, uint64_t len, const uint64_t *request) {
    if (!call()) return;
    int32_t ci;
    const int32_t peer = world_rank(c, receiver, ci);
    if (ev.peer < 0) ev.peer = peer, ev.tag = static_cast<int32_t>(tag), ev.comm = ci;
    ev.bytes += static_cast<int64_t>(len);
    if (request) {
      const int64_t id = next_request++;
      active[*request] = id;
      tr.requests.push_back(
          {id, event_index(), peer, static_cast<int32_t>(tag), ci, kReqSend, static_cast<int64_t>(len)});
      if (ev.request < 0) ev.request = id;
    }
  }

  void receive(uint32_t sender, OTF2_CommRef c, uint32_t tag, uint64_t len, const uint64_t *request) {
    if (!call()) return;
    int32_t ci;
    const int32_t peer = world_rank(c, sender, ci);
    ev.bytes += static_cast<int64_t>(len);
    ev.bytes_recv += static_cast<int64_t>(len);
    const std::string &name = ev.op < op_names.size() ? op_names[ev.op] : extra_ops[ev.op - op_names.size()];
    if (request) {  // a nonblocking receive completes here
      auto it = active.find(*request);
      if (it == active.end()) {
        ++unmapped["completions of requests never started"];
        return;
      }
      complete(it->second, peer, static_cast<int32_t>(tag), static_cast<int64_t>(len), 0);
      // OTF2 does not say whom the receive was posted for: the matched source stands in.
      // (Request ids are their rows: ids count up as rows are added.)
      auto &rq = tr.requests[static_cast<size_t>(it->second)];
      if (rq.kind == kReqRecv) {
        rq.peer = peer, rq.tag = static_cast<int32_t>(tag), rq.comm = ci, rq.bytes = static_cast<int64_t>(len);
        if (rq.event < event_index()) {
          auto &posting = tr.events[static_cast<size_t>(rq.event)];
          if (posting.peer == -2) posting.peer = peer, posting.tag = rq.tag, posting.comm = ci;
        }
      }
      active.erase(it);
    } else if (name.rfind("MPI_Sendrecv", 0) == 0) {  // the receive half: a completion of no request
      tr.completions.push_back({event_index(), -1, peer, static_cast<int32_t>(tag), static_cast<int64_t>(len), 0, 0});
    } else {
      ev.peer = peer, ev.tag = static_cast<int32_t>(tag), ev.comm = ci;
    }
  }

  void complete(int64_t id, int32_t source, int32_t tag, int64_t bytes, int32_t cancelled) {
    tr.completions.push_back({event_index(), id, source, tag, bytes, cancelled, 0});
    if (ev.request < 0) ev.request = id;
    call_completed = true;
  }

  void request_posted(uint64_t request) {
    if (!call()) return;
    const int64_t id = next_request++;
    active[request] = id;
    tr.requests.push_back({id, event_index(), -2, -1, -1, kReqRecv, 0});
    if (ev.request < 0) ev.request = id, ev.peer = -2;
  }

  void request_done(uint64_t request, bool cancelled) {
    if (!call()) return;
    auto it = active.find(request);
    if (it == active.end()) {
      ++unmapped["completions of requests never started"];
      return;
    }
    complete(it->second, -1, -1, 0, cancelled ? 1 : 0);
    active.erase(it);
  }

  void collective_end(OTF2_CommRef c, uint32_t root, uint64_t sent_bytes, uint64_t recv_bytes) {
    if (!call()) return;
    int32_t ci = -1;
    auto it = comms.index.find(c);
    if (it != comms.index.end()) ci = it->second;
    ev.comm = ci;
    if (root != OTF2_UNDEFINED_UINT32 && ci >= 0) {
      int32_t unused;
      ev.peer = world_rank(c, root, unused);
    }
    ev.bytes += static_cast<int64_t>(sent_bytes + recv_bytes);
    ev.bytes_recv += static_cast<int64_t>(recv_bytes);
  }

  void metric(OTF2_MetricRef cls, uint8_t n, const OTF2_Type *types, const OTF2_MetricValue *values) {
    auto it = d.metric_classes.find(cls);
    if (it == d.metric_classes.end()) {
      ++unmapped["metric records of undefined metric classes"];
      return;
    }
    for (uint8_t k = 0; k < n && k < it->second.size(); ++k) {
      auto slot = metric_slot.find(it->second[k]);
      if (slot == metric_slot.end()) {
        ++unmapped["metric values that are not accumulated counters"];
        continue;
      }
      double v = 0;
      if (types[k] == OTF2_TYPE_UINT64)
        v = static_cast<double>(values[k].unsigned_int);
      else if (types[k] == OTF2_TYPE_INT64)
        v = static_cast<double>(values[k].signed_int);
      else
        v = values[k].floating_point;
      counters[static_cast<size_t>(slot->second)] = v;
    }
  }

  // The end of the location's records: the root region spans them; open regions close at
  // the last record (a rank that stopped early).
  void finish() {
    const bool open = !stack.empty();
    while (!stack.empty()) {
      if (in_call && mpi_depth == 1 && stack.back().node < 0) ev.flags |= kInterrupted;
      leave_at(last_t);
    }
    tr.complete = !open;
    if (first_t == INT64_MAX) first_t = last_t = 0;
    prof(0, kVisits) = 1;
    prof(0, kWall) = static_cast<double>(last_t - first_t) * 1e-9;
    prof(0, kMpiTime) = mpi_time;
    prof(0, kCpu) = std::max(0.0, prof(0, kWall) - mpi_time);
    prof(0, kMpiBytesSent) = sent;
    prof(0, kMpiBytesRecv) = recv;
    for (size_t k = 0; k < counters.size(); ++k) prof(0, kBuiltinMetricCount + static_cast<int>(k)) = counters[k];
  }
};

RankReader &rr(void *ud) { return *static_cast<RankReader *>(ud); }

#define EVT_CB(name, ...)                                                                         \
  OTF2_CallbackCode name(OTF2_LocationRef, [[maybe_unused]] OTF2_TimeStamp t, uint64_t, void *ud, \
                         [[maybe_unused]] OTF2_AttributeList *attrs, __VA_ARGS__) {               \
    RankReader &r = rr(ud);                                                                       \
    r.seen(t);
#define EVT_CB0(name)                                                                             \
  OTF2_CallbackCode name(OTF2_LocationRef, [[maybe_unused]] OTF2_TimeStamp t, uint64_t, void *ud, \
                         OTF2_AttributeList *) {                                                  \
    RankReader &r = rr(ud);                                                                       \
    r.seen(t);
#define EVT_END                 \
  return OTF2_CALLBACK_SUCCESS; \
  }

EVT_CB(ev_enter, OTF2_RegionRef region)
r.enter(t, region, attrs);
EVT_END
EVT_CB(ev_leave, OTF2_RegionRef)
r.leave(t);
EVT_END
EVT_CB(ev_send, uint32_t to, OTF2_CommRef c, uint32_t tag, uint64_t len)
r.send(to, c, tag, len, nullptr);
EVT_END
EVT_CB(ev_isend, uint32_t to, OTF2_CommRef c, uint32_t tag, uint64_t len, uint64_t req)
r.send(to, c, tag, len, &req);
EVT_END
EVT_CB(ev_isend_complete, uint64_t req)
r.request_done(req, false);
EVT_END
EVT_CB(ev_irecv_request, uint64_t req)
r.request_posted(req);
EVT_END
EVT_CB(ev_recv, uint32_t from, OTF2_CommRef c, uint32_t tag, uint64_t len)
r.receive(from, c, tag, len, nullptr);
EVT_END
EVT_CB(ev_irecv, uint32_t from, OTF2_CommRef c, uint32_t tag, uint64_t len, uint64_t req)
r.receive(from, c, tag, len, &req);
EVT_END
EVT_CB(ev_test, uint64_t)
r.call_tested = true;
EVT_END
EVT_CB(ev_cancelled, uint64_t req)
r.request_done(req, true);
EVT_END
EVT_CB0(ev_coll_begin)
EVT_END
EVT_CB(ev_coll_end, OTF2_CollectiveOp, OTF2_CommRef c, uint32_t root, uint64_t s, uint64_t rcv)
r.collective_end(c, root, s, rcv);
EVT_END
EVT_CB(ev_metric, OTF2_MetricRef cls, uint8_t n, const OTF2_Type *types, const OTF2_MetricValue *values)
r.metric(cls, n, types, values);
EVT_END
EVT_CB(ev_comm_create, OTF2_CommRef c)
auto it = r.comms.index.find(c);
if (r.in_call && it != r.comms.index.end()) r.ev.tag = it->second, r.ev.flags |= kTagIsComm;
EVT_END
EVT_CB(ev_comm_destroy, OTF2_CommRef)
EVT_END
EVT_CB(ev_program_begin, OTF2_StringRef name, uint32_t n, const OTF2_StringRef *args)
r.program = r.d.str(name);
for (uint32_t k = 0; k < n; ++k) r.program += " " + r.d.str(args[k]);
EVT_END
EVT_CB(ev_program_end, int64_t)
EVT_END

// Counts a record of an unmapped kind K under its name, whatever the record's fields.
template <class Fn, int K>
struct Count;
template <int K, class... A>
struct Count<OTF2_CallbackCode (*)(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *, OTF2_AttributeList *, A...), K> {
  static OTF2_CallbackCode fn(OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void *ud, OTF2_AttributeList *, A...) {
    ++rr(ud).unmapped[kUnmappedKinds[K]];
    rr(ud).seen(t);
    return OTF2_CALLBACK_SUCCESS;
  }
};
#define COUNT(Kind, K) OTF2_EvtReaderCallbacks_Set##Kind##Callback(cb, &Count<OTF2_EvtReaderCallback_##Kind, K>::fn)

OTF2_EvtReaderCallbacks *event_callbacks() {
  OTF2_EvtReaderCallbacks *cb = OTF2_EvtReaderCallbacks_New();
  OTF2_EvtReaderCallbacks_SetEnterCallback(cb, ev_enter);
  OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, ev_leave);
  OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, ev_send);
  OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, ev_isend);
  OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, ev_isend_complete);
  OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cb, ev_irecv_request);
  OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, ev_recv);
  OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, ev_irecv);
  OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(cb, ev_test);
  OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(cb, ev_cancelled);
  OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb, ev_coll_begin);
  OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, ev_coll_end);
  OTF2_EvtReaderCallbacks_SetMetricCallback(cb, ev_metric);
  OTF2_EvtReaderCallbacks_SetCommCreateCallback(cb, ev_comm_create);
  OTF2_EvtReaderCallbacks_SetCommDestroyCallback(cb, ev_comm_destroy);
  OTF2_EvtReaderCallbacks_SetProgramBeginCallback(cb, ev_program_begin);
  OTF2_EvtReaderCallbacks_SetProgramEndCallback(cb, ev_program_end);
  COUNT(Unknown, kUnknown);
  COUNT(BufferFlush, kFlush);
  COUNT(MeasurementOnOff, kOnOff);
  COUNT(OmpFork, kThread);
  COUNT(OmpJoin, kThread);
  COUNT(OmpAcquireLock, kThread);
  COUNT(OmpReleaseLock, kThread);
  COUNT(OmpTaskCreate, kThread);
  COUNT(OmpTaskSwitch, kThread);
  COUNT(OmpTaskComplete, kThread);
  COUNT(ParameterString, kParam);
  COUNT(ParameterInt, kParam);
  COUNT(ParameterUnsignedInt, kParam);
  COUNT(RmaWinCreate, kRma);
  COUNT(RmaWinDestroy, kRma);
  COUNT(RmaCollectiveBegin, kRma);
  COUNT(RmaCollectiveEnd, kRma);
  COUNT(RmaGroupSync, kRma);
  COUNT(RmaRequestLock, kRma);
  COUNT(RmaAcquireLock, kRma);
  COUNT(RmaTryLock, kRma);
  COUNT(RmaReleaseLock, kRma);
  COUNT(RmaSync, kRma);
  COUNT(RmaWaitChange, kRma);
  COUNT(RmaPut, kRma);
  COUNT(RmaGet, kRma);
  COUNT(RmaAtomic, kRma);
  COUNT(RmaOpCompleteBlocking, kRma);
  COUNT(RmaOpCompleteNonBlocking, kRma);
  COUNT(RmaOpTest, kRma);
  COUNT(RmaOpCompleteRemote, kRma);
  COUNT(ThreadFork, kThread);
  COUNT(ThreadJoin, kThread);
  COUNT(ThreadTeamBegin, kThread);
  COUNT(ThreadTeamEnd, kThread);
  COUNT(ThreadAcquireLock, kThread);
  COUNT(ThreadReleaseLock, kThread);
  COUNT(ThreadTaskCreate, kThread);
  COUNT(ThreadTaskSwitch, kThread);
  COUNT(ThreadTaskComplete, kThread);
  COUNT(ThreadCreate, kThread);
  COUNT(ThreadBegin, kThread);
  COUNT(ThreadWait, kThread);
  COUNT(ThreadEnd, kThread);
  COUNT(CallingContextEnter, kContext);
  COUNT(CallingContextLeave, kContext);
  COUNT(CallingContextSample, kContext);
  COUNT(IoCreateHandle, kIo);
  COUNT(IoDestroyHandle, kIo);
  COUNT(IoDuplicateHandle, kIo);
  COUNT(IoSeek, kIo);
  COUNT(IoChangeStatusFlags, kIo);
  COUNT(IoDeleteFile, kIo);
  COUNT(IoOperationBegin, kIo);
  COUNT(IoOperationTest, kIo);
  COUNT(IoOperationIssued, kIo);
  COUNT(IoOperationComplete, kIo);
  COUNT(IoOperationCancelled, kIo);
  COUNT(IoAcquireLock, kIo);
  COUNT(IoReleaseLock, kIo);
  COUNT(IoTryLock, kIo);
  COUNT(NonBlockingCollectiveRequest, kNbc);
  COUNT(NonBlockingCollectiveComplete, kNbc);
  return cb;
}

// ---------------------------------------------------------------- the archive

// The anchor file: PATH itself, or the one *.otf2 in the directory PATH.
std::string anchor_of(const std::string &path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(path + ": no such file; give the OTF2 anchor file (traces.otf2 in the Score-P experiment directory)");
  if (!fs::is_directory(path, ec)) return path;
  std::vector<std::string> found;
  for (const auto &e : fs::directory_iterator(path, ec))
    if (e.path().extension() == ".otf2" && e.is_regular_file()) found.push_back(e.path().string());
  if (found.size() != 1)
    throw Error(path + ": " + (found.empty() ? "no" : "more than one") +
                " OTF2 anchor file (*.otf2) in this directory; give the anchor file itself");
  return found.front();
}

std::string iso_time(uint64_t epoch_ns) {
  const time_t s = static_cast<time_t>(epoch_ns / 1000000000ull);
  struct tm tm {};
  gmtime_r(&s, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

// The archive's reader; closed (and the library's error printing restored) on every path.
class Reader {
 public:
  Reader(const std::string &anchor) : m_anchor(anchor) {
    m_r = OTF2_Reader_Open(anchor.c_str());
    if (!m_r) fail("not an OTF2 archive (cannot read its anchor file)", "give the .otf2 anchor file Score-P wrote");
    check(OTF2_Reader_SetSerialCollectiveCallbacks(m_r), "cannot set up the reader", "");
  }
  ~Reader() {
    if (m_r) OTF2_Reader_Close(m_r);
  }
  Reader(const Reader &) = delete;
  Reader &operator=(const Reader &) = delete;
  OTF2_Reader *get() const { return m_r; }
  const std::string &anchor() const { return m_anchor; }

  [[noreturn]] void fail(const std::string &what, const std::string &fix) const {
    std::string m = m_anchor + ": " + what + Otf2MessageCapture::quoted();
    if (!fix.empty()) m += "; " + fix;
    throw Error(m);
  }
  void check(OTF2_ErrorCode e, const std::string &what, const std::string &fix) const {
    if (e != OTF2_SUCCESS) {
      Otf2MessageCapture::quoted(e);
      fail(what, fix);
    }
  }

 private:
  Otf2MessageCapture m_messages;  // first: constructed before the reader opens, restored after it closes
  std::string m_anchor;
  OTF2_Reader *m_r = nullptr;
};

std::string stem_of(const std::string &anchor) {
  fs::path p(anchor);
  return (p.parent_path() / p.stem()).string();
}

void read_global_defs(const Reader &reader, Defs &d) {
  const std::string def_file = stem_of(reader.anchor()) + ".def";
  if (!fs::exists(def_file))
    throw Error(def_file +
                ": missing: the archive's global definitions are not there; copy the whole experiment "
                "directory (anchor file, .def file and the directory of event files)");
  OTF2_GlobalDefReader *g = OTF2_Reader_GetGlobalDefReader(reader.get());
  if (!g) reader.fail("cannot open the global definitions " + def_file, "copy the whole experiment directory");
  OTF2_GlobalDefReaderCallbacks *cb = OTF2_GlobalDefReaderCallbacks_New();
  OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, def_clock);
  OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, def_string);
  OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cb, def_node);
  OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb, def_lgroup);
  OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, def_location);
  OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, def_region);
  OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, def_group);
  OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, def_comm);
  OTF2_GlobalDefReaderCallbacks_SetInterCommCallback(cb, def_intercomm);
  OTF2_GlobalDefReaderCallbacks_SetMetricMemberCallback(cb, def_member);
  OTF2_GlobalDefReaderCallbacks_SetMetricClassCallback(cb, def_class);
  OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cb, def_attribute);
  OTF2_GlobalDefReaderCallbacks_SetSourceCodeLocationCallback(cb, def_source_location);
  const OTF2_ErrorCode e = OTF2_Reader_RegisterGlobalDefCallbacks(reader.get(), g, cb, &d);
  OTF2_GlobalDefReaderCallbacks_Delete(cb);
  reader.check(e, "cannot read the global definitions", "");
  uint64_t n = 0;
  reader.check(OTF2_Reader_ReadAllGlobalDefinitions(reader.get(), g, &n),
               "the global definitions " + def_file + " are damaged",
               "copy the archive again or re-run the measurement");
  OTF2_Reader_CloseGlobalDefReader(reader.get(), g);
}

}  // namespace

std::string Otf2Import::warning(const std::string &archive) const {
  if (unmapped.empty()) return "";
  std::string w = archive + ": not mapped:";
  bool first = true;
  for (const auto &[kind, n] : unmapped) {
    w += (first ? " " : ", ") + std::to_string(n) + " " + kind;
    first = false;
  }
  return w + " (docs/otf2.md)";
}

bool looks_like_otf2(const std::string &path) {
  std::error_code ec;
  if (fs::path(path).extension() == ".otf2") return true;
  if (!fs::is_directory(path, ec)) return false;
  for (const auto &e : fs::directory_iterator(path, ec))
    if (e.path().extension() == ".otf2") return true;
  return false;
}

Otf2Import read_otf2(const std::string &path, const std::vector<std::string> &op_names, int part, int parts) {
  const Reader reader(anchor_of(path));
  const std::string &anchor = reader.anchor();
  Defs d;
  read_global_defs(reader, d);
  Otf2Import out;
  // What the definitions lack is counted by part 0 only; each part counts its own events.
  std::map<std::string, int64_t> global_unmapped;
  if (!d.have_clock || d.resolution == 0) {
    ++global_unmapped["missing clock properties (times taken as ns)"];
    d.resolution = 1000000000ull;
  }
  RankMap ranks;
  try {
    ranks = map_ranks(d);
  } catch (const Error &e) {
    throw Error(anchor + ": " + e.what() + "; the archive is damaged: copy it again or re-run the measurement");
  }
  if (ranks.location_of.empty())
    throw Error(anchor +
                ": no MPI ranks: the archive defines no process location group; perfsift reads traces of "
                "MPI programs (Score-P with MPI measurement enabled)");
  const auto nranks = static_cast<int32_t>(ranks.location_of.size());
  parts = std::max(parts, 1);
  part = std::clamp(part, 0, parts - 1);
  // Blocks rounded up: part 0 always holds rank 0 (whose ProgramBegin names the command).
  const auto first = static_cast<int32_t>((static_cast<int64_t>(nranks) * part + parts - 1) / parts);
  const auto last = static_cast<int32_t>((static_cast<int64_t>(nranks) * (part + 1) + parts - 1) / parts);
  for (const auto &[lid, l] : d.locations)
    if (!ranks.rank_of.count(lid) && l.events > 0)
      global_unmapped["events of threads besides each rank's first (OpenMP, pthreads, GPUs)"] +=
          static_cast<int64_t>(l.events);
  const Comms comms = map_comms(d, nranks, global_unmapped);
  if (part == 0) out.unmapped = global_unmapped;

  // Counters: accumulated metric members, in definition order (named as recorded: PAPI_TOT_CYC).
  std::vector<std::string> metric_names;
  std::unordered_map<uint32_t, int32_t> metric_slot;
  {
    std::map<uint32_t, const MemberDef *> sorted;
    for (const auto &[id, m] : d.members) sorted[id] = &m;
    for (const auto &[id, m] : sorted)
      if (m->accumulated) {
        auto it = std::find(metric_names.begin(), metric_names.end(), m->name);
        metric_slot[id] = static_cast<int32_t>(it - metric_names.begin());
        if (it == metric_names.end()) metric_names.push_back(m->name);
      }
  }

  // Select and open this block's locations.
  for (int32_t r = first; r < last; ++r)
    reader.check(OTF2_Reader_SelectLocation(reader.get(), ranks.location_of[static_cast<size_t>(r)]),
                 "rank " + std::to_string(r) + "'s location is not in the archive", "the archive is damaged");
  if (first < last) {
    const bool local_defs = OTF2_Reader_OpenDefFiles(reader.get()) == OTF2_SUCCESS;
    otf2_message().clear();
    reader.check(OTF2_Reader_OpenEvtFiles(reader.get()), "cannot open the event files",
                 "copy the whole experiment directory (the directory of event files beside the anchor file)");
    for (int32_t r = first; r < last; ++r) {
      const uint64_t loc = ranks.location_of[static_cast<size_t>(r)];
      if (local_defs) {
        OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader.get(), loc);
        if (dr) {
          uint64_t n = 0;
          reader.check(OTF2_Reader_ReadAllLocalDefinitions(reader.get(), dr, &n),
                       "the local definitions of rank " + std::to_string(r) + " are damaged",
                       "copy the archive again or re-run the measurement");
          OTF2_Reader_CloseDefReader(reader.get(), dr);
        }
        otf2_message().clear();
      }
      if (!OTF2_Reader_GetEvtReader(reader.get(), loc))
        reader.fail("cannot open the event file of rank " + std::to_string(r),
                    "copy the whole experiment directory (" + stem_of(anchor) + "/" + std::to_string(loc) +
                        ".evt must be there)");
    }
    if (local_defs) OTF2_Reader_CloseDefFiles(reader.get());
  }

  // Operations: the given names, then MPI regions not among them in definition order (the
  // same list whichever ranks a process reads).
  std::unordered_map<std::string, uint16_t> op_index;
  for (size_t k = 0; k < op_names.size(); ++k) op_index.emplace(op_names[k], static_cast<uint16_t>(k));
  std::vector<std::string> extra_ops;
  {
    std::map<uint32_t, const RegionDef *> sorted;
    for (const auto &[id, rd] : d.regions) sorted[id] = &rd;
    for (const auto &[id, rd] : sorted)
      if (rd->mpi && op_index.emplace(rd->name, static_cast<uint16_t>(op_names.size() + extra_ops.size())).second)
        extra_ops.push_back(rd->name);
    if (op_names.size() + extra_ops.size() > 65535) throw Error(anchor + ": more than 65535 MPI operations");
  }
  OTF2_EvtReaderCallbacks *cb = event_callbacks();
  std::string program;
  for (int32_t r = first; r < last; ++r) {
    const uint64_t loc = ranks.location_of[static_cast<size_t>(r)];
    RankTrace tr;
    tr.rank = r;
    tr.region_paths = {kRootRegionPath};
    tr.metric_names.assign(kMetricNames.begin(), kMetricNames.end());
    tr.metric_names.insert(tr.metric_names.end(), metric_names.begin(), metric_names.end());
    tr.profile.assign(tr.metric_names.size(), 0.0);
    for (size_t c = 0; c < comms.records.size(); ++c) {
      CommRecord rec = comms.records[c];
      if (comms.self[c])
        rec.key = (rec.key ^ (static_cast<uint64_t>(r) << 32)) | 0x8000000000000000ull, rec.members = {r};
      tr.comms.push_back(std::move(rec));
    }
    RankReader rd(d, comms, op_names, op_index, extra_ops, out.unmapped, metric_names, metric_slot, tr);
    OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(reader.get(), loc);
    const OTF2_ErrorCode e = OTF2_Reader_RegisterEvtCallbacks(reader.get(), er, cb, &rd);
    uint64_t n = 0;
    const OTF2_ErrorCode re = e == OTF2_SUCCESS ? OTF2_Reader_ReadAllLocalEvents(reader.get(), er, &n) : e;
    if (re != OTF2_SUCCESS) {
      OTF2_EvtReaderCallbacks_Delete(cb);
      reader.check(re,
                   "the event file of rank " + std::to_string(r) + " (" + stem_of(anchor) + "/" + std::to_string(loc) +
                       ".evt) is truncated or damaged",
                   "copy the archive again or re-run the measurement (Score-P may have been killed while writing)");
    }
    out.events_read += static_cast<int64_t>(n);
    rd.finish();
    if (!tr.complete) out.run.truncated_ranks.push_back(r);
    if (program.empty()) program = rd.program;
    OTF2_Reader_CloseEvtReader(reader.get(), er);
    out.traces.push_back(std::move(tr));
  }
  OTF2_EvtReaderCallbacks_Delete(cb);
  if (first < last) OTF2_Reader_CloseEvtFiles(reader.get());

  // The run's facts.
  RunInfo &run = out.run;
  run.nranks = nranks;
  char *creator = nullptr;
  std::string made_by = "OTF2";
  if (OTF2_Reader_GetCreator(reader.get(), &creator) == OTF2_SUCCESS && creator) {
    if (*creator) made_by = creator;
    std::free(creator);
  }
  run.command = program.empty() ? "(OTF2 archive " + anchor + ")" : program;
  run.mpi_library = "imported from " + made_by + " archive " + fs::absolute(anchor).lexically_normal().string();
  if (d.realtime != OTF2_UNDEFINED_TIMESTAMP) {
    run.start_epoch_ns = static_cast<int64_t>(d.realtime);
    run.start_time = iso_time(d.realtime);
  }
  run.counters_recorded = metric_names;
  // Hosts: the system-tree node above each rank's location group (Score-P: class "node").
  std::vector<std::string> hosts;
  for (uint64_t loc : ranks.location_of) {
    std::string host;
    auto l = d.locations.find(loc);
    if (l != d.locations.end())
      if (auto g = d.location_groups.find(l->second.group); g != d.location_groups.end())
        for (uint32_t n = g->second.node, hops = 0; hops < 64; ++hops) {
          auto node = d.nodes.find(n);
          if (node == d.nodes.end()) break;
          if (host.empty() || d.str(node->second.cls) == "node") host = d.str(node->second.name);
          if (d.str(node->second.cls) == "node") break;
          n = node->second.parent;
        }
    if (!host.empty() && std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  for (const auto &h : hosts) run.hostname_list += (run.hostname_list.empty() ? "" : ",") + h;
  out.op_names = op_names;
  out.op_names.insert(out.op_names.end(), extra_ops.begin(), extra_ops.end());
  return out;
}

}  // namespace perfsift::io
