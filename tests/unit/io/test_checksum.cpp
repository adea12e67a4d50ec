#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <vector>

#include "io/checksum.h"

TEST(Adler32, MatchesZlibAtEverySizeAndStart) {
  // Block edges (16-byte steps, 5552-byte blocks), all-0xFF bytes (the largest sums),
  // random bytes, and running on from a previous value.
  std::mt19937_64 rng(7);
  for (const size_t n : {0, 1, 15, 16, 17, 31, 32, 100, 5535, 5536, 5551, 5552, 5553, 11104, 65536, 1048583}) {
    for (const int fill : {0, 1}) {
      std::vector<unsigned char> b(n);
      for (auto &x : b) x = fill ? 0xFF : static_cast<unsigned char>(rng());
      for (const uint32_t start : {1u, 0xFFF0FFF0u, static_cast<uint32_t>(rng() % 65521) << 16 | 17u}) {
        // zlib answers 1 for no buffer at all; no bytes leave the sum as it was.
        const uint32_t want = n == 0 ? start : static_cast<uint32_t>(::adler32(start, b.data(), static_cast<uInt>(n)));
        EXPECT_EQ(perfsift::io::adler32(start, b.data(), n), want)
            << "size " << n << " fill " << fill << " start " << start;
      }
    }
  }
}
