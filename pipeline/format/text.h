// Numbers as the reports print them: seconds with a unit that fits, percentages.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "io/trace_model.h"
#include "pipeline/format/utf8.h"

namespace perfsift::pipeline {

inline std::string format_seconds(double s) {
  char b[48];
  if (std::isnan(s)) return "-";
  const double a = std::fabs(s);
  if (a >= 100)
    std::snprintf(b, sizeof b, "%.0f s", s);
  else if (a >= 1)
    std::snprintf(b, sizeof b, "%.2f s", s);
  else if (a >= 1e-3)
    std::snprintf(b, sizeof b, "%.1f ms", s * 1e3);
  else
    std::snprintf(b, sizeof b, "%.0f us", s * 1e6);
  return b;
}

inline std::string format_percent(double ratio) {
  char b[48];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * ratio);
  return b;
}

// A count with its thousands grouped: "352,954".
// A ratio (an efficiency, a fit's R², a growth factor) to two digits; `missing` where it is not finite.
inline std::string format_ratio(double x, const char *missing) {
  if (!std::isfinite(x)) return missing;
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", x);
  return b;
}

inline std::string format_count(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// Names as a terminal shows them: a name cannot move the cursor, change colours or
// reorder the line. A tab, newline and carriage return print as \t, \n and \r, other
// control bytes (C0 and DEL) and each byte of an ill-formed UTF-8 piece as \xNN, the C1
// controls (U+0080..U+009F), the line and paragraph separators (U+2028, U+2029) and the
// bidirectional controls (U+202A..U+202E, U+2066..U+2069) as \uXXXX; other text passes.
// keep_newlines leaves '\n' alone (a whole report, whose lines end in it).
inline std::string printable(std::string_view s, bool keep_newlines = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Utf8Piece p = utf8_piece(s, i);
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const uint32_t u = p.code;
    if (!p.valid) {
      for (size_t k = 0; k < p.size; ++k) {
        const auto x = static_cast<unsigned char>(s[i + k]);
        o += "\\x", o += kHex[x >> 4], o += kHex[x & 0xf];
      }
    } else if (c == '\n') {
      o += keep_newlines ? "\n" : "\\n";
    } else if (c == '\t') {
      o += "\\t";
    } else if (c == '\r') {
      o += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      o += "\\x", o += kHex[c >> 4], o += kHex[c & 0xf];
    } else if ((u >= 0x80 && u <= 0x9f) || u == 0x2028 || u == 0x2029 || (u >= 0x202a && u <= 0x202e) ||
               (u >= 0x2066 && u <= 0x2069)) {
      o += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) o += kHex[(u >> shift) & 0xf];
    } else {
      o.append(s.substr(i, p.size));
    }
    i += p.size;
  }
  return o;
}

// s as HTML text: printable (above), with the characters markup gives meaning escaped.
inline std::string html_text(std::string_view s) {
  std::string out;
  for (const char ch : printable(s)) switch (ch) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  return out;
}

// The printable form of s (above) cut to n bytes, marking the cut with '~'; a cut never
// splits a character or an escape.
inline std::string clip(const std::string &s, size_t n) {
  std::string o;
  std::vector<size_t> ends;  // where each printable piece of s ends in o
  for (size_t i = 0; i < s.size();) {
    const size_t step = utf8_piece(s, i).size;
    o += printable(std::string_view(s).substr(i, step));
    ends.push_back(o.size());
    i += step;
  }
  if (o.size() <= n) return o;
  size_t keep = 0;
  for (const size_t e : ends)
    if (e + 1 <= n) keep = e;
  return o.substr(0, keep) + "~";
}

// Words of `text` (its printable form, above) in lines of at most `width` bytes, at most
// `max_lines` of them; a cut text ends in "...". Words longer than a line are split
// between characters.
inline std::vector<std::string> wrap(const std::string &raw, size_t width, size_t max_lines) {
  const std::string text = printable(raw);
  std::vector<std::string> lines(1);
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    i = j;
    while (!word.empty()) {
      std::string &line = lines.back();
      const size_t room = width - std::min(width, line.size() + (line.empty() ? 0 : 1));
      if (word.size() <= room) {
        line += (line.empty() ? "" : " ") + word;
        word.clear();
      } else if (line.empty()) {
        const size_t cut = std::max<size_t>(1, utf8_prefix(word, width));
        line = word.substr(0, cut);
        word = word.substr(cut);
      } else {
        lines.emplace_back();
      }
      if (lines.size() > max_lines) {
        lines.pop_back();
        std::string &last = lines.back();
        last = last.substr(0, utf8_prefix(last, width - 3)) + "...";
        return lines;
      }
    }
  }
  return lines;
}

// "LAMMPS_NS::CommBrick::reverse_comm(int)" -> "CommBrick::reverse_comm".
inline std::string short_function(const std::string &f) {
  std::string s = f.substr(0, f.find('('));
  const auto last = s.rfind("::");
  if (last != std::string::npos && last > 0) {
    const auto before = s.rfind("::", last - 1);
    if (before != std::string::npos) s = s.substr(before + 2);
  }
  const auto slash = s.rfind('/');  // a module path
  if (slash != std::string::npos) s = s.substr(slash + 1);
  return s.empty() ? "?" : s;
}

// A call site in the program's terms: "x_solve (x_solve.f:212)" where the debug information
// gives the line, else "x_solve+0x1e24"; a stripped binary's by its module and the offset
// into it ("cp2k.psmp+0x1d2f3a"), so that its sites stay distinct.
inline std::string site_words(const std::string &function_or_module, const std::string &file, int64_t line,
                              uint64_t offset) {
  std::string s = short_function(function_or_module);
  if (line > 0)
    return s + " (" + file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1) + ":" +
           std::to_string(line) + ")";
  if (offset > 0) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "+0x%llx", static_cast<unsigned long long>(offset));
    s += hex;
  }
  return s;
}

// Call site `id` of the store in the program's terms (site_words); "(no call site)" when
// the store has none for it. A call made through the program's own MPI wrapper is named
// by the wrapper's caller, the wrapper after it as evidence: "solve_p (p.c:12) via reduce+0x1c".
inline std::string site_label(const std::vector<io::CallSite> &sites, uint64_t id) {
  if (id >= sites.size()) return "(no call site)";
  const io::CallSite &c = sites[id];
  std::string s = c.function.empty() ? site_words(c.module, c.file, c.line, c.offset)
                                     : site_words(c.function, c.file, c.line, c.fn_offset);
  if (!c.via.empty()) {
    const io::CallFrame &w = c.via.front();
    s += " via " +
         (w.function.empty() ? site_words(w.module, "", 0, w.offset) : site_words(w.function, "", 0, w.fn_offset));
  }
  return s;
}

}  // namespace perfsift::pipeline
