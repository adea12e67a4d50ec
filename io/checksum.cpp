#include "io/checksum.h"

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

uint32_t adler32(uint32_t adler, const unsigned char *data, size_t n) {
  constexpr uint64_t kBase = 65521;
  // Bytes per block: the sums stay in their lanes (the 32-bit weighted ones below 2^32)
  // and the block's totals in 64 bits before the modulo.
  constexpr size_t kBlock = 5552 / 16 * 16;
  uint64_t a = adler & 0xFFFF, b = adler >> 16;
  while (n >= 16) {
    const size_t len = std::min(n, kBlock) / 16 * 16;
#if defined(__SSE2__)
    // Over k chunks of 16 bytes from (a, b): a gains every byte; b gains 16k a, 16 times
    // the sum of all chunks before each chunk, and each chunk's bytes weighted 16 .. 1.
    const __m128i zero = _mm_setzero_si128();
    const __m128i w_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9), w_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
    __m128i sum = zero, before = zero, weighted = zero;
    for (size_t i = 0; i < len; i += 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(data + i));
      before = _mm_add_epi64(before, sum);
      sum = _mm_add_epi64(sum, _mm_sad_epu8(x, zero));
      weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpacklo_epi8(x, zero), w_lo));
      weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpackhi_epi8(x, zero), w_hi));
    }
    alignas(16) uint64_t s64[2], p64[2];
    alignas(16) uint32_t w32[4];
    _mm_store_si128(reinterpret_cast<__m128i *>(s64), sum);
    _mm_store_si128(reinterpret_cast<__m128i *>(p64), before);
    _mm_store_si128(reinterpret_cast<__m128i *>(w32), weighted);
    const uint64_t bytes = s64[0] + s64[1];
    b += len * a + 16 * (p64[0] + p64[1]) + (uint64_t{w32[0]} + w32[1] + w32[2] + w32[3]);
    a += bytes;
#else
    for (size_t i = 0; i < len; ++i) b += a += data[i];
#endif
    a %= kBase;
    b %= kBase;
    data += len;
    n -= len;
  }
  for (size_t i = 0; i < n; ++i) b += a += data[i];
  return static_cast<uint32_t>((b % kBase) << 16 | (a % kBase));
}

}  // namespace perfsift::io
