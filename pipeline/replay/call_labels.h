// What names each event of one rank for the reports: its innermost region, call site and
// operation. A rank repeats a few such triples (a loop's calls), so each event keeps a
// code into the rank's distinct triples: 2 B per event instead of 10 (4 B once a rank
// has more than 65,536 distinct triples, whatever its size: nothing is assumed bounded).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

namespace perfsift::pipeline {

class CallLabels {
 public:
  struct Label {
    int32_t region = -1;
    uint32_t site = 0;
    uint16_t op = 0;
    bool operator==(const Label &) const = default;
  };

  void reserve(size_t events) { m_narrow.reserve(events); }
  void push_back(int32_t region, uint32_t site, uint16_t op) {
    const Label l{region, site, op};
    const uint32_t code = code_of(l);
    if (m_wide.empty() && code <= UINT16_MAX)
      m_narrow.push_back(static_cast<uint16_t>(code));
    else
      push_wide(code);
  }
  // After the last event: the building's lookup goes, the codes fit exactly.
  void seal() {
    std::vector<Slot>().swap(m_table);
    m_narrow.shrink_to_fit();
    m_wide.shrink_to_fit();
    m_palette.shrink_to_fit();
  }

  size_t size() const { return m_wide.empty() ? m_narrow.size() : m_wide.size(); }
  const Label &operator[](size_t i) const { return m_palette[m_wide.empty() ? m_narrow[i] : m_wide[i]]; }
  int32_t region(size_t i) const { return (*this)[i].region; }
  uint32_t site(size_t i) const { return (*this)[i].site; }
  uint16_t op(size_t i) const { return (*this)[i].op; }
  // Its parts, for packing a rank's share into a message and back (gather_whole).
  template <class Self, class F>
  static void each_part(Self &labels, F &&f) {
    f(labels.m_palette);
    f(labels.m_narrow);
    f(labels.m_wide);
  }

 private:
  // The building's lookup: open addressing in one flat table (a hash node per triple
  // missed the cache on every event of every rank).
  struct Slot {
    uint64_t region_site = 0;
    uint32_t code = kEmpty;
    uint16_t op = 0;
  };
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static uint64_t key(const Label &l) { return uint64_t{static_cast<uint32_t>(l.region)} << 32 | l.site; }
  // Fibonacci hashing: the product's top bits depend on every bit of the key.
  size_t home(uint64_t region_site, uint16_t op) const {
    return static_cast<size_t>(((region_site ^ (uint64_t{op} * 0xC2B2AE3D27D4EB4Full)) * 0x9E3779B97F4A7C15ull) >>
                               m_shift);
  }
  uint32_t code_of(const Label &l) {
    // Consecutive events often share their triple (a Wait after its Isend does not).
    if (m_last < m_palette.size() && m_palette[m_last] == l) return m_last;
    if (2 * (m_palette.size() + 1) > m_table.size()) grow();
    const uint64_t k = key(l);
    size_t at = home(k, l.op);
    while (m_table[at].code != kEmpty && (m_table[at].region_site != k || m_table[at].op != l.op))
      at = (at + 1) & (m_table.size() - 1);
    if (m_table[at].code == kEmpty) {
      m_table[at] = {k, static_cast<uint32_t>(m_palette.size()), l.op};
      m_palette.push_back(l);
    }
    m_last = m_table[at].code;
    return m_last;
  }
  void grow() {
    std::vector<Slot> old = std::exchange(m_table, std::vector<Slot>(std::max<size_t>(64, 2 * m_table.size())));
    m_shift = 64 - std::countr_zero(m_table.size());
    for (const Slot &x : old)
      if (x.code != kEmpty) {
        size_t at = home(x.region_site, x.op);
        while (m_table[at].code != kEmpty) at = (at + 1) & (m_table.size() - 1);
        m_table[at] = x;
      }
  }
  void push_wide(uint32_t code) {
    if (m_wide.empty()) {
      // The 65,537th distinct triple: every code so far widens once.
      m_wide.reserve(m_narrow.capacity());
      m_wide.assign(m_narrow.begin(), m_narrow.end());
      std::vector<uint16_t>().swap(m_narrow);
    }
    m_wide.push_back(code);
  }

  std::vector<Label> m_palette;    // the rank's distinct triples, in order of first use
  std::vector<uint16_t> m_narrow;  // per event: its triple (up to 65,536 of them)
  std::vector<uint32_t> m_wide;    // per event, once there are more
  std::vector<Slot> m_table;       // while building: triple -> code
  int m_shift = 64;                // 64 - log2(m_table.size())
  uint32_t m_last = 0;
};

}  // namespace perfsift::pipeline
