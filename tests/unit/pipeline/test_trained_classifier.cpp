// The classifier's model file: Boost.Serialization round trip, platform fingerprint,
// one-line errors for files that are not models (pipeline/classifier/trained_classifier.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kernels/message_class.h"
#include "pipeline/classifier/trained_classifier.h"

using namespace perfsift;
namespace vt = kernels::vetter;

namespace {
std::string temp_path(const char *name) { return (std::filesystem::temp_directory_path() / name).string(); }
}  // namespace

TEST(TrainedClassifier, PlatformFoldsHostNumbers) {
  io::RunInfo run;
  run.mpi_library = "Open MPI v4.1.4, package: Debian\nmore lines";
  run.hostname_list = "node001,node017,login2";
  const auto p = pipeline::platform_of(run);
  EXPECT_EQ(p.mpi_library, "Open MPI v4.1.4, package: Debian");
  EXPECT_EQ(p.host_pattern, "login[0-9]+,node[0-9]+");
  run.hostname_list = "node002";
  EXPECT_EQ(pipeline::platform_of(run).host_pattern, "node[0-9]+");  // the same machine type
}

TEST(TrainedClassifier, RoundTripKeepsTreeBaselinesAndPlatform) {
  // A small tree: late sends are long receives.
  auto d = vt::empty_dataset();
  for (int i = 0; i < 40; ++i) {
    const bool late = i % 2;
    const double row[vt::kFeatures] = {0, 1, 0, 0, late ? 30.0 + i : 1.0 + 0.01 * i, 0, 64, 1, late ? -30.0 : 0.1};
    d.x.insert(d.x.end(), row, row + vt::kFeatures);
    d.y.push_back(late ? vt::kLateSend : vt::kNormal);
  }
  pipeline::TrainedClassifier m;
  m.tree = kernels::c45::train(d);
  std::array<double, vt::kFeatures> normal{};
  normal[vt::kMsgSize] = 64, normal[vt::kSendDur] = 1500, normal[vt::kRecvDur] = 2500, normal[vt::kMsgDur] = 3000;
  m.normalizer.add_normal(normal);
  m.normalizer.finish();
  m.platform = {"Open MPI v4.1.4", "node[0-9]+"};
  m.trained_at = "2026-11-22T06:00:00Z";
  m.launcher = "mpirun -n 2";
  m.cases_per_class = {20, 20, 0, 0, 0, 0, 0};
  m.training_accuracy = 1, m.cross_validation_accuracy = 0.975;
  const std::string path = temp_path("perfsift-test.model");
  pipeline::save_classifier(path, m);
  const auto back = pipeline::load_classifier(path);
  EXPECT_EQ(back.platform, m.platform);
  EXPECT_EQ(back.launcher, m.launcher);
  EXPECT_EQ(back.cases_per_class, m.cases_per_class);
  EXPECT_DOUBLE_EQ(back.cross_validation_accuracy, 0.975);
  EXPECT_EQ(back.tree.nodes.size(), m.tree.nodes.size());
  EXPECT_DOUBLE_EQ(back.normalizer.baseline(vt::kRecvDur, 0, 64), 2500);
  for (size_t c = 0; c < d.cases(); ++c) {
    double c1 = 0, c2 = 0;
    EXPECT_EQ(back.tree.classify(&d.x[c * vt::kFeatures], &c1), m.tree.classify(&d.x[c * vt::kFeatures], &c2));
    EXPECT_DOUBLE_EQ(c1, c2);
  }
  std::remove(path.c_str());
}

TEST(TrainedClassifier, NotAModelIsOneLineNamingTheFile) {
  const std::string path = temp_path("perfsift-not-a.model");
  std::ofstream(path) << "[whatif]\nloggps = 1\n";
  try {
    pipeline::load_classifier(path);
    FAIL() << "a TOML file loaded as a model";
  } catch (const std::runtime_error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path + ": line 1: not a perfsift classifier model"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos);
  }
  // The right first line, a damaged archive.
  std::ofstream(path)
      << "perfsift message classifier (Vetter C4.5), format 1\n22 serialization::archive 19 0 0 garbage";
  EXPECT_THROW(pipeline::load_classifier(path), std::runtime_error);
  std::remove(path.c_str());
  EXPECT_THROW(pipeline::load_classifier(path), std::runtime_error);  // missing
}
