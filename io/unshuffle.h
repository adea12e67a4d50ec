// Undoing HDF5's shuffle filter, the step after inflating a chunk of the trace store
// (io/raw_chunk_reader.h): SSE2 where the build has it, a byte loop otherwise and for the
// last rows. Internal to io/.
#pragma once

#include <algorithm>
#include <cstddef>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace perfsift::io {

#if defined(__SSE2__)
// Rows x[0..7] of 8 bytes each (the low halves) transposed into 8 rows of E bytes at dst.
inline void transpose_8x8(const __m128i *x, unsigned char *dst, size_t E) {
  const __m128i a0 = _mm_unpacklo_epi8(x[0], x[1]), a1 = _mm_unpacklo_epi8(x[2], x[3]);
  const __m128i a2 = _mm_unpacklo_epi8(x[4], x[5]), a3 = _mm_unpacklo_epi8(x[6], x[7]);
  const __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
  const __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
  const __m128i c[4] = {_mm_unpacklo_epi32(b0, b2), _mm_unpackhi_epi32(b0, b2), _mm_unpacklo_epi32(b1, b3),
                        _mm_unpackhi_epi32(b1, b3)};
  for (size_t k = 0; k < 4; ++k) {
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + 2 * k * E), c[k]);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + (2 * k + 1) * E), _mm_unpackhi_epi64(c[k], c[k]));
  }
}
#endif

// Undoes HDF5's shuffle filter for n rows of E bytes: byte j of every row is stored
// contiguously (src[j * n + i]). 8 byte streams x 16 rows are transposed in SSE2 registers,
// several times faster than HDF5's byte loop. The rows go in blocks of 64: each stream's
// cache line is used whole before the next block, as the E streams lie n bytes apart (the
// writer's chunks make that a power of two: the streams share cache sets, and a line
// fetched again for every 16 rows was most of the time).
template <size_t E>
void unshuffle(const unsigned char *src, unsigned char *dst, size_t n) {
  static_assert(E % 8 == 0, "rows are whole 8-byte words");
  size_t i = 0;
#if defined(__SSE2__)
  constexpr size_t kBlockRows = 64;
  const size_t whole = n / 16 * 16;
  for (size_t block = 0; block < whole; block += kBlockRows) {
    const size_t block_end = std::min(whole, block + kBlockRows);
    for (size_t j = 0; j < E; j += 8)
      for (size_t r0 = block; r0 < block_end; r0 += 16) {
        __m128i lo[8], hi[8];
        for (size_t s = 0; s < 8; ++s) {
          lo[s] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + (j + s) * n + r0));
          hi[s] = _mm_unpackhi_epi64(lo[s], lo[s]);
        }
        transpose_8x8(lo, dst + r0 * E + j, E);
        transpose_8x8(hi, dst + (r0 + 8) * E + j, E);
      }
  }
  i = whole;
#endif
  for (; i < n; ++i)
    for (size_t j = 0; j < E; ++j) dst[i * E + j] = src[j * n + i];
}

}  // namespace perfsift::io
