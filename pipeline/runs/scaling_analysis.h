// How will it scale? Runs of one program at several rank counts: per run the POP
// efficiencies, against the smallest run computation scalability and global efficiency,
// per region, per problem and for the program an Extra-P-style model of its time as a
// function of the rank count, and the predictions at the counts asked for (docs/scaling-models.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/scaling_model.h"
#include "pipeline/runs/run_results.h"

namespace perfsift::pipeline {

// A run's /efficiency group (the POP tree), when its results store has one.
struct PopEfficiency {
  bool present = false;
  double load_balance = 0, serialisation = 0, transfer = 0, communication = 0, parallel = 0;
  double runtime_s = 0, useful_sum_s = 0, useful_max_s = 0, ideal_network_runtime_s = 0;
  int64_t ranks = 0;
  // Against the smallest run (POP): useful computation summed over ranks, reference's over
  // this run's (weak scaling: the reference's scaled by ranks / reference ranks); global =
  // parallel x computation scalability. NaN without both runs' groups.
  double computation_scalability = 0, global = 0;
};

struct ScalingRun {
  RunResults results;
  PopEfficiency efficiency;
  double computation_s = 0;  // self computation summed over ranks (/profile/ranks comp_s)
};

// One quantity's measurements across the runs and its model.
struct ScaledQuantity {
  std::string name;                       // region path; a problem's "kind at where"
  std::string place;                      // a problem's identity (kind and place); empty for regions
  int64_t pace_rank = -1;                 // the rank that set the pace in the largest run (regions)
  std::vector<double> ranks, measured_s;  // one per run that has it (0 where a problem is absent)
  kernels::scaling::Model model;
  std::map<int64_t, double> predicted_s;  // per target rank count
};

struct ScalingAnalysis {
  std::vector<ScalingRun> runs;    // by rank count, the smallest (the reference) first
  std::string program;             // the program's name (its command's first word, base name)
  std::string scaling;             // "weak" or "strong", from the work per rank (Hercule's rule)
  double work_per_rank_ratio = 0;  // the largest run's computation per rank over the reference's
  size_t points = 0;               // distinct rank counts
  std::vector<int64_t> targets;    // the rank counts predicted for, ascending
  // The program time (MPI_Init's end to MPI_Finalize's start); its predictions are the
  // top-level regions' summed with the rest's (one term seldom fits a sum of terms).
  ScaledQuantity program_time;
  ScaledQuantity rest;                   // the program time beyond the top-level regions' pace times
  std::vector<ScaledQuantity> regions;   // by predicted time at the largest target, most first
  std::vector<ScaledQuantity> problems;  // by predicted time at stake there, most first
  std::string relative;                  // what grew most against the reference, as a sentence
  int64_t largest_target() const { return targets.empty() ? 0 : targets.back(); }
  // The program time at p as predicted: the top-level regions' models and the rest's summed.
  double program_at(double p) const;
};

// io::Error (one line) for fewer than two runs, runs of different programs or of one rank
// count only. `targets` empty: twice the largest measured count.
ScalingAnalysis analyse_scaling(std::vector<RunResults> runs, std::vector<int64_t> targets);

// The answer first: the region that breaks first at the largest target, what the program
// takes there, how far the models can be trusted, what grew.
std::vector<std::string> scaling_answer(const ScalingAnalysis &a);
std::string scaling_text(const ScalingAnalysis &a);
std::string scaling_json(const ScalingAnalysis &a);
// One self-contained page: the efficiency table across runs, one plot per top region.
std::string scaling_html(const ScalingAnalysis &a);

}  // namespace perfsift::pipeline
