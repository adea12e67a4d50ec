// Two sets of runs of one program compared (`perfsift compare`): program time with its
// noise, every problem gone, persisting, new or moved, the predicted gain of each fixed
// problem against what the rerun realised, and regions and MPI operations before and after.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/runs/problem_matching.h"
#include "pipeline/runs/run_results.h"
#include "pipeline/runs/run_statistics.h"

namespace perfsift::pipeline {

// What the rerun says of a prediction.
enum class PredictionVerdict {
  Unpriced,   // no stage priced the problem's fix
  NotFixed,   // the problem did not shrink: the rerun does not test its prediction
  Held,       // realised within the tolerance (the noise, at least 10 % of the prediction)
  FellShort,  // realised less
  Exceeded,   // realised more
};
const char *verdict_words(PredictionVerdict v);

struct ProblemComparison {
  MatchedProblem match;                        // its indexes name the two sides' problems in Comparison
  double lost_before_s = 0, lost_after_s = 0;  // 0 on a side without it
  double predicted_gain_s = 0;                 // NaN: unpriced, or new
  bool fixed = false;                          // gone, or shrank to half its time at stake or less
  // The program's change (before - after) when this is the one problem fixed; NaN when
  // several were fixed together (then the change is theirs together) or it was not fixed.
  double realised_gain_s = 0;
  double realised_at_problem_s = 0;  // lost before - lost after (NaN for a new problem)
  double tolerance_s = 0;            // of the verdict
  PredictionVerdict verdict = PredictionVerdict::Unpriced;
  double ratio() const;  // the realised gain the verdict judged over the prediction
};

struct RegionChange {
  std::string path;
  SampleChange wall, mpi;  // mean over ranks, per run
  double visits_before = 0, visits_after = 0;
};

// An MPI operation or a call site: time inside its calls, calls and bytes.
struct CallsChange {
  std::string name;   // the operation, or the call site (function (file:line))
  SampleChange time;  // summed over ranks (per rank when the rank counts differ)
  double calls_before = 0, calls_after = 0, bytes_before = 0, bytes_after = 0;
};

struct Comparison {
  std::vector<RunResults> before, after;
  SampleChange program;  // program time, s
  int64_t before_ranks = 0, after_ranks = 0;
  bool per_rank = false;  // the rank counts differ: operations compare per rank
  std::vector<SideProblem> before_problems, after_problems;
  std::vector<ProblemComparison> problems;  // the most time at stake (either side) first
  int fixed_problems = 0;
  // The side's problem a comparison names (its row: kind, where, ranks); null for none.
  const SideProblem *before_of(const ProblemComparison &p) const;
  const SideProblem *after_of(const ProblemComparison &p) const;
  std::vector<RegionChange> regions;    // the largest change of wall time first
  std::vector<CallsChange> operations;  // the largest change of time first
  std::vector<CallsChange> callsites;   // the same
};

Comparison compare_runs(std::vector<RunResults> before, std::vector<RunResults> after);

}  // namespace perfsift::pipeline
