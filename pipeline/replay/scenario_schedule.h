// The replay scheduler: many scenarios of one model (the what-if questions) replayed
// distributed, every process advancing its own ranks, as many at once as can share the
// work: in one pass when they change only computation or waiting (kQuestionsPerPass at a
// time), else side by side in shared exchange rounds, as many as threads; the rest one by
// one. Scenario 0 is the baseline (the run as measured): its timings, and on request its
// state to resume from, are kept.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/replay.h"
#include "pipeline/engine/context.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

// What the scheduler asks of whoever owns the scenarios (indexed 0, 1, ...).
class ScenarioSource {
 public:
  virtual ~ScenarioSource() = default;
  // Collective: the scenarios of `which`, built together (in that order).
  virtual std::vector<kernels::replay::Scenario> build(const std::vector<size_t> &which) = 0;
  // Scenario k's event sink (sums of its waiting), or none.
  virtual kernels::replay::EventSink sink(size_t k) = 0;
  // Scenario k replays again: what its sink summed and its answer so far go.
  virtual void discard(size_t k) = 0;
  // Scenario k's run time and the dependencies its replay released (run-wide).
  virtual void answer(size_t k, int64_t makespan_ns, int64_t released) = 0;
  // Scenario k in progress lines.
  virtual std::string name(size_t k) const = 0;
};

struct ScheduleOptions {
  size_t begin = 0, end = 0;  // the scenarios to replay, [begin, end)
  // Scenarios before keep_end record their timings; with `store` they are kept
  // (KeptReplays::kept: the stored predicted traces).
  size_t keep_end = 0;
  bool store = false;
  bool keep_state = false;  // the baseline's state is kept (KeptReplays::state)
  std::string stage;        // who asks, for progress lines
};

// What the baseline's replay and the stored ones leave.
struct KeptReplays {
  // The baseline's timings of the owned ranks (`replayed`: it ran, also on processes
  // owning no rank); `state` borrows them.
  std::shared_ptr<std::vector<kernels::replay::TimingColumn>> baseline =
      std::make_shared<std::vector<kernels::replay::TimingColumn>>();
  bool replayed = false;
  std::shared_ptr<kernels::replay::Snapshot> state;
  // (scenario, timings of the owned ranks) of the stored replays, by scenario.
  std::vector<std::pair<int64_t, std::vector<kernels::replay::TimingColumn>>> kept;
};

// Collective: scenarios [opt.begin, opt.end) of `source` replayed distributed. The
// baseline leads the first pass when one forms (its timings recorded there, its state
// rebuilt from them), else replays last: its timings (12.5 B per event) are not held
// while the others replay, and its state passes from its replay to `kept` without a
// second one. Questions that keep no timings replay together (each engine's state, about
// 13 B per owned event, held as many times as replay at once).
void replay_scenarios(Context &ctx, const ReplayModel &model, ScenarioSource &source, const ScheduleOptions &opt,
                      KeptReplays &kept);

}  // namespace perfsift::pipeline
