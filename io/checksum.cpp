#include "io/checksum.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <vector>

#include "io/trace_store.h"

namespace perfsift::io {

namespace {
constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
inline uint64_t mix(uint64_t h, uint64_t w) {
  h ^= w * kMul;
  h = (h << 27 | h >> 37) * 0xC2B2AE3D27D4EB4Full;
  return h;
}
inline uint64_t finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 33);
}
}  // namespace

int64_t file_size(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
  std::fseek(f, 0, SEEK_END);
  const int64_t n = std::ftell(f);
  std::fclose(f);
  return n;
}

uint64_t hash_block(const std::string &path, int64_t block) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
  std::fseek(f, block * kChecksumBlockBytes, SEEK_SET);
  std::vector<uint64_t> buf(1 << 17);  // 1 MiB
  uint64_t h = static_cast<uint64_t>(block) * kMul;
  int64_t left = kChecksumBlockBytes;
  while (left > 0) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buf.size() * 8)));
    std::memset(buf.data(), 0, buf.size() * 8);
    const size_t got = std::fread(buf.data(), 1, want, f);
    for (size_t i = 0; i < (got + 7) / 8; ++i) h = mix(h, buf[i]);
    h = mix(h, got);
    if (got < want) break;
    left -= static_cast<int64_t>(got);
  }
  std::fclose(f);
  return finish(h);
}

uint64_t combine_block_hashes(const uint64_t *hashes, int64_t n, int64_t size) {
  uint64_t h = mix(0, static_cast<uint64_t>(size));
  for (int64_t i = 0; i < n; ++i) h = mix(h, hashes[i]);
  return finish(h);
}

std::string format_checksum(uint64_t h) {
  char b[40];
  std::snprintf(b, sizeof b, "blockhash64:%016llx", static_cast<unsigned long long>(h));
  return b;
}

}  // namespace perfsift::io
