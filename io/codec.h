// One compact binary encoding for trace records, used by the spill files and by the
// store writer's exchanges between processes. Native byte order: both ends are the
// same build on the same machine.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::io {

class ByteWriter {
 public:
  template <class T>
  void pod(const T &v) {
    m_s.append(reinterpret_cast<const char *>(&v), sizeof v);
  }
  void str(const std::string &v) {
    pod(static_cast<uint32_t>(v.size()));
    m_s += v;
  }
  template <class T>
  void vec(const std::vector<T> &v) {
    pod(static_cast<uint64_t>(v.size()));
    m_s.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(T));
  }
  void strs(const std::vector<std::string> &v) {
    pod(static_cast<uint64_t>(v.size()));
    for (const auto &x : v) str(x);
  }
  void comm(const CommRecord &c) {
    pod(c.key);
    vec(c.members);
    vec(c.remote);
  }
  void callsite(const CallSite &c) {
    str(c.module);
    pod(c.offset);
    str(c.function);
    pod(c.fn_offset);
    str(c.file);
    pod(c.line);
  }
  const std::string &bytes() const { return m_s; }
  std::string take() { return std::move(m_s); }

 private:
  std::string m_s;
};

// Reads what ByteWriter wrote; throws std::runtime_error when the bytes run out.
class ByteReader {
 public:
  explicit ByteReader(const std::string &b) : m_s(b) {}
  bool more() const { return m_pos < m_s.size(); }
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, m_s.data() + m_pos, sizeof v);
    m_pos += sizeof v;
    return v;
  }
  std::string str() {
    auto n = pod<uint32_t>();
    need(n);
    std::string v = m_s.substr(m_pos, n);
    m_pos += n;
    return v;
  }
  template <class T>
  std::vector<T> vec() {
    auto n = pod<uint64_t>();
    need(n * sizeof(T));
    std::vector<T> v(n);
    std::memcpy(v.data(), m_s.data() + m_pos, n * sizeof(T));
    m_pos += n * sizeof(T);
    return v;
  }
  std::vector<std::string> strs() {
    auto n = pod<uint64_t>();
    std::vector<std::string> v;
    for (uint64_t i = 0; i < n; ++i) v.push_back(str());
    return v;
  }
  CommRecord comm() {
    CommRecord c;
    c.key = pod<uint64_t>();
    c.members = vec<int32_t>();
    c.remote = vec<int32_t>();
    return c;
  }
  CallSite callsite() {
    CallSite c;
    c.module = str();
    c.offset = pod<uint64_t>();
    c.function = str();
    c.fn_offset = pod<uint64_t>();
    c.file = str();
    c.line = pod<int32_t>();
    return c;
  }

 private:
  void need(size_t n) const {
    if (m_pos + n > m_s.size()) throw std::runtime_error("encoded record is truncated");
  }
  const std::string &m_s;
  size_t m_pos = 0;
};

}  // namespace perfsift::io
