#include "pipeline/replay/descheduled_time.h"

#include <cmath>

namespace perfsift::pipeline {

DescheduledTime descheduled_time(const io::TraceStore &store) {
  DescheduledTime d;
  const auto rows = store.program_os();
  for (size_t r = 0; r < rows.size(); ++r) {
    const double s = rows[r].run_delay_s;
    if (!std::isfinite(s) || s < 0) continue;
    ++d.ranks_recorded;
    d.total_s += s;
    if (s > d.max_s || d.max_rank < 0) d.max_s = s, d.max_rank = static_cast<int32_t>(r);
  }
  return d;
}

}  // namespace perfsift::pipeline
