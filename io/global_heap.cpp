#include "io/global_heap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace perfsift::io::h5 {

namespace {

using Range = std::pair<uint64_t, uint64_t>;  // [first byte, end)

// A chunked dataset's chunks, found by coordinate (a B-tree lookup each). None when the
// layout claims more chunks than could be real.
void add_chunks(hid_t ds, std::vector<Range> &out) {
  const hid_t dcpl = H5Dget_create_plist(ds), space = H5Dget_space(ds);
  hsize_t chunk[H5S_MAX_RANK], dims[H5S_MAX_RANK];
  const int rank = dcpl < 0 || H5Pget_layout(dcpl) != H5D_CHUNKED ? -1 : H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk);
  if (rank > 0 && space >= 0 && H5Sget_simple_extent_dims(space, dims, nullptr) == rank) {
    hsize_t count[H5S_MAX_RANK], total = 1;
    for (int d = 0; d < rank && total; ++d) {
      count[d] = chunk[d] ? (dims[d] + chunk[d] - 1) / chunk[d] : 0;
      total = count[d] && total <= (hsize_t{1} << 24) / count[d] ? total * count[d] : 0;
    }
    hsize_t at[H5S_MAX_RANK] = {};
    for (hsize_t n = 0; n < total; ++n) {
      hsize_t offset[H5S_MAX_RANK], bytes = 0;
      haddr_t addr = HADDR_UNDEF;
      unsigned filters = 0;
      for (int d = 0; d < rank; ++d) offset[d] = at[d] * chunk[d];
      if (H5Dget_chunk_info_by_coord(ds, offset, &filters, &addr, &bytes) >= 0 && addr != HADDR_UNDEF && bytes)
        out.emplace_back(addr, addr + bytes);
      for (int d = rank - 1; d >= 0 && ++at[d] == count[d]; --d) at[d] = 0;  // the next coordinate
    }
  }
  if (space >= 0) H5Sclose(space);
  if (dcpl >= 0) H5Pclose(dcpl);
}

// The bytes of every dataset's raw data (contiguous, or its chunks), sorted and merged.
// Compact data lives in the object header and is searched with the metadata.
std::vector<Range> raw_data_ranges(hid_t file, uint64_t file_bytes) {
  std::vector<Range> ranges;
  auto visit = [](hid_t root, const char *name, const H5O_info_t *info, void *out) -> herr_t {
    if (info->type != H5O_TYPE_DATASET) return 0;
    const hid_t ds = H5Dopen2(root, name, H5P_DEFAULT);
    if (ds < 0) return 0;
    auto &ranges = *static_cast<std::vector<Range> *>(out);
    const haddr_t at = H5Dget_offset(ds);
    const hsize_t bytes = H5Dget_storage_size(ds);
    if (at != HADDR_UNDEF && bytes > 0)
      ranges.emplace_back(at, at + bytes);
    else
      add_chunks(ds, ranges);
    H5Dclose(ds);
    return 0;
  };
  if (H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, visit, &ranges, H5O_INFO_BASIC) < 0) ranges.clear();
  // A damaged layout may claim bytes past the end: those are not skipped.
  std::erase_if(ranges, [&](const Range &r) { return r.first >= r.second || r.second > file_bytes; });
  std::sort(ranges.begin(), ranges.end());
  std::vector<Range> merged;
  for (const Range &r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

// One collection ("GCOL", version 1, its size, then objects of a 16-byte header and their
// data padded to 8 bytes; index 0 is the free space) at byte `at`.
std::string check_collection(const unsigned char *b, uint64_t bytes, uint64_t at) {
  auto u64 = [&](uint64_t p) {
    uint64_t v = 0;
    std::memcpy(&v, b + p, 8);
    return v;
  };
  if (at + 16 > bytes) return "";
  const uint64_t size = u64(at + 8);
  if (size < 16 || size > bytes - at)
    return "a global heap collection at byte " + std::to_string(at) + " claims " + std::to_string(size) + " bytes";
  for (uint64_t p = at + 16; p + 16 <= at + size;) {
    const uint16_t index = static_cast<uint16_t>(b[p] | (b[p + 1] << 8));
    const uint64_t object = u64(p + 8);
    if (index == 0) break;  // the free space: the rest
    if (object > size || p + 16 + (object + 7) / 8 * 8 > at + size)
      return "global heap object " + std::to_string(index) + " at byte " + std::to_string(p) + " claims " +
             std::to_string(object) + " bytes, past its collection";
    p += 16 + (object + 7) / 8 * 8;
  }
  return "";
}

}  // namespace

std::string damaged_global_heap(const std::string &path, hid_t file) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return "";  // HDF5 already opened it; its own reads say why
  struct stat st {};
  const uint64_t bytes = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  void *map = bytes ? ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) return "";
  const auto *b = static_cast<const unsigned char *>(map);
  static constexpr char kSignature[] = "GCOL\1\0\0\0";
  std::string bad;
  // Search the gaps between raw data (the map pages in only what is touched).
  uint64_t from = 0;
  std::vector<Range> raw = raw_data_ranges(file, bytes);
  raw.emplace_back(bytes, bytes);
  for (const Range &r : raw) {
    const uint64_t to = std::min<uint64_t>(r.first + 7, bytes);  // a signature may start just before raw data
    for (uint64_t at = from; at < to && bad.empty();) {
      const void *hit = ::memmem(b + at, to - at, kSignature, 8);
      if (!hit) break;
      const uint64_t found = static_cast<uint64_t>(static_cast<const unsigned char *>(hit) - b);
      bad = check_collection(b, bytes, found);
      at = found + 1;
    }
    if (!bad.empty()) break;
    from = std::max(from, r.second);
  }
  ::munmap(map, bytes);
  return bad;
}

}  // namespace perfsift::io::h5
