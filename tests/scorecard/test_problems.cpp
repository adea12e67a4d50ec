// Merging findings into problems (pipeline/engine/finding.cpp): one fix, one problem.
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline/engine/finding.h"

using namespace perfsift::pipeline;

namespace {

Finding finding(const std::string &kind, const std::string &where, const std::string &ranks, double lost,
                const std::string &question, double gain) {
  Finding f;
  f.kind = kind;
  f.where = where;
  f.ranks = ranks;
  f.lost_s = lost;
  f.question = question;
  f.predicted_gain_s = gain;
  f.stage = kind;
  return f;
}

}  // namespace

// Hercule's master-worker causes master_bottleneck and master_setup are both priced by "a
// master twice as fast at setting tasks up": one change, one gain, one problem (the
// scorecard's task_farm cases reported the same 159 ms twice).
TEST(Problems, OneFixIsOneProblem) {
  const auto problems = merge_into_problems(
      {finding("master-worker", "master_bottleneck (master rank 0)", "5", 0.215, "scale 0.5 callsite 3", 0.159),
       finding("master-worker", "master_setup (master rank 0)", "5", 0.057, "scale 0.5 callsite 3", 0.159),
       finding("load-imbalance", "(program)", "0", 0.215, "balance all", 0.143)},
      nullptr);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].head.where, "master_bottleneck (master rank 0)");
  EXPECT_EQ(problems[0].evidence.size(), 2u);
  EXPECT_EQ(problems[0].evidence[1].where, "master_setup (master rank 0)");
  EXPECT_DOUBLE_EQ(problems[0].head.lost_s, 0.215);
  EXPECT_EQ(problems[1].head.where, "(program)");
}

// The head is the member whose fix gains most; a later finding at a merged member's place
// joins the same problem; findings without a fix are merged by place only.
TEST(Problems, SameFixSamePlaceAndUnpriced) {
  const auto problems =
      merge_into_problems({finding("dissimilarity", "solve", "1-3", 0.05, "balance region solve", 0.04),
                           finding("load-imbalance", "solve", "3", 0.08, "balance region solve", 0.04),
                           finding("disparity", "solve", "3", 0.01, "", std::nan("")),
                           finding("disparity", "io", "all", 0.02, "", std::nan("")),
                           finding("wavefront", "fill_up (2 x 2 pipeline)", "3", 0.02, "", std::nan(""))},
                          nullptr);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].head.ranks, "1-3");  // first of equal gains
  EXPECT_EQ(problems[0].evidence.size(), 3u);
  EXPECT_DOUBLE_EQ(problems[0].head.lost_s, 0.08);
  EXPECT_EQ(problems[1].head.where, "io");
  EXPECT_EQ(problems[2].head.kind, "wavefront");
}
