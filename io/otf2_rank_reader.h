// One MPI rank's OTF2 event records read into a RankTrace, for the importer
// (io/otf2_import.h): calls, messages, requests, collectives, regions with their profile,
// counters and call sites; records of kinds perfsift does not map are counted by kind.
// Internal to io/.
#pragma once

#include <otf2/otf2.h>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/otf2_archive.h"
#include "io/otf2_definitions.h"
#include "io/trace_model.h"

namespace perfsift::io::otf2_read {

// What every rank's records are mapped with (the same for every rank of the archive).
struct EventMapping {
  const Defs &d;
  const Comms &comms;
  const std::vector<std::string> &op_names;
  const std::unordered_map<std::string, uint16_t> &op_index;
  const std::vector<std::string> &extra_ops;                 // MPI regions beyond op_names
  const std::vector<std::string> &metric_names;              // PAPI and other counters, profile order
  const std::unordered_map<uint32_t, int32_t> &metric_slot;  // metric member -> index in metric_names
};

// The event reader's callbacks (the caller deletes them with OTF2_EvtReaderCallbacks_Delete).
OTF2_EvtReaderCallbacks *event_callbacks();

struct RankEvents {
  RankTrace trace;
  std::string program;   // from ProgramBegin, "" without one
  uint64_t records = 0;  // event records read
};

// Rank r's records from location `loc` (its event file opened), read with `callbacks`;
// records of unmapped kinds are counted in `unmapped`. A damaged event file throws
// io::Error naming it.
RankEvents read_rank_events(const Reader &reader, OTF2_EvtReaderCallbacks *callbacks, const EventMapping &m, int32_t r,
                            uint64_t loc, std::map<std::string, int64_t> &unmapped);

}  // namespace perfsift::io::otf2_read
