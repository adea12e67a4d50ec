// The one list of stages. A new stage is a file defining `StageInfo x_stage()` and a
// line here; its keys, help and defaults then reach the pipeline file, `perfsift
// stages` and `perfsift config check` without further code.
#include "pipeline/engine/stage.h"

namespace perfsift::pipeline {

StageInfo profile_stage();
StageInfo dissimilarity_stage();
StageInfo disparity_stage();
StageInfo rootcause_stage();
StageInfo waitstates_stage();
StageInfo classify_stage();
StageInfo diagnosis_stage();
StageInfo whatif_stage();
StageInfo bounds_stage();
StageInfo domino_stage();

const std::vector<StageInfo> &stage_registry() {
  static const std::vector<StageInfo> stages = {profile_stage(), dissimilarity_stage(), disparity_stage(), rootcause_stage(), waitstates_stage(), classify_stage(), diagnosis_stage(), whatif_stage(), bounds_stage(), domino_stage()};
  return stages;
}

}  // namespace perfsift::pipeline
