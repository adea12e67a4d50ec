// Compressed columns (see columns.h).
#include "kernels/replay/columns.h"

#include <algorithm>

namespace perfsift::kernels::replay {

BlockDeltaColumn::BlockDeltaColumn(const std::vector<int64_t> &values) {
  reserve(values.size());
  for (const int64_t v : values) push_back(v);
}

void BlockDeltaColumn::push_back(int64_t v) {
  if (!m_full.empty()) {
    m_full.push_back(v);
    return;
  }
  if (m_diff.size() % kBlock == 0) {
    m_block.push_back(v);
    m_diff.push_back(0);
    return;
  }
  int64_t d = 0;
  if (__builtin_sub_overflow(v, m_block.back(), &d) || d < std::numeric_limits<int32_t>::min() ||
      d > std::numeric_limits<int32_t>::max()) {
    widen();
    m_full.push_back(v);
    return;
  }
  m_diff.push_back(static_cast<int32_t>(d));
}

void BlockDeltaColumn::widen() {
  std::vector<int64_t> full;
  full.reserve(std::max(m_diff.capacity(), m_diff.size() + 1));
  for (size_t i = 0; i < m_diff.size(); ++i) full.push_back((*this)[i]);
  std::vector<int64_t>().swap(m_block);
  std::vector<int32_t>().swap(m_diff);
  m_full = std::move(full);
}

void BlockDeltaColumn::reserve(size_t n) {
  if (!m_full.empty()) {
    m_full.reserve(n);
    return;
  }
  m_block.reserve((n + kBlock - 1) / kBlock);
  m_diff.reserve(n);
}

void BlockDeltaColumn::shrink_to_fit() {
  m_block.shrink_to_fit();
  m_diff.shrink_to_fit();
  m_full.shrink_to_fit();
}

uint32_t TimingColumn::narrow(int64_t exit, int64_t value, std::vector<Wide> &wide, size_t i) {
  const uint64_t d = static_cast<uint64_t>(exit) - static_cast<uint64_t>(value);
  if (d < kWide) return static_cast<uint32_t>(d);
  wide.push_back({i, value});
  return kWide;
}

int64_t TimingColumn::wide_value(const std::vector<Wide> &wide, size_t i) {
  return std::lower_bound(wide.begin(), wide.end(), i, [](const Wide &w, size_t e) { return w.event < e; })->value;
}

void TimingColumn::push_back(const EventTiming &t) {
  const size_t i = size();
  m_exit.push_back(t.exit);
  m_duration.push_back(narrow(t.exit, t.enter, m_wide_enter, i));
  m_waiting.push_back(narrow(t.exit, t.nowait_exit, m_wide_nowait_exit, i));
}

void TimingColumn::reserve(size_t n) {
  m_exit.reserve(n);
  m_duration.reserve(n);
  m_waiting.reserve(n);
}

void TimingColumn::shrink_to_fit() {
  m_exit.shrink_to_fit();
  m_duration.shrink_to_fit();
  m_waiting.shrink_to_fit();
  m_wide_enter.shrink_to_fit();
  m_wide_nowait_exit.shrink_to_fit();
}

}  // namespace perfsift::kernels::replay
