#include "io/raw_chunk_reader.h"

#include <hdf5.h>
#include <zlib.h>

#include <string>

#include "io/checksum.h"

namespace perfsift::io {

using namespace h5;

bool inflate_zlib(const std::vector<unsigned char> &in, unsigned char *out, size_t *out_len) {
  if (in.size() < 6) return false;
  const unsigned cmf = in[0], flg = in[1];
  if ((cmf & 0x0F) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flg) % 31 != 0 || (flg & 0x20)) return false;
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) return false;  // raw deflate: the trailer is ours to check
  zs.next_in = const_cast<unsigned char *>(in.data() + 2);
  zs.avail_in = static_cast<uInt>(in.size() - 2);
  zs.next_out = out;
  zs.avail_out = static_cast<uInt>(*out_len);
  const int rc = inflate(&zs, Z_FINISH);
  const size_t produced = zs.total_out;
  const unsigned char *tail = zs.next_in;
  const uInt tail_len = zs.avail_in;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || tail_len < 4) return false;
  const uint32_t stored = uint32_t{tail[0]} << 24 | uint32_t{tail[1]} << 16 | uint32_t{tail[2]} << 8 | tail[3];
  *out_len = produced;
  return adler32(1, out, produced) == stored;
}

ChunkIndex chunk_index(const Ctx &ck, hid_t file, const char *table, hid_t mem_type, size_t record_size) {
  ChunkIndex idx;
  const std::string name = std::string("/") + table;
  Handle ds(ck(H5Dopen2(file, table, H5P_DEFAULT), "missing dataset " + name + " (truncated store?)"), H5Dclose);
  Handle ftype(H5Dget_type(ds), H5Tclose);
  if (H5Tequal(ftype, mem_type) <= 0 || H5Tget_size(ftype) != record_size) return idx;
  Handle dcpl(H5Dget_create_plist(ds), H5Pclose);
  if (H5Pget_layout(dcpl) != H5D_CHUNKED) return idx;
  hsize_t chunk = 0;
  if (H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0 || chunk > (hsize_t{1} << 20)) return idx;
  if (H5Pget_nfilters(dcpl) != 2) return idx;
  unsigned flags = 0, cd[8];
  size_t ncd = 8;
  if (H5Pget_filter2(dcpl, 0, &flags, &ncd, cd, 0, nullptr, nullptr) != H5Z_FILTER_SHUFFLE) return idx;
  ncd = 8;
  if (H5Pget_filter2(dcpl, 1, &flags, &ncd, cd, 0, nullptr, nullptr) != H5Z_FILTER_DEFLATE) return idx;
  Handle fs(H5Dget_space(ds), H5Sclose);
  if (H5Sget_simple_extent_type(fs) == H5S_NULL) return idx;
  const hsize_t rows = space_elements(ck, fs, 1, name);
  check_claim(ck, ds, rows, record_size, name);
  hsize_t file_bytes = 0;
  H5Fget_filesize(file, &file_bytes);
  idx.chunk_rows = static_cast<int64_t>(chunk);
  idx.rows = static_cast<int64_t>(rows);
  // Every process makes the same calls: metadata reads may be collective.
  for (hsize_t off = 0; off < rows; off += chunk) {
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(ds, &off, &mask, &addr, &size) < 0 || mask != 0 || addr == HADDR_UNDEF ||
        addr > file_bytes || size > file_bytes - addr)  // a chunk inside the file
      return ChunkIndex{};
    idx.addr.push_back(static_cast<int64_t>(addr));
    idx.size.push_back(static_cast<int64_t>(size));
  }
  idx.usable = true;
  return idx;
}

}  // namespace perfsift::io
