// The stage registry's plan: requirements met by earlier stages or shared-product
// builders, and a pipeline missing a provider refused at set-up with file:line:col.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "pipeline/report/views/stage_views.h"
#include "pipeline/stages/registry.h"

using namespace perfsift;
using namespace perfsift::pipeline;

namespace {

config::Values pipeline_of(const std::string &toml) {
  return config::parse(
      pipeline_keys(), toml, "p.toml", [](const std::string &) { return std::optional<std::string>{}; },
      pipeline_sections());
}

std::vector<std::string> step_names(const std::vector<PlanStep> &plan) {
  std::vector<std::string> names;
  for (const auto &s : plan) names.push_back(s.stage ? s.stage->name : "build " + std::string(s.builder->product));
  return names;
}

bool provided_by_a_stage(std::string_view product) {
  for (const auto &s : stage_registry())
    if (std::find(s.provides_products.begin(), s.provides_products.end(), product) != s.provides_products.end())
      return true;
  return false;
}

}  // namespace

TEST(StageRegistry, DefaultPipelineBuildsSharedProductsOnceBeforeTheirFirstUser) {
  const auto plan = plan_pipeline(pipeline_of(""));
  // The matched run before profile: its build sums the operations as it reads the
  // events (operation totals), and profile uses them instead of reading the events again.
  const std::vector<std::string> expected = {"build matched run",
                                             "profile",
                                             "dissimilarity",
                                             "disparity",
                                             "rootcause",
                                             "build matched messages",
                                             "waitstates",
                                             "classify",
                                             "build region executions",
                                             "diagnosis",
                                             "whatif",
                                             "bounds",
                                             "domino",
                                             "efficiency"};
  EXPECT_EQ(step_names(plan), expected);
}

// Each built product goes after its last user: the matched messages after whatif (which
// estimates the run's network from them); the matched run after whatif (the replay baseline shares its
// programs on); the region executions after bounds, before the domino search.
TEST(StageRegistry, BuiltProductsAreReleasedAfterTheirLastUser) {
  const auto plan = plan_pipeline(pipeline_of(""));
  std::vector<std::string> released;
  for (const auto &s : plan)
    for (const auto product : s.release_after)
      released.push_back(std::string(product) + " after " + (s.stage ? s.stage->name : "a builder"));
  EXPECT_EQ(released, (std::vector<std::string>{"operation totals after profile", "matched run after whatif",
                                                "matched messages after whatif", "region executions after bounds"}));
}

// A builder's by-product (the matched run's operation totals) moves the builder before a
// stage using it only when the pipeline builds the product anyway; unused, it goes at once.
TEST(StageRegistry, ByProductsMoveABuilderOnlyWhenItRunsAnyway) {
  EXPECT_EQ(step_names(plan_pipeline(pipeline_of("[pipeline]\nstages = [\"profile\", \"dissimilarity\"]\n"))),
            (std::vector<std::string>{"profile", "dissimilarity"}));
  EXPECT_EQ(step_names(plan_pipeline(pipeline_of("[pipeline]\nstages = [\"profile\", \"waitstates\"]\n"))),
            (std::vector<std::string>{"build matched run", "profile", "build matched messages", "waitstates"}));
  const auto plan = plan_pipeline(pipeline_of("[pipeline]\nstages = [\"waitstates\", \"profile\"]\n"));
  EXPECT_EQ(step_names(plan),
            (std::vector<std::string>{"build matched run", "build matched messages", "waitstates", "profile"}));
  std::vector<std::string> released;
  for (const auto &s : plan)
    for (const auto product : s.release_after)
      released.push_back(std::string(product) + " after " +
                         (s.stage ? s.stage->name : "build " + std::string(s.builder->product)));
  EXPECT_EQ(released, (std::vector<std::string>{"matched run after waitstates", "matched messages after waitstates",
                                                "operation totals after profile"}));
  EXPECT_EQ(plan[0].by_products, (std::vector<std::string_view>{"operation totals"}));
  // Nobody uses the by-product: the build does not sum it.
  const auto alone = plan_pipeline(pipeline_of("[pipeline]\nstages = [\"waitstates\"]\n"));
  ASSERT_TRUE(alone[0].builder);
  EXPECT_TRUE(alone[0].by_products.empty());
  for (const auto &s : alone)
    for (const auto product : s.release_after) EXPECT_NE(product, "operation totals");
}

TEST(StageRegistry, BuilderRequirementsComeFirst) {
  const auto plan = plan_pipeline(pipeline_of("[pipeline]\nstages = [\"classify\"]\n"));
  EXPECT_EQ(step_names(plan), (std::vector<std::string>{"build matched run", "build matched messages", "classify"}));
}

TEST(StageRegistry, MissingProviderIsASetUpErrorAtPipelineStages) {
  try {
    plan_pipeline(pipeline_of("[pipeline]\nstages = [\"profile\", \"domino\"]\n"));
    FAIL() << "domino without whatif was accepted";
  } catch (const config::ConfigError &e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("p.toml:2:10: stage 'domino' needs the replay baseline, which 'whatif' provides", 0), 0u)
        << what;
  }
  // The provider after its user does not count.
  EXPECT_THROW(plan_pipeline(pipeline_of("[pipeline]\nstages = [\"bounds\", \"whatif\"]\n")), config::ConfigError);
  EXPECT_NO_THROW(plan_pipeline(pipeline_of("[pipeline]\nstages = [\"whatif\", \"bounds\"]\n")));
}

