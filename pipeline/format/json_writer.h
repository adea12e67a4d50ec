// A small streaming JSON writer for reports (pretty-printed, deterministic: numbers
// in shortest round-trip form, NaN and infinities as null).
//
// Strings are names a program chose, any bytes: the output is valid UTF-8 JSON whatever
// they hold. Well-formed UTF-8 passes through; each ill-formed piece (utf8.h: the maximal
// subpart, as Python's errors="replace" and browsers cut them) becomes U+FFFD; control
// characters are escaped (\n, \t, \r, \b, \f, else \u00XX, and DEL as \u007f), and
// U+2028 and U+2029 as \u2028 and \u2029 (line ends to JavaScript before ES2019). In the
// HTML-safe form '<', '>' and '&' are escaped too (\u003c, \u003e, \u0026): the text can
// sit in a <script> element, where "</script" or "<!--" would otherwise end or change it.
#pragma once

#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/format/utf8.h"

namespace perfsift::pipeline {

class JsonWriter {
 public:
  // compact: no newlines or indentation, HTML-safe (data embedded in a page).
  explicit JsonWriter(bool compact = false) : m_compact(compact), m_html_safe(compact) {}
  JsonWriter(bool compact, bool html_safe) : m_compact(compact), m_html_safe(html_safe) {}
  JsonWriter &begin_object() { return open('{'); }
  JsonWriter &end_object() { return close('}'); }
  JsonWriter &begin_array() { return open('['); }
  JsonWriter &end_array() { return close(']'); }
  JsonWriter &key(const std::string &k) {
    item();
    quote(k);
    m_out += m_compact ? ":" : ": ";
    m_after_key = true;
    return *this;
  }
  JsonWriter &value(const std::string &v) {
    item();
    quote(v);
    return *this;
  }
  JsonWriter &value(const char *v) { return value(std::string(v)); }
  JsonWriter &value(bool v) {
    item();
    m_out += v ? "true" : "false";
    return *this;
  }
  JsonWriter &value(int64_t v) {
    item();
    m_out += std::to_string(v);
    return *this;
  }
  JsonWriter &value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter &value(double v) {
    item();
    if (!std::isfinite(v)) {
      m_out += "null";
      return *this;
    }
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    m_out.append(buf, r.ptr);
    return *this;
  }
  JsonWriter &null() {
    item();
    m_out += "null";
    return *this;
  }
  template <class T>
  JsonWriter &values(const std::vector<T> &v) {
    begin_array();
    m_inline = true;
    for (const auto &x : v) value(x);
    end_array();
    m_inline = false;
    return *this;
  }
  std::string take() { return std::move(m_out) + "\n"; }

 private:
  JsonWriter &open(char c) {
    item();
    m_out += c;
    m_first.push_back(true);
    return *this;
  }
  JsonWriter &close(char c) {
    const bool empty = m_first.back();
    m_first.pop_back();
    if (!empty && !m_inline) newline();
    m_out += c;
    return *this;
  }
  void item() {
    if (m_after_key) {
      m_after_key = false;
      return;
    }
    if (m_first.empty()) return;
    if (!m_first.back()) m_out += m_inline && !m_compact ? ", " : ",";
    m_first.back() = false;
    if (!m_inline) newline();
  }
  void newline() {
    if (m_compact) return;
    m_out += '\n';
    m_out.append(2 * m_first.size(), ' ');
  }
  void quote(std::string_view s) {
    m_out += '"';
    m_out += escape(s, m_html_safe);
    m_out += '"';
  }

 public:
  // The inside of a JSON string holding s (without the quotes).
  static std::string escape(std::string_view s, bool html_safe = false) {
    std::string o;
    o.reserve(s.size() + 2);
    for (size_t i = 0; i < s.size();) {
      const Utf8Piece p = utf8_piece(s, i);
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (!p.valid) {
        o += "\xEF\xBF\xBD";  // U+FFFD
      } else if (c == '"' || c == '\\') {
        o += '\\', o += static_cast<char>(c);
      } else if (c == '\n') {
        o += "\\n";
      } else if (c == '\t') {
        o += "\\t";
      } else if (c == '\r') {
        o += "\\r";
      } else if (c == '\b') {
        o += "\\b";
      } else if (c == '\f') {
        o += "\\f";
      } else if (c < 0x20 || c == 0x7f || p.code == 0x2028 || p.code == 0x2029 ||
                 (html_safe && (c == '<' || c == '>' || c == '&'))) {
        static constexpr char kHex[] = "0123456789abcdef";
        o += "\\u";
        for (int shift = 12; shift >= 0; shift -= 4) o += kHex[(p.code >> shift) & 0xf];
      } else {
        o.append(s.substr(i, p.size));
      }
      i += p.size;
    }
    return o;
  }

 private:
  std::string m_out;
  std::vector<bool> m_first;
  bool m_after_key = false, m_inline = false, m_compact = false, m_html_safe = false;
};

}  // namespace perfsift::pipeline
