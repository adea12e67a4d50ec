// A small streaming JSON writer for reports (pretty-printed, deterministic: numbers
// in shortest round-trip form, NaN and infinities as null).
#pragma once

#include <charconv>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace perfsift::pipeline {

class JsonWriter {
 public:
  // compact: no newlines or indentation (data embedded in a page).
  explicit JsonWriter(bool compact = false) : m_compact(compact) {}
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
  void quote(const std::string &s) {
    m_out += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\')
        m_out += '\\', m_out += static_cast<char>(c);
      else if (c == '\n')
        m_out += "\\n";
      else if (c == '\t')
        m_out += "\\t";
      else if (c < 0x20) {
        char b[8];
        std::snprintf(b, sizeof b, "\\u%04x", c);
        m_out += b;
      } else
        m_out += static_cast<char>(c);
    }
    m_out += '"';
  }
  std::string m_out;
  std::vector<bool> m_first;
  bool m_after_key = false, m_inline = false, m_compact = false;
};

}  // namespace perfsift::pipeline
