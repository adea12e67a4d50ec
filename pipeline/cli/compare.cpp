// perfsift compare: did the fix pay? Two runs (or two sets of runs) of one program, their
// problems matched by identity and each fixed problem's predicted gain set against the
// rerun (docs/compare.md).
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "io/otf2_export.h"
#include "io/otf2_import.h"
#include "io/results_store.h"
#include "io/trace_model.h"
#include "io/trace_store.h"
#include "pipeline/cli/commands.h"
#include "pipeline/report/report.h"
#include "pipeline/runs/comparison_html.h"
#include "pipeline/runs/comparison_report.h"

namespace fs = std::filesystem;

namespace perfsift::cli {

namespace {

// The first run of a side's own answer, as its report opens.
std::vector<std::string> own_answer(const std::vector<pipeline::RunResults> &side) {
  if (side.empty()) return {};
  const io::ResultsStore rs(side.front().path);
  return pipeline::answer_lines(rs);
}

bool valid_sides(const CompareOptions &o, std::vector<std::string> &before, std::vector<std::string> &after) {
  if (!o.runs.empty() && (!o.before.empty() || !o.after.empty())) {
    std::fprintf(stderr, "perfsift: compare takes BEFORE AFTER or --before ... --after ..., not both\n");
    return false;
  }
  if (!o.runs.empty() && o.runs.size() != 2) {
    std::fprintf(stderr,
                 "perfsift: compare takes two runs, BEFORE AFTER (%zu given); several runs per side: "
                 "--before A1 A2 --after B1 B2\n",
                 o.runs.size());
    return false;
  }
  before = o.runs.empty() ? o.before : std::vector<std::string>{o.runs[0]};
  after = o.runs.empty() ? o.after : std::vector<std::string>{o.runs[1]};
  if (before.empty() || after.empty()) {
    std::fprintf(stderr, "perfsift: compare needs a run on each side: BEFORE AFTER, or --before ... --after ...\n");
    return false;
  }
  return true;
}

}  // namespace

bool is_results_store(const std::string &input) {
  return !io::looks_like_otf2(input) && fs::exists(input) && io::hdf5_store_format(input) == io::kResultsFormat;
}

std::string results_of(const std::string &input, const std::string &config, int me) {
  if (!io::looks_like_otf2(input)) {
    if (!fs::exists(input))
      throw io::Error(input + ": no such file (results stores, trace stores or OTF2 archives are taken)");
    const std::string format = io::hdf5_store_format(input);
    if (format != io::kTraceStoreFormat)
      throw io::Error(input + ": not a perfsift results store, trace store or OTF2 archive (format '" + format + "')");
  }
  AnalyzeOptions a;
  a.store = input;
  a.config = config;
  a.output = default_results(input);
  a.print_report = false;
  std::error_code ec;
  if (fs::exists(a.output, ec) && fs::last_write_time(a.output, ec) >= fs::last_write_time(input, ec) && !ec &&
      config.empty() && io::hdf5_store_format(a.output) == io::kResultsFormat) {
    if (me == 0) std::fprintf(stderr, "perfsift: %s: using its results %s\n", input.c_str(), a.output.c_str());
    return a.output;
  }
  if (me == 0) std::fprintf(stderr, "perfsift: %s: analysing it into %s\n", input.c_str(), a.output.c_str());
  return run_analyze_input(a) == 0 ? a.output : "";
}

int run_compare(const CompareOptions &o) {
  std::vector<std::string> before_inputs, after_inputs;
  if (!valid_sides(o, before_inputs, after_inputs)) return 2;
  // MPI only when an input must be analysed first: results stores alone are a few reads.
  std::set<std::string> ready;  // the inputs that are results stores
  bool analyses = false;
  for (const auto *side : {&before_inputs, &after_inputs})
    for (const auto &input : *side) {
      if (is_results_store(input))
        ready.insert(input);
      else
        analyses = true;
    }
  int me = 0;
  if (analyses) {
    ensure_mpi();
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
  }
  std::vector<pipeline::RunResults> before, after;
  for (auto *side : {&before_inputs, &after_inputs})
    for (const auto &input : *side) {
      const std::string results = ready.count(input) ? input : results_of(input, o.config, me);
      if (results.empty()) return 2;
      (side == &before_inputs ? before : after).push_back(pipeline::read_run_results(results));
    }
  const pipeline::Comparison c = pipeline::compare_runs(std::move(before), std::move(after));
  int rc = 0;
  if (me == 0) {
    std::fputs(pipeline::comparison_text(c).c_str(), stdout);
    std::fflush(stdout);
    if (!o.json.empty()) pipeline::write_file_atomically(o.json, pipeline::comparison_json(c));
    if (!o.html.empty())
      pipeline::write_file_atomically(o.html, pipeline::comparison_html(c, own_answer(c.before), own_answer(c.after)));
    if (o.fail_if_slower_pct >= 0) {
      const std::string slower = pipeline::slower_than_allowed(c, o.fail_if_slower_pct / 100);
      if (!slower.empty()) {
        std::fprintf(stderr, "perfsift: %s\n", slower.c_str());
        rc = 1;
      }
    }
  }
  if (analyses) MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

}  // namespace perfsift::cli
