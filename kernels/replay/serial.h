// A replay of programs that hold every rank, on one engine.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/replay/columns.h"
#include "kernels/replay/program.h"
#include "kernels/replay/scenario.h"
#include "kernels/replay/snapshot.h"

namespace perfsift::kernels::replay {

// Replays programs that hold every rank (serial): predicted makespan in ns.
struct SerialResult {
  int64_t makespan = 0;  // INT64_MAX when the scenario's abort_at stopped the replay
  std::vector<int64_t> end_times;
  std::vector<TimingColumn> timings;
  int64_t released = 0;
  bool repeated = false;  // Scenario::assume_resting_arrivals failed: replayed again without
  bool shifted = false;   // stopped at a clean cut (Scenario::cuts)
};
SerialResult replay_serial(const std::vector<RankProgram> &programs, const Scenario &scenario, bool record_timings);
// A serial replay of every rank and its state.
Snapshot replay_snapshot(const std::vector<RankProgram> &programs, const Scenario &scenario);

}  // namespace perfsift::kernels::replay
