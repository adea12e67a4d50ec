// Compressed per-event columns of int64 values: a replay's bounds and its recorded timings.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace perfsift::kernels::replay {

// Exact int64 values in 4.5 B each instead of 8: a 64-bit value per block of 16 and each
// value's signed 32-bit difference from its block's. Once a difference does not fit in
// 32 bits, the column keeps plain 64-bit values (all of them, from then on). One rank's
// early-stop bounds (Scenario::rest) and its replayed exits (TimingColumn).
class BlockDeltaColumn {
 public:
  BlockDeltaColumn() = default;
  explicit BlockDeltaColumn(const std::vector<int64_t> &values);
  size_t size() const { return m_full.empty() ? m_diff.size() : m_full.size(); }
  bool empty() const { return size() == 0; }
  int64_t operator[](size_t i) const { return m_full.empty() ? m_block[i / kBlock] + m_diff[i] : m_full[i]; }
  // f(i, value) for i = 0, 1, ... in order until f returns false: a block's base read once
  // for its values, where operator[] reads it for each.
  template <class F>
  void scan(F &&f) const {
    const size_t n = size();
    if (!m_full.empty()) {
      for (size_t i = 0; i < n; ++i)
        if (!f(i, m_full[i])) return;
      return;
    }
    for (size_t first = 0; first < n; first += kBlock) {
      const int64_t base = m_block[first / kBlock];
      const size_t last = std::min(n, first + kBlock);
      for (size_t i = first; i < last; ++i)
        if (!f(i, base + m_diff[i])) return;
    }
  }
  void push_back(int64_t v);
  void reserve(size_t n);
  void shrink_to_fit();
  // Its parts, for packing into a message and back (gather_whole).
  template <class Self, class F>
  static void each_part(Self &c, F &&f) {
    f(c.m_block);
    f(c.m_diff);
    f(c.m_full);
  }

 private:
  static constexpr size_t kBlock = 16;
  void widen();  // to plain 64-bit values
  std::vector<int64_t> m_block, m_full;
  std::vector<int32_t> m_diff;
};

// Called for every replayed event: predicted enter and exit, and the exit had nothing
// been waited for (exit - nowait_exit is the event's waiting time).
struct EventTiming {
  int64_t enter, exit, nowait_exit;
};

// One rank's replayed timings in about 12.5 B per event instead of 24, exactly: its exits
// (BlockDeltaColumn, 4.5 B), and per event its duration exit - enter and its waiting
// exit - nowait_exit in 32 bits each. A duration or waiting that does not fit in
// [0, 2^32 - 1) (a barrier of seconds; a negative one: a local call measured negative, a
// member of a rooted collective that arrives after the root) holds kWide there, and its
// time whole in a table sorted by event.
class TimingColumn {
 public:
  size_t size() const { return m_exit.size(); }
  bool empty() const { return m_exit.empty(); }
  int64_t exit(size_t i) const { return m_exit[i]; }
  int64_t enter(size_t i) const { return before(exit(i), m_duration[i], m_wide_enter, i); }
  int64_t nowait_exit(size_t i) const { return before(exit(i), m_waiting[i], m_wide_nowait_exit, i); }
  EventTiming operator[](size_t i) const {
    const int64_t x = exit(i);
    return {before(x, m_duration[i], m_wide_enter, i), x, before(x, m_waiting[i], m_wide_nowait_exit, i)};
  }
  EventTiming back() const { return (*this)[size() - 1]; }
  void push_back(const EventTiming &t);
  void reserve(size_t n);
  void shrink_to_fit();
  // Its parts, for packing into a message and back (gather_whole).
  template <class Self, class F>
  static void each_part(Self &c, F &&f) {
    BlockDeltaColumn::each_part(c.m_exit, f);
    f(c.m_duration);
    f(c.m_waiting);
    f(c.m_wide_enter);
    f(c.m_wide_nowait_exit);
  }

 private:
  static constexpr uint32_t kWide = std::numeric_limits<uint32_t>::max();
  struct Wide {
    uint64_t event;
    int64_t value;
  };
  // `value` as its difference below `exit` in 32 bits, or kWide (then kept in `wide`).
  static uint32_t narrow(int64_t exit, int64_t value, std::vector<Wide> &wide, size_t i);
  static int64_t before(int64_t exit, uint32_t d, const std::vector<Wide> &wide, size_t i) {
    if (d != kWide) [[likely]]
      return static_cast<int64_t>(static_cast<uint64_t>(exit) - d);
    return wide_value(wide, i);
  }
  static int64_t wide_value(const std::vector<Wide> &wide, size_t i);
  BlockDeltaColumn m_exit;
  std::vector<uint32_t> m_duration, m_waiting;
  std::vector<Wide> m_wide_enter, m_wide_nowait_exit;  // sorted by event
};

}  // namespace perfsift::kernels::replay
