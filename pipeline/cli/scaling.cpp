// perfsift scaling: runs of one program at several rank counts turned into models of each
// region's time, the POP efficiencies across the runs, and predictions at larger counts
// (docs/scaling-models.md).
#include <mpi.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/results_store.h"
#include "pipeline/cli/commands.h"
#include "pipeline/runs/scaling_analysis.h"

namespace perfsift::cli {

int run_scaling(const ScalingOptions &o) {
  if (o.runs.size() < 2) {
    std::fprintf(stderr,
                 "perfsift: scaling needs two or more runs of one program at different rank counts (%zu given)\n",
                 o.runs.size());
    return 2;
  }
  for (const int64_t p : o.at)
    if (p < 1) {
      std::fprintf(stderr, "perfsift: --at %lld: a rank count is 1 or more\n", static_cast<long long>(p));
      return 2;
    }
  // MPI only when an input must be analysed first: results stores alone are a few reads.
  std::set<std::string> ready;
  for (const auto &input : o.runs)
    if (is_results_store(input)) ready.insert(input);
  const bool analyses = ready.size() < std::set<std::string>(o.runs.begin(), o.runs.end()).size();
  int me = 0;
  if (analyses) {
    ensure_mpi();
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
  }
  std::vector<pipeline::RunResults> runs;
  for (const auto &input : o.runs) {
    const std::string results = ready.count(input) ? input : results_of(input, o.config, me);
    if (results.empty()) return 2;
    runs.push_back(pipeline::read_run_results(results));
  }
  const pipeline::ScalingAnalysis a = pipeline::analyse_scaling(std::move(runs), o.at);
  if (me == 0) {
    std::fputs(pipeline::scaling_text(a).c_str(), stdout);
    std::fflush(stdout);
    if (!o.json.empty()) io::write_file_atomically(o.json, pipeline::scaling_json(a));
    if (!o.html.empty()) io::write_file_atomically(o.html, pipeline::scaling_html(a));
  }
  return 0;
}

}  // namespace perfsift::cli
