// io::unshuffle (the raw-chunk reader's undoing of HDF5's shuffle filter) against the
// definition, byte for byte: for every record size the trace store uses, and row counts
// around the SSE2 path's 16-row groups and 64-row blocks, where its byte loop takes over.
#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <vector>

#include "io/unshuffle.h"

namespace {

using perfsift::io::unshuffle;

// Byte j of row i lies at src[j * n + i] (HDF5's shuffle filter, undone one byte at a time).
std::vector<unsigned char> by_definition(const std::vector<unsigned char> &src, size_t n, size_t E) {
  std::vector<unsigned char> dst(n * E);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < E; ++j) dst[i * E + j] = src[j * n + i];
  return dst;
}

template <size_t E>
void check_rows(size_t n) {
  std::mt19937 gen(static_cast<unsigned>(n * 131 + E));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<unsigned char> src(n * E);
  for (auto &b : src) b = static_cast<unsigned char>(byte(gen));
  std::vector<unsigned char> dst(n * E, 0xAA);
  unshuffle<E>(src.data(), dst.data(), n);
  EXPECT_EQ(dst, by_definition(src, n, E)) << E << "-byte rows, " << n << " rows";
}

template <size_t E>
void check_sizes() {
  for (size_t n : {size_t{1}, size_t{7}, size_t{15}, size_t{16}, size_t{17}, size_t{63}, size_t{64}, size_t{65},
                   size_t{129}, size_t{1000}, size_t{65536}})
    check_rows<E>(n);
}

}  // namespace

TEST(Unshuffle, MatchesTheDefinitionForEveryRecordSize) {
  check_sizes<72>();  // events
  check_sizes<48>();  // requests
  check_sizes<40>();  // completions
  check_sizes<32>();  // steps
  check_sizes<8>();
}
