// What the whatif stage hands on of its baseline replay (the run replayed as measured on
// LogGPS): the replay itself, which bounds and domino start from, and on request the
// replay's state, which the domino search resumes its candidates from. Both are published
// once, by the whatif stage, and never changed after.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kernels/loggps.h"
#include "kernels/replay.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

// Product of the whatif stage: the matched run, the LogGPS parameters the whatif stage
// replays it with, and its baseline replay's timings of the owned ranks (one column per
// owned rank, in the model's order).
struct ReplayBaseline {
  static constexpr std::string_view kProduct = "replay baseline";
  std::shared_ptr<const ReplayModel> model;
  kernels::LogGPS params;
  std::shared_ptr<const std::vector<kernels::replay::TimingColumn>> timings;
};

// Product of the whatif stage, made only when a later stage asks for it on this run
// (Products::requested; the domino search, when it resumes candidates instead of
// gathering the run): the baseline replay's state, this process's part, kept from that
// replay rather than replayed again. Its snapshot borrows the baseline's timings, which
// it keeps alive; its one reader takes it (Products::take), and its memory goes with that
// reader.
struct BaselineState {
  static constexpr std::string_view kProduct = "baseline replay state";
  std::shared_ptr<const std::vector<kernels::replay::TimingColumn>> timings;  // what `snapshot` borrows
  kernels::replay::Snapshot snapshot;
};

// Product of the whatif stage: the program's time (start-up and shut-down left out) as
// measured, as the baseline replay predicts it, and on an ideal network (the
// `ideal-network` question; NaN when it was not asked). The ideal network is asked even
// without the standard questions when a later stage requests this product (the POP
// efficiencies' transfer efficiency).
struct ProgramReplayTimes {
  static constexpr std::string_view kProduct = "program replay times";
  double measured_s = 0, baseline_s = 0;
  double ideal_network_s = 0;
};

}  // namespace perfsift::pipeline
