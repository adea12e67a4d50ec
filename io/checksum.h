// A file checksum computed in parallel: the file is cut into fixed 64 MiB blocks,
// each hashed on its own (any process may take any block), and the block hashes are
// hashed in order. The value depends only on the bytes, not on who computed what.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace perfsift::io {

inline constexpr int64_t kChecksumBlockBytes = int64_t{64} << 20;
inline constexpr const char *kChecksumAlgorithm =
    "blockhash64: 64-bit multiply-xorshift hash of each 64 MiB block, then of the block hashes";

int64_t file_size(const std::string &path);                   // throws io::Error
uint64_t hash_block(const std::string &path, int64_t block);  // throws io::Error
uint64_t combine_block_hashes(const uint64_t *hashes, int64_t n, int64_t file_size);
std::string format_checksum(uint64_t h);  // "blockhash64:0123456789abcdef"

// zlib's Adler-32 of n more bytes (start from 1), the same value as zlib's adler32() but
// 16 bytes at a time: checking the events' inflated chunks with zlib's byte loop was a
// tenth of reading a store.
uint32_t adler32(uint32_t adler, const unsigned char *data, size_t n);

}  // namespace perfsift::io
