// The trace store's fast read path: a table's chunks read with pread and decompressed by
// perfsift itself. HDF5 1.10 inflates and unshuffles serially inside H5Dread (most of a
// scan's time) and sums each chunk's Adler-32 byte by byte; reading the raw chunks lets
// every core decompress. Used when the dataset has exactly the writer's layout (our
// compound type, chunked, shuffle then deflate); otherwise the reads go through H5Dread.
// Internal to io/.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/hdf5_util.h"
#include "io/unshuffle.h"

namespace perfsift::io {

// Where each chunk of a table lies in the file.
struct ChunkIndex {
  bool usable = false;
  int64_t chunk_rows = 0, rows = 0;
  std::vector<int64_t> addr, size;
};

// Where each chunk of table `table` (records of `record_size` bytes, `mem_type` in memory)
// lies in the file; not usable unless the table has the writer's layout.
ChunkIndex chunk_index(const h5::Ctx &ck, hid_t file, const char *table, hid_t mem_type, size_t record_size);

// A zlib stream (HDF5's deflate filter) inflated into out[0, *out_len), its Adler-32
// trailer checked with io::adler32 (zlib's uncompress() spent most of its time summing
// byte by byte). False on any error: a bad header, a corrupt or short stream, a wrong sum.
bool inflate_zlib(const std::vector<unsigned char> &in, unsigned char *out, size_t *out_len);

// Chunk c of a table with the writer's layout (ChunkIndex usable) read from `fd`, inflated
// and unshuffled into `rows` (idx.chunk_rows records; `packed` and `shuffled` are reused
// buffers). False when the chunk is short, corrupt or fails its checksum.
template <class Disk>
bool read_chunk(int fd, const ChunkIndex &idx, int64_t c, std::vector<unsigned char> &packed,
                std::vector<unsigned char> &shuffled, std::vector<Disk> &rows) {
  const auto cr = static_cast<size_t>(idx.chunk_rows);
  packed.resize(static_cast<size_t>(idx.size[static_cast<size_t>(c)]));
  shuffled.resize(cr * sizeof(Disk));
  rows.resize(cr);
  size_t out_len = shuffled.size();
  const bool ok = ::pread(fd, packed.data(), packed.size(), idx.addr[static_cast<size_t>(c)]) ==
                      static_cast<ssize_t>(packed.size()) &&
                  inflate_zlib(packed, shuffled.data(), &out_len) && out_len == shuffled.size();
  if (ok) unshuffle<sizeof(Disk)>(shuffled.data(), reinterpret_cast<unsigned char *>(rows.data()), cr);
  return ok;
}

}  // namespace perfsift::io
