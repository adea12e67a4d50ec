// The one list of stages and shared-product builders, the pipeline file built from it,
// and the plan: which builders run before which stage. `perfsift analyze`, `perfsift
// stages` and `perfsift config check` all read this.
#pragma once

#include <string>
#include <vector>

#include "config/schema.h"
#include "pipeline/engine/plan_executor.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

// Every stage, in default pipeline order.
const std::vector<StageInfo> &stage_registry();
const StageInfo *find_stage(const std::string &name);
// Every builder of a shared product no stage provides.
const std::vector<ProductBuilder> &product_builders();

// The pipeline file's keys: general sections plus every stage's table (keys prefixed
// with the stage name, environment overrides PERFSIFT_<STAGE>_<KEY>).
const std::vector<config::KeyDef> &pipeline_keys();
std::vector<std::string> pipeline_sections();

// The steps of pipeline.stages (PlanStep: engine/plan_executor.h): before each stage, the
// builders of the products it requires that no earlier step published; each built
// product released after its last user; each request for a product made on request
// (StageInfo::requests) given to the stage providing it. Throws config::ConfigError at
// pipeline.stages (file:line:col) when a stage requires a product only a stage missing
// before it provides.
std::vector<PlanStep> plan_pipeline(const config::Values &cfg);

// Parses and validates a pipeline file (empty path: defaults), including its plan.
// Throws ConfigError.
config::Values load_pipeline(const std::string &path, const config::EnvLookup &env);

}  // namespace perfsift::pipeline
