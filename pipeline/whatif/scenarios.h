// What-if scenarios: where a question's selector falls on each rank, and a question
// turned into a kernels::replay::Scenario for the model's ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/loggps.h"
#include "kernels/replay.h"
#include "pipeline/engine/context.h"
#include "pipeline/replay/replay_model.h"
#include "pipeline/whatif/questions.h"

namespace perfsift::pipeline {

// Where a selector falls on one rank. Groups are the steps for "steps of R", else 0.
struct Located {
  // Computation before an event inside the selection, per group: a gap that spans the
  // end of one step and the start of the next gives two parts. By event, then group.
  struct Part {
    int64_t event;
    int32_t group;
    int64_t ns;
  };
  std::vector<Part> parts;
  std::vector<int32_t> call;          // per event: the group of the call itself, -1 if not selected
  std::vector<uint8_t> participates;  // per group: the rank executed it
};
// Without `parts`, only the selected calls (Located::call) and who participates.
Located locate(const Selector &sel, const kernels::replay::RankProgram &p, const ReplayModel::Side &side,
               int32_t ngroups, bool parts = true);

// The scenario for the model's ranks on network `net`. With a context: collective over it, the model
// holding the owned ranks (balance needs every rank's totals). Without (nullptr): the
// model holds every rank; no communication. `selected` counts what the question touched
// (calls plus computation spans), run-wide.
kernels::replay::Scenario build_scenario(const Context *ctx, const ReplayModel &model, const kernels::LogGPS &net,
                                         const Question &q, int64_t &selected);
// The same for several questions at once (collective with a context): each the scenario
// build_scenario gives, `selected` per question. Questions that change each rank on its own
// (no balancing) are built rank by rank together, reading each rank's region executions once.
std::vector<kernels::replay::Scenario> build_scenarios(const Context *ctx, const ReplayModel &model,
                                                       const kernels::LogGPS &net,
                                                       const std::vector<const Question *> &questions,
                                                       std::vector<int64_t> &selected);

}  // namespace perfsift::pipeline
