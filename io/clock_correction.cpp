#include "io/clock_correction.h"

#include <algorithm>

namespace perfsift::io {

int64_t clock_offset_at(const ClockRecord &c, int64_t t) {
  const int64_t span = c.local_fin_ns - c.local_init_ns;
  if (span <= 0) return c.offset_init_ns;
  // Each measurement bounds the true offset within its error. When the two bounds
  // overlap, a constant offset explains both: a slope drawn through a noisy measurement
  // (a loaded node's best round trip of milliseconds, over a run of a tenth of a second)
  // would stretch the rank's times by percents where the clocks drift by parts per million.
  const int64_t low = std::max(c.offset_init_ns - c.error_init_ns, c.offset_fin_ns - c.error_fin_ns);
  const int64_t high = std::min(c.offset_init_ns + c.error_init_ns, c.offset_fin_ns + c.error_fin_ns);
  if (low <= high) return low + (high - low) / 2;
  const long double slope = static_cast<long double>(c.offset_fin_ns - c.offset_init_ns) / span;
  return c.offset_init_ns + static_cast<int64_t>(slope * (t - c.local_init_ns));
}

void correct_times(RankTrace &trace, int64_t start_ns) {
  auto fix = [&](int64_t t) { return t + clock_offset_at(trace.clock, t) - start_ns; };
  for (auto &e : trace.events) {
    e.t_enter = fix(e.t_enter);
    e.t_exit = fix(e.t_exit);
  }
  for (auto &s : trace.steps) {
    s.t_begin = fix(s.t_begin);
    s.t_end = fix(s.t_end);
  }
}

}  // namespace perfsift::io
