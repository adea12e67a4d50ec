// The trained message classifier (`perfsift train` writes it, stage `classify` reads it):
// Vetter's C4.5 tree, the normal-class baselines the features are divided by, and the
// platform it was trained on. Saved with Boost.Serialization (text archive). A tree is
// only valid for the machine and MPI configuration that trained it (Vetter, section 3).
#pragma once

#include <string>
#include <vector>

#include "io/trace_model.h"
#include "kernels/c45.h"
#include "kernels/message_class.h"

namespace perfsift::pipeline {

struct Platform {
  std::string mpi_library;   // the MPI library's version line
  std::string host_pattern;  // host names with digits folded: "node[0-9]+" for node001..node128
  bool operator==(const Platform &o) const { return mpi_library == o.mpi_library && host_pattern == o.host_pattern; }
};
Platform platform_of(const io::RunInfo &run);

struct TrainedClassifier {
  kernels::c45::Tree tree;
  kernels::vetter::Normalizer normalizer;
  Platform platform;
  std::string trained_at;  // ISO-8601 time of the training run
  std::string launcher;    // how the microbenchmarks ran, e.g. "mpirun -n 2"
  std::vector<int64_t> cases_per_class;
  double training_accuracy = 0, cross_validation_accuracy = 0;
};

// Throws std::runtime_error naming the file and the fix.
void save_classifier(const std::string &path, const TrainedClassifier &m);
TrainedClassifier load_classifier(const std::string &path);

}  // namespace perfsift::pipeline
