// Reports rendered from a results store: the text report `perfsift analyze` prints
// and the JSON report. `perfsift report` renders the same file again, so both
// commands always say the same thing.
#pragma once

#include "io/atomic_file.h"

#include <cstdint>
#include <string>
#include <vector>

#include "io/results_store.h"

namespace perfsift::pipeline {

struct ReportLimits {
  int64_t top = -1;            // findings in the text report; -1: as stored by analyze
  int64_t json_max_rows = -1;  // longer tables become pointers into the file; -1: as stored
  int64_t width = -1;          // columns of the text report (findings' causes wrap to two lines); -1: as stored
};

std::string render_text(const io::ResultsStore &results, const ReportLimits &limits = {});
std::string render_json(const io::ResultsStore &results, const ReportLimits &limits = {});
// The answer first: at most four lines on the top finding — the problem, where, which ranks
// carry it, what it costs and what its fix buys, and why. The text report and the HTML
// page open with them.
std::vector<std::string> answer_lines(const io::ResultsStore &results, size_t width = 100);
// The /problems table as the reports show it: without the identity columns.
io::Table problems_for_readers(const io::ResultsStore &results);
// One self-contained HTML page (pipeline/report/html_report.cpp).
std::string render_html(const io::ResultsStore &results);

// Writes `text` to `path` through a temporary name (never half-written).
using io::write_file_atomically;

}  // namespace perfsift::pipeline
