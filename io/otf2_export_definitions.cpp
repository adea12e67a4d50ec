// The OTF2 export's definitions (io/otf2_export.h): written after the events, from what
// writing them gathered (io/otf2_export_plan.h).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "io/otf2_export_plan.h"

namespace perfsift::io::otf2_write {

namespace {

const SiteAttributeDef kSiteAttributeDefs[kSiteAttrs] = {
    {"perfsift::call_site", "source file and line of the MPI call", OTF2_TYPE_SOURCE_CODE_LOCATION},
    {"perfsift::call_site_function", "function that made the MPI call", OTF2_TYPE_STRING},
    {"perfsift::call_site_module", "executable or shared object that made the MPI call", OTF2_TYPE_STRING},
    {"perfsift::call_site_offset", "return address of the MPI call relative to the module's load base",
     OTF2_TYPE_UINT64},
    {"perfsift::call_site_function_offset", "return address of the MPI call relative to the function's start",
     OTF2_TYPE_UINT64},
};

// Global strings, numbered in the order they are written.
struct Strings {
  const Writer &wr;
  OTF2_GlobalDefWriter *g;
  uint32_t next = 0;
  uint32_t operator()(const std::string &s) {
    wr.ok(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()), "writing a String");
    return next++;
  }
};

// Local definitions: the clock offsets of each location.
void write_clock_offsets(const Writer &wr, const Plan &p) {
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
}

// Call sites: their attributes and source code locations.
void write_site_definitions(const Writer &wr, OTF2_GlobalDefWriter *g, Strings &str, const Plan &p) {
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
}

// The system tree: the machine, a node per host, the ranks below their host; then the
// locations.
void write_system_tree(const Writer &wr, OTF2_GlobalDefWriter *g, Strings &str, const Plan &p) {
  const RunInfo &run = p.st.run();
  const int32_t P = p.st.nranks();
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
  // Each rank below its own host where the store names it (/rank_hosts), else in blocks.
  const size_t per_host = (static_cast<size_t>(std::max(P, 1)) + hosts.size() - 1) / hosts.size();
  const auto &placed = run.rank_hosts;
  const bool named = placed.size() == static_cast<size_t>(P) &&
                     std::all_of(placed.begin(), placed.end(),
                                 [&](int32_t h) { return h >= 0 && static_cast<size_t>(h) < hosts.size(); });
  for (int32_t r = 0; r < P; ++r) {
    const size_t host = named ? static_cast<size_t>(placed[static_cast<size_t>(r)]) : static_cast<size_t>(r) / per_host;
    wr.ok(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<uint32_t>(r), str("MPI Rank " + std::to_string(r)),
                                                  OTF2_LOCATION_GROUP_TYPE_PROCESS, static_cast<uint32_t>(1 + host),
                                                  OTF2_UNDEFINED_LOCATION_GROUP),
          "writing a LocationGroup");
  }
  for (const auto &l : p.locations)
    wr.ok(OTF2_GlobalDefWriter_WriteLocation(
              g, l.id, str(l.thread == 0 ? "Master thread" : "Pthread thread " + std::to_string(l.thread)),
              OTF2_LOCATION_TYPE_CPU_THREAD, l.events, static_cast<uint32_t>(l.rank)),
          "writing a Location");
}

// Regions: user regions by name, then one MPI region per operation.
void write_regions(const Writer &wr, OTF2_GlobalDefWriter *g, Strings &str, const Plan &p, uint32_t empty) {
  const TraceStore &st = p.st;
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
}

// Groups and communicators: MPI_COMM_WORLD's locations in rank order, then one group per
// distinct member list (world ranks), one communicator per store communicator.
void write_comms(const Writer &wr, OTF2_GlobalDefWriter *g, Strings &str, const Plan &p, uint32_t empty) {
  const TraceStore &st = p.st;
  const int32_t P = st.nranks();
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
}

// Counters: accumulated PAPI members of one synchronous metric class.
void write_counters(const Writer &wr, OTF2_GlobalDefWriter *g, Strings &str, const Plan &p) {
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
}

}  // namespace

void write_definitions(const Writer &wr, const Plan &p) {
  const RunInfo &run = p.st.run();
  write_clock_offsets(wr, p);
  OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(wr.get());
  if (!g) wr.ok(OTF2_ERROR_INVALID, "opening the global definitions");
  wr.ok(
      OTF2_GlobalDefWriter_WriteClockProperties(
          g, 1000000000, static_cast<uint64_t>(p.start), static_cast<uint64_t>(std::max<int64_t>(0, p.t_max - p.start)),
          run.start_epoch_ns > 0 ? static_cast<uint64_t>(run.start_epoch_ns) : OTF2_UNDEFINED_TIMESTAMP),
      "writing the ClockProperties");
  Strings str{wr, g};
  const uint32_t empty = str("");
  str(run.command);  // kCommandString: ProgramBegin's name (the whole command line, no separate arguments)
  for (const auto &s : p.site_strings) str(s);  // kSiteStrings...
  write_site_definitions(wr, g, str, p);
  write_system_tree(wr, g, str, p);
  write_regions(wr, g, str, p, empty);
  write_comms(wr, g, str, p, empty);
  write_counters(wr, g, str, p);
  wr.ok(OTF2_Archive_CloseGlobalDefWriter(wr.get(), g), "closing the global definitions");
}

}  // namespace perfsift::io::otf2_write
