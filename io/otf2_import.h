// OTF2 archives (as Score-P writes them) read into the trace store's in-memory form:
// one RankTrace per MPI rank, ready for write_trace_store. The mapping, and what is not
// mapped, is in docs/otf2.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::io {

struct Otf2Import {
  RunInfo run;
  std::vector<RankTrace> traces;            // the part's ranks, in rank order
  std::vector<std::string> op_names;        // the given names, then MPI regions not among them
  std::map<std::string, int64_t> unmapped;  // what could not be mapped, counted by kind
  int64_t events_read = 0;                  // OTF2 event records read (all locations read)
  // One line naming every kind in `unmapped` with its count; empty when all was mapped.
  std::string warning(const std::string &archive) const;
};

// Whether PATH names an OTF2 archive: an anchor file (*.otf2) or a directory holding one.
bool looks_like_otf2(const std::string &path);

// Reads the archive whose anchor file (or directory holding exactly one *.otf2) is
// `path`: its definitions, and the events of part `part` of `parts` contiguous blocks of
// ranks (all by default: a parallel import reads one block per process; `unmapped` then
// counts the definitions in part 0 and each part's own events, to be summed). MPI regions
// are named by `op_names` where listed, then in definition order: every part has the same
// `op_names`. A damaged archive throws io::Error naming the file and the fix.
Otf2Import read_otf2(const std::string &path, const std::vector<std::string> &op_names, int part = 0, int parts = 1);

}  // namespace perfsift::io
