// One compact binary encoding for trace records, used by the spill files and by the
// store writer's exchanges between processes. Native byte order: both ends are the
// same build on the same machine.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
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
  // A call site's wrapper frames (CallSite::via): kept apart from callsite(), whose bytes
  // spill files of this version already hold.
  void frames(const std::vector<CallFrame> &v) {
    pod(static_cast<uint64_t>(v.size()));
    for (const auto &f : v) {
      str(f.module);
      pod(f.offset);
      str(f.function);
      pod(f.fn_offset);
    }
  }
  const std::string &bytes() const { return m_s; }
  std::string take() { return std::move(m_s); }

 private:
  std::string m_s;
};

// Reads what ByteWriter wrote (spill files, the store writer's exchanged tables). Every
// length and count is checked against the bytes left before anything is allocated, so
// damaged bytes cannot drive a huge allocation or a read past the end; a failure is a
// std::runtime_error saying what and at which byte.
class ByteReader {
 public:
  explicit ByteReader(std::string_view b) : m_s(b) {}
  bool more() const { return m_pos < m_s.size(); }
  template <class T>
  T pod() {
    need(sizeof(T), "a field");
    T v;
    std::memcpy(&v, m_s.data() + m_pos, sizeof v);
    m_pos += sizeof v;
    return v;
  }
  std::string str() {
    const auto n = pod<uint32_t>();
    need(n, "a string of " + std::to_string(n) + " bytes");
    std::string v(m_s.substr(m_pos, n));
    m_pos += n;
    return v;
  }
  // A count of items of at least `min_bytes` each: no more than the bytes left can hold.
  size_t count(size_t min_bytes, const char *what) {
    const auto n = pod<uint64_t>();
    if (n > left() / min_bytes)
      fail(std::string("a count of ") + std::to_string(n) + " " + what + " that " + std::to_string(left()) +
           " bytes cannot hold");
    return static_cast<size_t>(n);
  }
  template <class T>
  std::vector<T> vec(const char *what = "items") {
    const size_t n = count(sizeof(T), what);
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), m_s.data() + m_pos, n * sizeof(T));
    m_pos += n * sizeof(T);
    return v;
  }
  std::vector<std::string> strs(const char *what = "strings") {
    const size_t n = count(sizeof(uint32_t), what);
    std::vector<std::string> v;
    v.reserve(n);
    for (size_t i = 0; i < n; ++i) v.push_back(str());
    return v;
  }
  CommRecord comm() {
    CommRecord c;
    c.key = pod<uint64_t>();
    c.members = vec<int32_t>("communicator members");
    c.remote = vec<int32_t>("remote group members");
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
  std::vector<CallFrame> frames() {
    const size_t n = count(4 + 8 + 4 + 8, "wrapper frames");  // two empty strings, two offsets
    std::vector<CallFrame> v(n);
    for (auto &f : v) {
      f.module = str();
      f.offset = pod<uint64_t>();
      f.function = str();
      f.fn_offset = pod<uint64_t>();
    }
    return v;
  }
  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error(what + " at byte " + std::to_string(m_pos) + " of " + std::to_string(m_s.size()));
  }

 private:
  size_t left() const { return m_s.size() - m_pos; }
  void need(size_t n, const std::string &what) const {
    if (n > left()) fail(what + " runs past the end");
  }
  std::string_view m_s;
  size_t m_pos = 0;
};

}  // namespace perfsift::io
