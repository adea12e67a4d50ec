// UTF-8 as the reports read names: a name is any bytes (a region path, a function from
// the debug information, a command line); a report cuts them into well-formed code points
// and ill-formed pieces, as the Unicode standard's "maximal subpart" practice does (the
// practice of Python's and the browsers' decoders).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace perfsift::pipeline {

struct Utf8Piece {
  size_t size = 0;     // bytes, at least 1
  bool valid = false;  // a well-formed sequence; else an ill-formed piece (one U+FFFD)
  uint32_t code = 0;   // the code point when valid
};

// The piece at s[i] (i < s.size()): a well-formed sequence (Unicode Table 3-7: no
// overlong forms, no surrogates, nothing above U+10FFFF), else the longest start of one
// (the maximal subpart), else the single byte.
inline Utf8Piece utf8_piece(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return {1, true, c};
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  uint32_t code = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    need = 1, code = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    need = 2, code = c & 0x0f;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    need = 3, code = c & 0x07;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return {1, false, 0};  // a continuation byte, C0, C1 or F5..FF
  }
  size_t k = 1;
  for (; k <= need && i + k < s.size(); ++k) {
    const unsigned char t = b(i + k);
    if (t < (k == 1 ? lo : 0x80) || t > (k == 1 ? hi : 0xbf)) break;
    code = (code << 6) | (t & 0x3f);
  }
  if (k <= need) return {k, false, 0};
  return {k, true, code};
}

// The longest prefix of s of at most n bytes that does not cut a well-formed sequence.
inline size_t utf8_prefix(std::string_view s, size_t n) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t next = i + utf8_piece(s, i).size;
    if (next > n) break;
    i = next;
  }
  return i;
}

}  // namespace perfsift::pipeline
