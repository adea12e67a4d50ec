// Clock correction: map a rank's raw clock onto rank 0's with a linear drift model
// fitted through the offsets measured at MPI_Init and MPI_Finalize. Part of the trace
// store's definition of time, so it lives with the store: the collector applies it
// before writing, `perfsift recover` to spilled data. O(events) time, O(1) memory.
#pragma once

#include <cstdint>

#include "io/trace_model.h"

namespace perfsift::io {

// Offset to add to a raw local time t: linear interpolation/extrapolation between the
// two measurements when they differ by more than their error bounds allow; else
// constant (the middle of the range both bounds admit), as when only the init
// measurement exists.
int64_t clock_offset_at(const ClockRecord &c, int64_t t_local);

// Rewrites every time of `trace` (events, steps) from raw local clock to ns since
// `start_ns` on rank 0's clock.
void correct_times(RankTrace &trace, int64_t start_ns);

}  // namespace perfsift::io
