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

// One dataset's raw data bytes (contiguous, or its chunks).
void add_dataset(hid_t ds, std::vector<Range> &ranges) {
  const haddr_t at = H5Dget_offset(ds);
  const hsize_t bytes = H5Dget_storage_size(ds);
  if (at != HADDR_UNDEF && bytes > 0)
    ranges.emplace_back(at, at + bytes);
  else
    add_chunks(ds, ranges);
}

// Every dataset under `group`, link by link (H5Literate), each group entered once and
// at most 32 deep. Not H5Ovisit2: on a damaged file HDF5 1.10 dereferences a missing link
// name while building the paths it visits; here a link without a name is skipped.
void add_group(hid_t group, std::vector<Range> &ranges, std::vector<haddr_t> &seen, int depth) {
  if (depth > 32) return;
  struct Walk {
    std::vector<Range> *ranges;
    std::vector<haddr_t> *seen;
    int depth;
  } walk{&ranges, &seen, depth};
  auto link = [](hid_t g, const char *name, const H5L_info_t *info, void *data) -> herr_t {
    if (!name || !info || info->type != H5L_TYPE_HARD) return 0;
    auto &w = *static_cast<Walk *>(data);
    const haddr_t addr = info->u.address;
    if (std::find(w.seen->begin(), w.seen->end(), addr) != w.seen->end()) return 0;
    w.seen->push_back(addr);
    const hid_t obj = H5Oopen_by_addr(g, addr);  // not by name: no second look-up of a damaged link
    if (obj < 0) return 0;
    const H5I_type_t type = H5Iget_type(obj);
    if (type == H5I_DATASET) add_dataset(obj, *w.ranges);
    if (type == H5I_GROUP) add_group(obj, *w.ranges, *w.seen, w.depth + 1);
    H5Oclose(obj);
    return 0;
  };
  H5Literate(group, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, link, &walk);
}

// The bytes of every dataset's raw data, sorted and merged. Compact data lives in the
// object header and is searched with the metadata.
std::vector<Range> raw_data_ranges(hid_t file, uint64_t file_bytes) {
  std::vector<Range> ranges;
  std::vector<haddr_t> seen;
  const hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
  if (root >= 0) {
    add_group(root, ranges, seen, 0);
    H5Gclose(root);
  }
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
