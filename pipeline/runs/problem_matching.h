// The problems of two sides (each one run or several) matched by identity — kind, place,
// culprit ranks — never by position or by an index into one store's tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/runs/run_results.h"

namespace perfsift::pipeline {

// One problem as the runs of one side saw it.
struct SideProblem {
  ProblemRow row;              // as the first run that has it names it
  std::vector<double> lost_s;  // per run of the side: its time at stake, 0 where that run lacks it
  std::vector<double> gains;   // the predictions of the runs that priced its fix
  double lost_mean() const;
  double predicted_gain() const;  // their mean; NaN when no run priced it
};

// The side's problems, the first run's order first (a problem only later runs have follows).
std::vector<SideProblem> problems_of_side(const std::vector<RunResults> &runs);

enum class ProblemStatus { Gone, Persists, New, Moved };
const char *status_word(ProblemStatus s);

struct MatchedProblem {
  ProblemStatus status = ProblemStatus::Gone;
  std::optional<size_t> before, after;  // indexes into the two sides' problems
  std::string moved;                    // Moved: "to other ranks" or "to another place"
};

// Every problem of either side once: identical identity persists; the same kind and place
// with other culprits, then the same kind and culprits at another place, moved; the rest
// gone (before only) or new (after only). Before's order, then the new ones. When the two
// sides ran on different rank counts (before_ranks, after_ranks), culprits compare by their
// share of the ranks: rank 2 of 4 is ranks 4-5 of 8.
std::vector<MatchedProblem> match_problems(const std::vector<SideProblem> &before,
                                           const std::vector<SideProblem> &after, int64_t before_ranks = 0,
                                           int64_t after_ranks = 0);

}  // namespace perfsift::pipeline
