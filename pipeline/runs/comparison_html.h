// A comparison of runs as one self-contained HTML page: the comparison's answer, each
// side's own answer side by side, the problems with their status, and each side's
// rank x region computation as heat tables on one colour scale.
#pragma once

#include <string>
#include <vector>

#include "pipeline/runs/run_comparison.h"

namespace perfsift::pipeline {

// before_answer, after_answer: the first run of each side's own answer (its report's
// opening lines). Reads each side's first results store for its rank x region computation.
std::string comparison_html(const Comparison &c, const std::vector<std::string> &before_answer,
                            const std::vector<std::string> &after_answer);

}  // namespace perfsift::pipeline
