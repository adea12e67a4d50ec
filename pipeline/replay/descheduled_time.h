// How long the ranks waited for a CPU inside the program window (the trace store's
// /program_os): time a replay of dedicated cores cannot reproduce, against which the
// baseline's error is weighed before it is called the model's.
#pragma once

#include <cstdint>

#include "io/trace_store.h"

namespace perfsift::pipeline {

struct DescheduledTime {
  double total_s = 0;  // summed over the ranks that recorded it
  double max_s = 0;
  int32_t max_rank = -1;
  int32_t ranks_recorded = 0;

  bool recorded() const { return ranks_recorded > 0; }
  // A replay that misses the program by miss_s (either way) may be off by the machine's
  // doing: along any chain of waits the ranks' delays add up to at most their sum.
  bool covers(double miss_s) const { return recorded() && miss_s <= total_s; }
};

DescheduledTime descheduled_time(const io::TraceStore &store);

}  // namespace perfsift::pipeline
