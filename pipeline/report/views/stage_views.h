// How the report shows each stage's group of the results store. The report reads the
// store alone: a view renders a group from what the stage wrote there, so the report
// links no stage. A hook a view leaves empty gets the generic rendering (the group's
// attributes and tables as stored); so does a group no view names.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "io/results_store.h"
#include "pipeline/format/json_writer.h"

namespace perfsift::pipeline {

struct StageView {
  std::string group;  // the stage's group in the results store: its name
  // A few lines for the text report. Optional.
  std::function<void(std::ostream &, const io::ResultsStore &)> text{};
  // Keys added to the group's generic JSON object. Optional.
  std::function<void(JsonWriter &, const io::ResultsStore &)> json{};
  // Replaces the group's generic JSON rendering with a value of the stage's own shape. Optional.
  std::function<void(JsonWriter &, const io::ResultsStore &)> json_value{};
  std::string json_key{};  // the group's key in the JSON report when not its name
};

// A view for every stage, in default pipeline order (the stage registry's; a unit test
// compares the two lists): the HTML page names the stages a run left out from it.
const std::vector<StageView> &stage_views();
const StageView *find_view(const std::string &group);

// The MPI operations of /profile/ops by time, most first. Start-up and shut-down
// (MPI_Init, MPI_Init_thread, MPI_Finalize: is_lifecycle_op, the definition `perfsift
// compare` uses) are apart: not the program's communication, so the shares of the others
// are of the program's MPI time without them.
struct OperationTime {
  std::string op;
  int64_t calls = 0;
  double time_s = 0;  // summed over ranks
  double share = 0;   // of the program's MPI time; 0 for start-up and shut-down
};
struct OperationsByTime {
  std::vector<OperationTime> program, lifecycle;
};
OperationsByTime operations_by_time(const io::Table &ops);

// When the ranks waited for a core (runnable, descheduled) and that explains why the
// replay misses the run by more than the report lets pass: one sentence saying so, for the
// answer; empty otherwise (or without the whatif stage).
std::string disturbed_run_words(const io::ResultsStore &rs);

}  // namespace perfsift::pipeline
