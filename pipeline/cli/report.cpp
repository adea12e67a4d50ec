// perfsift report: a results store rendered again as text, JSON or HTML, as
// `perfsift analyze` rendered it (the reports read the results store alone).
#include <cstdio>
#include <string>

#include "io/results_store.h"
#include "pipeline/cli/commands.h"
#include "pipeline/report/report.h"

namespace perfsift::cli {

int run_report(const ReportOptions &o) {
  io::ResultsStore results(o.results);
  std::string text;
  if (o.format == "json")
    text = pipeline::render_json(results);
  else if (o.format == "html")
    text = pipeline::render_html(results);
  else
    text = pipeline::render_text(results);
  if (o.output.empty())
    std::fputs(text.c_str(), stdout);
  else
    pipeline::write_file_atomically(o.output, text);
  return 0;
}

}  // namespace perfsift::cli
