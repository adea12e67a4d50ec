// A comparison of runs as text (the answer first) and JSON (docs/compare.md).
#pragma once

#include <string>
#include <vector>

#include "pipeline/runs/run_comparison.h"

namespace perfsift::pipeline {

// The answer, sentence by sentence: the program time and its noise, then at most four
// problems (the most at stake first), then what the table holds besides.
std::vector<std::string> comparison_answer(const Comparison &c);
std::string comparison_text(const Comparison &c);
std::string comparison_json(const Comparison &c);

// The continuous-integration gate: one line naming the quantity when AFTER's program time
// is slower by more than max_share (0.05: 5 %) and, where the runs tell their noise, beyond
// it; empty otherwise.
std::string slower_than_allowed(const Comparison &c, double max_share);

}  // namespace perfsift::pipeline
