// The plan of an analysis and its executor: the steps (shared-product builds and stages)
// that pipeline.stages becomes, run in order on every analysis process. The stage list
// that makes a plan is in pipeline/stages/registry.h (plan_pipeline).
#pragma once

#include <string_view>
#include <vector>

#include "io/results_store.h"
#include "pipeline/engine/context.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

// One step of a pipeline: a builder (its product is needed next) or a stage.
struct PlanStep {
  const ProductBuilder *builder = nullptr;
  const StageInfo *stage = nullptr;
  // Built products no later step requires or uses: released after this step (the matched
  // messages are 136 B per message; the replays after them do not need them).
  std::vector<std::string_view> release_after{};
  // A builder's by-products (ProductBuilder::also_publishes) that a later stage uses: the
  // only ones it publishes.
  std::vector<std::string_view> by_products{};
  // A stage's products made on request that later stages ask for (StageInfo::requests),
  // each with the runs it is read on: handed to the stage before it runs
  // (Products::set_requests).
  std::vector<ProductRequest> requests{};
};

// Runs the steps in order (collective): a builder publishes its product; a stage writes
// its own group of the results store with the context's configuration. After each step,
// the products it was the last user of are released and freed pages handed back.
void run_plan(const std::vector<PlanStep> &plan, Context &ctx, io::ResultsWriter &writer);

}  // namespace perfsift::pipeline
