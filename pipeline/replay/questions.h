// What-if questions (PerWiz's function F2): their grammar, and turning one into a replay
// scenario for the owned ranks.
//
//   question  := clause ("and" clause)*
//   clause    := "baseline" | "ideal-network" | action selector
//   action    := "zero-wait" | "zero" | "balance" | "balance-messages" | "scale" FACTOR
//   selector  := term+ ; term := "all" | "region" PATH | "step" N ["of"] REGION
//              | "steps" ["of"] REGION | "callsite" ID | "event" RANK:INDEX | "ranks" A-B[,C...]
//
// Computation is located by region executions (/steps): "region R" is the time inside
// R's executions, "step N of R" inside its N-th, "steps of R" every step separately.
// "callsite ID" is the computation right before those calls (balance, scale) or the calls
// themselves (zero, zero-wait); "event R:I" is one call.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/rank_set.h"
#include "kernels/replay.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

class QuestionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Action { ZeroWait, Zero, Balance, BalanceMessages, Scale };

struct Selector {
  // Occurrences (not written in questions): a region's executions grouped by their order on
  // each rank — the k-th executions of every rank form group k (how "balance region" balances).
  enum class Kind { All, Region, Step, Steps, Callsite, Event, Occurrences } kind = Kind::All;
  std::string region;  // Region, Step, Steps, Occurrences
  int32_t region_id = -1;
  int64_t step = -1;  // Step
  int64_t callsite = -1;
  int32_t rank = -1;  // Event
  int64_t index = -1;
  kernels::RankRanges ranks;  // empty: every rank
};

struct Clause {
  Action action = Action::Zero;
  double factor = 0;  // Scale
  Selector sel;
};

struct Question {
  std::string text;
  bool baseline = false, ideal_network = false;
  std::vector<Clause> clauses;
};

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

// Parses one question against the store's region paths. Throws QuestionError with the
// question, the offending word and the fix.
Question parse_question(const std::string &text, const std::vector<std::string> &region_paths);
// A stored region path (io/region_path.h) as a question names it: each name as is when it is
// plain, else in quotes with \" and \\ (a name with spaces, tabs, quotes, backslashes or '/',
// or the word and/of). parse_question reads it back to the same region.
std::string quote_region(const std::string &path);

// The scenario for the model's ranks. With a context: collective over it, the model
// holding the owned ranks (balance needs every rank's totals). Without (nullptr): the
// model holds every rank; no communication. `selected` counts what the question touched
// (calls plus computation spans), run-wide.
kernels::replay::Scenario build_scenario(const Context *ctx, const ReplayModel &model, const Question &q,
                                         int64_t &selected);
// The same for several questions at once (collective with a context): each the scenario
// build_scenario gives, `selected` per question. Questions that change each rank on its own
// (no balancing) are built rank by rank together, reading each rank's region executions once.
std::vector<kernels::replay::Scenario> build_scenarios(const Context *ctx, const ReplayModel &model,
                                                       const std::vector<const Question *> &questions,
                                                       std::vector<int64_t> &selected);

}  // namespace perfsift::pipeline
