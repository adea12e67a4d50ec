// The plan's executor: each step's progress line, and what a step leaves behind freed
// before the next.
#include "pipeline/engine/plan_executor.h"

#include <cstdio>
#include <string>

#include "pipeline/engine/heap.h"

namespace perfsift::pipeline {

namespace {

// Each stage's line also gives the all-to-alls it made and what analysis rank 0 sent to
// the other processes in them (docs/scaling.md).
std::string exchanged_since(const Context &ctx, const Context::Exchanges &before) {
  const auto now = ctx.exchanges();
  if (now.calls == before.calls) return std::string();
  char note[96];
  std::snprintf(note, sizeof note, ", %lld all-to-alls, %.1f MB sent to other processes",
                static_cast<long long>(now.calls - before.calls),
                (now.bytes_to_others - before.bytes_to_others) / 1048576.0);
  return std::string(note);
}

}  // namespace

void run_plan(const std::vector<PlanStep> &plan, Context &ctx, io::ResultsWriter &writer) {
  for (const auto &step : plan) {
    const auto before = ctx.exchanges();
    if (step.builder) {
      ctx.progress().stage_begin("building " + std::string(step.builder->product));
      step.builder->build(ctx, step.by_products);  // collective, at the same boundary on every process
      ctx.progress().stage_end(exchanged_since(ctx, before));
    } else {
      const auto &stage = *step.stage;
      writer.group(stage.name, stage.description);
      StageOutput out(writer, stage.name);
      ctx.progress().stage_begin(stage.name);
      ctx.products().set_requests(step.requests);
      stage.run(ctx, ctx.config(), out);
      ctx.progress().stage_end(exchanged_since(ctx, before));
    }
    for (const auto product : step.release_after) ctx.products().release(product);
    // What a step freed (its temporaries, a released product, the store's read buffers)
    // lies between live blocks of the heap: hand those pages back, or the next stage's
    // peak counts them too.
    ctx.store().release_read_buffers();
    hand_back_freed_pages();
  }
}

}  // namespace perfsift::pipeline
