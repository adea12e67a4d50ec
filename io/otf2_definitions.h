// An OTF2 archive's global definitions as the importer needs them (io/otf2_import.h):
// clock, strings, system tree, locations, regions, groups, communicators, metrics and
// call-site attributes; then which location is which MPI rank, and the communicators as
// the trace store keeps them. Internal to io/.
#pragma once

#include <otf2/otf2.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/otf2_archive.h"
#include "io/trace_model.h"

namespace perfsift::io::otf2_read {

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

// Reads the archive's global definitions (the .def file beside the anchor) into `d`.
void read_global_defs(const Reader &reader, Defs &d);

// Which location is which rank: Score-P's COMM_LOCATIONS group lists MPI_COMM_WORLD's
// locations in rank order; without it, process location groups in id order, each
// represented by its first location.
struct RankMap {
  std::vector<uint64_t> location_of;  // rank -> location
  std::unordered_map<uint64_t, int32_t> rank_of;
};

RankMap map_ranks(const Defs &d);

// Communicators as the store keeps them: MPI_COMM_WORLD first (one that holds every rank,
// or one made up when the archive defines none), then the others in definition order.
struct Comms {
  std::vector<CommRecord> records;              // self communicators: members filled per rank
  std::vector<bool> self;                       // MPI_COMM_SELF-like (one member: the rank itself)
  std::unordered_map<uint32_t, int32_t> index;  // OTF2 comm -> index
};

// Communicators that cannot be kept are counted in `unmapped`.
Comms map_comms(const Defs &d, int32_t nranks, std::map<std::string, int64_t> &unmapped);

}  // namespace perfsift::io::otf2_read
