// A measured run (a trace store written by `perfsift collect`) as an OTF2 archive laid out
// as Score-P writes one, and as io/otf2_import.cpp reads it back: one location group per
// rank, one location per thread, the region tree as Enter/Leave of user regions, every MPI
// call as Enter/Leave of an MPI region with the MPI records inside, communicators, clock
// properties and offsets, PAPI counters as metrics. The mapping is in docs/otf2.md.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace perfsift::io {

// The store's `format` attribute ("perfsift-trace", "perfsift-results"), or "" when PATH is
// not an HDF5 file or has no such attribute. An HDF5 file that cannot be opened (truncated,
// corrupt) throws io::Error naming it and the fix.
std::string hdf5_store_format(const std::string &path);

struct Otf2Export {
  int32_t ranks = 0;
  int64_t locations = 0;                     // ranks' threads written
  int64_t calls = 0;                         // MPI calls written
  std::map<std::string, int64_t> unwritten;  // what the archive cannot hold, counted by kind
  // One line naming every kind in `unwritten` with its count; empty when all was written.
  std::string warning(const std::string &store) const;
};

// Writes the trace store STORE as DIR/traces.otf2 (with DIR/traces.def and DIR/traces/):
// into DIR.tmp-PID, renamed to DIR at the end, so DIR is whole or untouched. DIR may be a
// previous archive (replaced), or must not exist. Bad input throws io::Error: one line
// naming the file, the place and the fix.
Otf2Export write_store_otf2(const std::string &store, const std::string &dir);

}  // namespace perfsift::io