TEST(StageRegistry, AStageListedTwiceIsASetUpError) {
  try {
    plan_pipeline(pipeline_of("[pipeline]\nstages = [\"profile\", \"whatif\", \"profile\"]\n"));
    FAIL() << "a stage listed twice was accepted";
  } catch (const config::ConfigError &e) {
    EXPECT_EQ(std::string(e.what()),
              "p.toml:2:10: stage 'profile' is listed twice in pipeline.stages; list each stage once");
  }
}

TEST(StageRegistry, EveryRequirementHasAProviderOrABuilder) {
  auto known = [](std::string_view p) {
    for (const auto &b : product_builders())
      if (b.product == p || std::find(b.also_publishes.begin(), b.also_publishes.end(), p) != b.also_publishes.end())
        return true;
    return provided_by_a_stage(p);
  };
  for (const auto &s : stage_registry()) {
    for (auto p : s.requires_products) EXPECT_TRUE(known(p)) << s.name << " requires " << p;
    for (auto p : s.uses_products) EXPECT_TRUE(known(p)) << s.name << " uses " << p;
  }
  // A builder runs before any stage could provide what it needs.
  for (const auto &b : product_builders())
    for (auto p : b.requires_products) EXPECT_FALSE(provided_by_a_stage(p)) << b.product << " requires " << p;
}

// The domino search asks for the baseline replay's state on the runs it resumes candidates
// on (past domino.gather_events, within domino.max_events, one call sequence per rank):
// the plan hands that request to the whatif step, and to no other; without domino in the
// pipeline nobody asks.
TEST(StageRegistry, ThePlanHandsDominosRequestForTheBaselineStateToWhatif) {
  auto whatif_step = [](const std::vector<PlanStep> &plan) -> const PlanStep * {
    for (const auto &s : plan)
      if (s.stage && s.stage->name == "whatif") return &s;
    return nullptr;
  };
  const auto plan = plan_pipeline(pipeline_of("[domino]\ngather_events = 1000\nmax_events = 5000\n"));
  for (const auto &s : plan)
    if (!s.stage || s.stage->name != "whatif") {
      EXPECT_TRUE(s.requests.empty()) << step_names({s})[0];
    }
  const PlanStep *whatif = whatif_step(plan);
  ASSERT_TRUE(whatif);
  // The efficiency stage's request for the ideal network's time comes too (the next test).
  ASSERT_EQ(whatif->requests.size(), 2u);
  const ProductRequest &asked = whatif->requests[0];
  EXPECT_EQ(asked.product, "baseline replay state");
  EXPECT_FALSE(asked.reads_on({1000, 0})) << "a run of at most domino.gather_events is gathered, not resumed";
  EXPECT_TRUE(asked.reads_on({1001, 0}));
  EXPECT_TRUE(asked.reads_on({5000, 0}));
  EXPECT_FALSE(asked.reads_on({5001, 0})) << "a run past domino.max_events is not searched";
  EXPECT_FALSE(asked.reads_on({2000, 1})) << "a threaded run is not searched";

  const auto without = plan_pipeline(pipeline_of("[pipeline]\nstages = [\"profile\", \"whatif\", \"bounds\"]\n"));
  for (const auto &s : without) EXPECT_TRUE(s.requests.empty()) << step_names({s})[0];
}

// The POP efficiencies' transfer efficiency needs the ideal network replayed on every run:
// the efficiency stage asks the whatif step for it, also when the standard questions are off.
TEST(StageRegistry, ThePlanHandsTheEfficiencysRequestForTheIdealNetworkToWhatif) {
  const auto plan = plan_pipeline(pipeline_of(
      "[whatif]\nstandard_questions = false\n[pipeline]\nstages = [\"profile\", \"whatif\", \"efficiency\"]\n"));
  const PlanStep *whatif = nullptr;
  for (const auto &s : plan)
    if (s.stage && s.stage->name == "whatif") whatif = &s;
  ASSERT_TRUE(whatif);
  ASSERT_EQ(whatif->requests.size(), 1u);
  EXPECT_EQ(whatif->requests[0].product, "program replay times");
  EXPECT_TRUE(whatif->requests[0].reads_on({10, 0}));
}

// The report knows the stages only through its views: one per stage, in the registry's order.
TEST(StageRegistry, EveryStageHasAViewInTheSameOrder) {
  std::vector<std::string> stages, views;
  for (const auto &s : stage_registry()) stages.push_back(s.name);
  for (const auto &v : stage_views()) views.push_back(v.group);
  EXPECT_EQ(views, stages);
  for (const auto &name : stages) EXPECT_NE(find_view(name), nullptr) << name;
  EXPECT_EQ(find_view("no such stage"), nullptr);
}
