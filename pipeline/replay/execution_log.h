// One rank's region executions (/steps, by end time) as the replay model keeps them from
// the build to the last stage: each record as varint differences from the one before
// (region, step, end) and its duration, about 8 B instead of 24. Every reader walks
// them in order (which executions a selector names), so nothing needs random access.
#pragma once

#include <cstdint>
#include <iterator>
#include <vector>

#include "io/trace_model.h"
#include "pipeline/engine/check.h"

namespace perfsift::pipeline {

class ExecutionLog {
  // Differences wrap (two's complement) rather than overflow: any stored times, even
  // damaged ones, read back exactly.
  static int64_t minus(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  }
  static int64_t plus(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }

 public:
  ExecutionLog() = default;
  template <class It>
  ExecutionLog(It first, It last) {
    io::StepRecord prev{};
    for (; first != last; ++first) {
      const io::StepRecord &x = *first;
      put(static_cast<int64_t>(x.region) - prev.region);
      put(static_cast<int64_t>(x.step) - prev.step);
      put(minus(x.t_end, prev.t_end));
      put(minus(x.t_end, x.t_begin));
      prev = x;
    }
    m_bytes.shrink_to_fit();
  }

  // Decodes one record at a time; `at` is where the current one starts.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = io::StepRecord;
    using difference_type = std::ptrdiff_t;
    using pointer = const io::StepRecord *;
    using reference = const io::StepRecord &;
    iterator() = default;
    iterator(const uint8_t *at, const uint8_t *end) : m_at(at), m_next(at), m_end(end) { decode(); }
    reference operator*() const { return m_x; }
    pointer operator->() const { return &m_x; }
    iterator &operator++() {
      m_at = m_next;
      decode();
      return *this;
    }
    iterator operator++(int) {
      iterator was = *this;
      ++*this;
      return was;
    }
    bool operator==(const iterator &o) const { return m_at == o.m_at; }

   private:
    void decode() {
      if (m_next == m_end) return;
      m_x.region = static_cast<int32_t>(m_x.region + take());
      m_x.step = static_cast<int32_t>(m_x.step + take());
      m_x.t_end = plus(m_x.t_end, take());
      m_x.t_begin = minus(m_x.t_end, take());
    }
    int64_t take() {
      uint64_t v = 0;
      for (int shift = 0;; shift += 7) {
        const uint8_t b = *m_next++;
        v |= uint64_t{b & 0x7Fu} << shift;
        if (!(b & 0x80u)) break;
      }
      return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);  // zigzag
    }
    const uint8_t *m_at = nullptr, *m_next = nullptr, *m_end = nullptr;
    io::StepRecord m_x{};
  };
  iterator begin() const {
    PERFSIFT_CHECK(!m_released, "region executions read after their last declared user released them");
    return {m_bytes.data(), m_bytes.data() + m_bytes.size()};
  }
  iterator end() const { return {m_bytes.data() + m_bytes.size(), m_bytes.data() + m_bytes.size()}; }

  // Frees the records; reading them afterwards is a bug (RegionExecutions).
  void release() {
    std::vector<uint8_t>().swap(m_bytes);
    m_released = true;
  }

  // Its bytes, for packing a rank's share into a message and back (gather_whole).
  template <class Self, class F>
  static void each_part(Self &log, F &&f) {
    f(log.m_bytes);
  }

 private:
  void put(int64_t d) {
    uint64_t v = static_cast<uint64_t>(d) << 1 ^ static_cast<uint64_t>(d >> 63);  // zigzag
    for (; v >= 0x80; v >>= 7) m_bytes.push_back(static_cast<uint8_t>(v | 0x80));
    m_bytes.push_back(static_cast<uint8_t>(v));
  }
  std::vector<uint8_t> m_bytes;
  bool m_released = false;
};

}  // namespace perfsift::pipeline
