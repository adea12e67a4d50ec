#include "io/otf2_definitions.h"

#include <filesystem>

namespace perfsift::io::otf2_read {

namespace fs = std::filesystem;

namespace {

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

}  // namespace

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

}  // namespace perfsift::io::otf2_read
