// What-if scenarios built together (build_scenarios) are the scenarios built one question
// at a time (build_scenario): the batch walks each rank's region executions once for all
// its per-rank questions, which must change nothing in what any question gets. Random
// models built by hand (no trace store, no MPI: every rank in one model).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "io/region_path.h"
#include "pipeline/whatif/scenarios.h"

using namespace perfsift::pipeline;
namespace rp = perfsift::kernels::replay;
using perfsift::io::StepRecord;

namespace {

// Region ids 0..3 as the store names them: a nesting (main, solve, halo) and a top-level one.
std::vector<std::string> region_paths() {
  using perfsift::io::child_region_path;
  const std::string main = child_region_path("", true, "main");
  const std::string solve = child_region_path(main, false, "solve");
  return {main, solve, child_region_path(solve, false, "halo"), child_region_path("", true, "io")};
}

int64_t uniform(std::mt19937 &rng, int64_t lo, int64_t hi) {  // [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// One rank's region executions over [t0, t1): consecutive steps of "solve" (as a time
// loop writes them, some left out), random executions of every region with or without
// a step, and nested ones of one region (recursion) inside earlier ones. By end time, as
// the store gives them.
std::vector<StepRecord> random_executions(std::mt19937 &rng, int64_t t0, int64_t t1) {
  std::vector<StepRecord> x;
  const int64_t span = std::max<int64_t>(1, t1 - t0);
  x.push_back({0, -1, t0 + uniform(rng, 0, span / 20), t1 - uniform(rng, 0, span / 20)});
  const int64_t chunk = span / 6;
  for (int32_t step = 0; step < 6; ++step) {
    if (uniform(rng, 0, 5) == 0) continue;
    const int64_t b = t0 + step * chunk + uniform(rng, 0, chunk / 4);
    x.push_back({1, step, b, std::max(b + 1, t0 + (step + 1) * chunk - uniform(rng, 0, chunk / 4))});
  }
  const int64_t extra = uniform(rng, 3, 20);
  for (int64_t k = 0; k < extra; ++k) {
    const int32_t region = static_cast<int32_t>(uniform(rng, 0, 3));
    const int32_t step = uniform(rng, 0, 2) == 0 ? -1 : static_cast<int32_t>(uniform(rng, 0, 5));
    const int64_t b = uniform(rng, t0 - span / 10, t1);
    x.push_back({region, step, b, b + 1 + uniform(rng, 0, span / 3)});
    if (uniform(rng, 0, 2) == 0) {  // recursion: the same region again inside, or overlapping its end
      const StepRecord outer = x.back();
      const int64_t ib = uniform(rng, outer.t_begin, outer.t_end - 1);
      x.push_back({region, step, ib, uniform(rng, ib + 1, outer.t_end + span / 10)});
    }
  }
  std::sort(x.begin(), x.end(), [](const StepRecord &a, const StepRecord &b) { return a.t_end < b.t_end; });
  return x;
}

// Every rank of a small run: events with zero and positive gaps, labels, a few sends,
// and region executions over the rank's time. Fills what scenario building reads.
ReplayModel random_model(uint32_t seed) {
  std::mt19937 rng(seed);
  ReplayModel model;
  model.params = perfsift::kernels::LogGPS{};
  const auto nranks = static_cast<size_t>(uniform(rng, 2, 5));
  model.programs.resize(nranks);
  model.side.resize(nranks);
  for (size_t s = 0; s < nranks; ++s) {
    rp::RankProgram &p = model.programs[s];
    ReplayModel::Side &side = model.side[s];
    p.rank = static_cast<int32_t>(s);
    const auto events = static_cast<size_t>(uniform(rng, 30, 200));
    const int64_t t0 = uniform(rng, 0, 100'000);
    int64_t t = t0;
    for (size_t i = 0; i < events; ++i) {
      const int64_t gap = uniform(rng, 0, 3) == 0 ? 0 : uniform(rng, 1, 50'000);
      t += gap;
      p.add_local(gap, 0);
      side.enter.push_back(t);
      side.labels.push_back(static_cast<int32_t>(uniform(rng, 0, 3)), static_cast<uint32_t>(uniform(rng, 0, 4)),
                            static_cast<uint16_t>(uniform(rng, 0, 20)));
      t += uniform(rng, 0, 5'000);  // the call's duration
    }
    side.labels.seal();
    side.last_exit = t;
    // Sends in event order, as the builder posts them; several on one event happen (Sendrecv-like batches).
    std::vector<int32_t> send_events(static_cast<size_t>(uniform(rng, 1, 8)));
    for (auto &e : send_events) e = static_cast<int32_t>(uniform(rng, 0, static_cast<int64_t>(events) - 1));
    std::sort(send_events.begin(), send_events.end());
    for (int32_t e : send_events) {
      p.sends.push_back({uniform(rng, 1, 200'000), -1, -1});
      side.send_event.push_back(e);
    }
    const auto executions = random_executions(rng, t0, t);
    side.executions = ExecutionLog(executions.begin(), executions.end());
    model.events += static_cast<int64_t>(events);
    model.sends += static_cast<int64_t>(p.sends.size());
    model.measured_ns = std::max(model.measured_ns, t);
  }
  return model;
}

// Questions of every kind the grammar has: per-rank ones (zero-wait, zero, scale; by region,
// step, steps, call site, event, ranks; several clauses) and balances between them.
std::vector<std::string> question_texts() {
  return {
      "zero-wait all",
      "balance region solve",
      "zero-wait region main",
      "zero region solve",
      "balance steps of solve",
      "scale 0.5 region halo",
      "zero-wait callsite 3",
      "balance-messages steps of solve",
      "zero-wait event 1:5",
      "scale 0.25 steps of solve",
      "balance region io",
      "zero step 2 of solve",
      "zero region main and scale 0.5 region io and zero-wait callsite 1",
      "balance callsite 2",
      "scale 0.5 region main/solve/halo ranks 1-2",
      "zero-wait region io ranks 0,2",
      "balance-messages region main",
      "zero callsite 4",
      "zero event 0:7 and zero event 1:3",
      "scale 2 region io",
      "balance steps of solve ranks 0-2",
      "zero-wait ranks 1,3",
      "scale 0.5 callsite 0 and zero region halo",
      "zero step 3 of main",
      "balance all",
      "ideal-network",
      "baseline",
      "zero-wait steps of solve and ideal-network",
      "scale 0 all ranks 2-4",
      "zero region solve and balance region halo",
      "scale 0.5 steps of halo and scale 0.5 region halo and zero step 1 solve",
      "zero-wait event 4:9",
      "zero region io and zero region io",
      "balance-messages callsite 3 ranks 0-1",
      "scale 3 step 0 of solve ranks 1",
  };
}

void expect_same_scenario(const rp::Scenario &together, const rp::Scenario &alone, const std::string &what) {
  EXPECT_EQ(together.gaps, alone.gaps) << what << ": gaps";
  EXPECT_EQ(together.send_bytes, alone.send_bytes) << what << ": send_bytes";
  EXPECT_EQ(together.event_flags, alone.event_flags) << what << ": event_flags";
  EXPECT_EQ(together.ideal_network, alone.ideal_network) << what << ": ideal_network";
  EXPECT_EQ(together.zero_wait_rank, alone.zero_wait_rank) << what << ": zero_wait_rank";
  EXPECT_EQ(together.zero_wait_event, alone.zero_wait_event) << what << ": zero_wait_event";
  const auto &a = together.net, &b = alone.net;
  EXPECT_TRUE(a.L == b.L && a.os0 == b.os0 && a.os1 == b.os1 && a.or0 == b.or0 && a.or1 == b.or1 && a.g == b.g &&
              a.G == b.G && a.S == b.S && a.s == b.s && a.source == b.source)
      << what << ": net";
}

}  // namespace

TEST(Scenarios, BuiltTogetherAsEachAlone) {
  const auto paths = region_paths();
  const auto texts = question_texts();
  std::vector<Question> questions;
  for (const auto &text : texts) {
    Question q;
    ASSERT_NO_THROW(q = parse_question(text, paths)) << text;
    questions.push_back(std::move(q));
  }
  // What the questions changed over every seed: the comparison means nothing if nothing changed.
  int64_t selected_questions = 0, flagged = 0, regapped = 0, resized = 0;
  constexpr uint32_t kSeeds = 20;
  for (uint32_t seed = 1; seed <= kSeeds; ++seed) {
    const ReplayModel model = random_model(seed);
    // Each seed its own order, so balances and per-rank questions interleave differently.
    std::vector<const Question *> batch;
    for (const auto &q : questions) batch.push_back(&q);
    std::shuffle(batch.begin(), batch.end(), std::mt19937(seed * 7919));
    std::vector<int64_t> selected;
    const auto together = build_scenarios(nullptr, model, model.params, batch, selected);
    ASSERT_EQ(together.size(), batch.size());
    ASSERT_EQ(selected.size(), batch.size());
    for (size_t k = 0; k < batch.size(); ++k) {
      const std::string what = "seed " + std::to_string(seed) + ", \"" + batch[k]->text + "\"";
      int64_t selected_alone = -1;
      const rp::Scenario alone = build_scenario(nullptr, model, model.params, *batch[k], selected_alone);
      EXPECT_EQ(selected[k], selected_alone) << what << ": selected";
      expect_same_scenario(together[k], alone, what);

      selected_questions += selected_alone > 0;
      for (const auto &f : alone.event_flags) flagged += std::count_if(f.begin(), f.end(), [](uint8_t x) { return x; });
      for (size_t s = 0; s < alone.gaps.size(); ++s)
        for (size_t i = 0; i < alone.gaps[s].size(); ++i)
          regapped += alone.gaps[s][i] != model.programs[s].events[i].gap;
      for (size_t s = 0; s < alone.send_bytes.size(); ++s)
        for (size_t m = 0; m < alone.send_bytes[s].size(); ++m)
          resized += alone.send_bytes[s][m] != model.programs[s].sends[m].bytes;
    }
  }
  EXPECT_GT(selected_questions, static_cast<int64_t>(kSeeds * texts.size() / 2));
  EXPECT_GT(flagged, 0);
  EXPECT_GT(regapped, 0);
  EXPECT_GT(resized, 0);
}
