// What-if questions (PerWiz's function F2): their grammar. Turning one into a replay
// scenario: pipeline/whatif/scenarios.h.
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

// Parses one question against the store's region paths. Throws QuestionError with the
// question, the offending word and the fix.
Question parse_question(const std::string &text, const std::vector<std::string> &region_paths);
// A stored region path (io/region_path.h) as a question names it: each name as is when it is
// plain, else in quotes with \" and \\ (a name with spaces, tabs, quotes, backslashes or '/',
// or the word and/of). parse_question reads it back to the same region.
std::string quote_region(const std::string &path);

}  // namespace perfsift::pipeline
