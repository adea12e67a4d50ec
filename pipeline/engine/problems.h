// The run's problems, from its findings to the results store: merged (finding.h), the
// non-problems set aside, ranked, and written as /problems (one row per problem, with its
// typed identity), /evidence (what each method saw of each) and /notes.
#pragma once

#include <vector>

#include "io/results_store.h"
#include "pipeline/engine/context.h"
#include "pipeline/engine/finding.h"

namespace perfsift::pipeline {

// Problems ranked by predicted gain (priced first), then time at stake; ties by kind and place.
void rank_problems(std::vector<Problem> &problems);

io::Table problems_table(const std::vector<Problem> &problems);
io::Table evidence_table(const std::vector<Problem> &problems);
io::Table notes_table(const std::vector<Note> &notes);

// The context's findings and bottlenecks (with their root causes) as ranked problems,
// into /problems, /evidence and /notes; the run's warnings into the root's attributes.
void write_problems(io::ResultsWriter &writer, Context &ctx);

}  // namespace perfsift::pipeline
