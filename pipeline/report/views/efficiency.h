// The POP efficiencies (the efficiency stage's group) in the reports: each factor with the
// problem that costs it most, when it is below what POP reads as acceptable.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "io/results_store.h"

namespace perfsift::pipeline {

// POP reads an efficiency of at least 0.8 as acceptable: no problem is named for it.
inline constexpr double kAcceptableEfficiency = 0.8;

struct EfficiencyFactor {
  std::string key;    // its attribute in /efficiency: "load_balance", ...
  std::string label;  // in prose: "load balance", ...
  double value;       // NaN: not computable
  // Below kAcceptableEfficiency: the problem that costs it most (1-based rank in
  // /problems) and its words; none when no problem of the factor's family was found.
  std::optional<size_t> problem;
  std::string problem_words;
};

// The five factors, parallel first; empty when the store has no /efficiency group.
std::vector<EfficiencyFactor> efficiency_factors(const io::ResultsStore &rs);

// The text report's block, after the answer: a line of the factors, one per factor below
// 0.8 naming its problem, the regions least efficient, and the note; empty without the group.
std::vector<std::string> efficiency_lines(const io::ResultsStore &rs, size_t width);

}  // namespace perfsift::pipeline
