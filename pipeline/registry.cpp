// The one list of stages. A new stage is a file defining `StageInfo x_stage()` and a
// line here; its keys, help and defaults then reach the pipeline file, `perfsift
// stages` and `perfsift config check` without further code.
#include "pipeline/stage.h"

namespace perfsift::pipeline {

StageInfo profile_stage();

const std::vector<StageInfo> &stage_registry() {
  static const std::vector<StageInfo> stages = {profile_stage()};
  return stages;
}

}  // namespace perfsift::pipeline
