// The one list of stages and builders. A new stage is a file defining `StageInfo
// x_stage()` and a line here; its keys, help, defaults and products then reach the
// pipeline file, `perfsift stages` and `perfsift config check` without further code.
#include "pipeline/stages/registry.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

namespace perfsift::pipeline {

StageInfo profile_stage();
StageInfo dissimilarity_stage();
StageInfo disparity_stage();
StageInfo rootcause_stage();
StageInfo waitstates_stage();
StageInfo classify_stage();
StageInfo diagnosis_stage();
StageInfo whatif_stage();
StageInfo bounds_stage();
StageInfo domino_stage();
StageInfo efficiency_stage();

ProductBuilder matched_run_builder();        // pipeline/replay/replay_model.cpp
ProductBuilder matched_messages_builder();   // pipeline/replay/matched_messages.cpp
ProductBuilder region_executions_builder();  // pipeline/replay/replay_model.cpp

const std::vector<StageInfo> &stage_registry() {
  static const std::vector<StageInfo> stages = {profile_stage(),   dissimilarity_stage(), disparity_stage(),
                                                rootcause_stage(), waitstates_stage(),    classify_stage(),
                                                diagnosis_stage(), whatif_stage(),        bounds_stage(),
                                                domino_stage(),    efficiency_stage()};
  return stages;
}

const std::vector<ProductBuilder> &product_builders() {
  static const std::vector<ProductBuilder> builders = {matched_run_builder(), matched_messages_builder(),
                                                       region_executions_builder()};
  return builders;
}

// ---------------------------------------------------------------- the pipeline file

namespace {

std::string env_name(const std::string &key) {
  std::string s = "PERFSIFT_";
  for (char c : key) s += c == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const std::vector<std::string> kGeneralSections = {"pipeline", "analysis", "report"};

}  // namespace

const StageInfo *find_stage(const std::string &name) {
  for (const auto &s : stage_registry())
    if (s.name == name) return &s;
  return nullptr;
}

const std::vector<config::KeyDef> &pipeline_keys() {
  static const std::vector<config::KeyDef> keys = [] {
    using config::Type;
    std::vector<std::string> all;
    for (const auto &s : stage_registry()) all.push_back(s.name);
    std::vector<config::KeyDef> k = {
        {"pipeline.stages", Type::StringList, all, "", "stages to run, in order (`perfsift stages` lists them)"},
        {"analysis.rows_per_read", Type::Int, int64_t{1} << 18, "PERFSIFT_ROWS_PER_READ",
         "events per read when streaming the store (memory per analysis rank is about 150 bytes per row)", 65536, 1e9},
        {"analysis.threads", Type::Int, int64_t{0}, "PERFSIFT_THREADS",
         "OpenMP threads per analysis rank; 0: OMP_NUM_THREADS, else the cores a rank may use shared among the node's "
         "analysis ranks",
         0, 4096},
        {"report.top", Type::Int, int64_t{10}, "PERFSIFT_REPORT_TOP", "findings shown in the text report", 1, 1000},
        {"report.json_max_rows", Type::Int, int64_t{1000}, "",
         "tables longer than this appear in the JSON report as a pointer into the results file", 0, 1e9},
        {"report.width", Type::Int, int64_t{100}, "PERFSIFT_REPORT_WIDTH",
         "columns of the text report: findings' causes wrap to two lines of it", 60, 1000},
    };
    for (const auto &s : stage_registry())
      for (auto d : s.keys) {
        d.key = s.name + "." + d.key;
        if (d.env.empty()) d.env = env_name(d.key);
        k.push_back(std::move(d));
      }
    return k;
  }();
  return keys;
}

std::vector<std::string> pipeline_sections() {
  std::vector<std::string> s = kGeneralSections;
  for (const auto &st : stage_registry()) s.push_back(st.name);
  return s;
}

namespace {

const ProductBuilder *builder_of(std::string_view product) {
  for (const auto &b : product_builders())
    if (b.product == product) return &b;
  return nullptr;
}

// The stages (in registry order) that provide `product`, for the set-up error's hint.
std::string providers_of(std::string_view product) {
  std::string names;
  for (const auto &s : stage_registry())
    if (std::find(s.provides_products.begin(), s.provides_products.end(), product) != s.provides_products.end())
      names += (names.empty() ? "'" : " or '") + s.name + "'";
  return names;
}

// Each stage's requests for products made on request go to the last stage before it that
// provides the product; a request no earlier stage can answer is dropped (the product is
// then never there, as for any product a stage uses when present).
void ask_providers(const config::Values &cfg, std::vector<PlanStep> &plan) {
  for (size_t j = 0; j < plan.size(); ++j) {
    if (!plan[j].stage || !plan[j].stage->requests) continue;
    for (auto &request : plan[j].stage->requests(cfg))
      for (size_t i = j; i-- > 0;) {
        const StageInfo *provider = plan[i].stage;
        if (!provider) continue;
        const auto &made = provider->provides_products;
        if (std::find(made.begin(), made.end(), request.product) == made.end()) continue;
        plan[i].requests.push_back(std::move(request));
        break;
      }
  }
}

}  // namespace

std::vector<PlanStep> plan_pipeline(const config::Values &cfg) {
  std::vector<PlanStep> plan;
  std::set<std::string_view> published;
  // Builders first run their own requirements, depth first; a builder never requires a
  // stage's product (checked by the registry's unit test).
  std::function<void(std::string_view)> build = [&](std::string_view product) {
    if (published.count(product)) return;
    const ProductBuilder *b = builder_of(product);
    PERFSIFT_CHECK(b, "no builder for '" + std::string(product) + "'");
    for (auto need : b->requires_products) build(need);
    plan.push_back({b, nullptr});
    published.insert(product);
    published.insert(b->also_publishes.begin(), b->also_publishes.end());
  };
  const auto stages = cfg.get_list("pipeline.stages");
  // The builders' products some stage of the pipeline requires: built in any case.
  std::set<std::string_view> built_anyway;
  std::function<void(std::string_view)> note_built = [&](std::string_view product) {
    const ProductBuilder *b = builder_of(product);
    if (!b || !built_anyway.insert(product).second) return;
    for (auto need : b->requires_products) note_built(need);
  };
  for (const auto &name : stages)
    if (const StageInfo *stage = find_stage(name))
      for (auto need : stage->requires_products) note_built(need);
  std::set<std::string> seen;
  for (const auto &name : stages) {
    const StageInfo *stage = find_stage(name);
    PERFSIFT_CHECK(stage, "unknown stage '" + name + "' passed the pipeline file's check");
    // Each stage writes its own group of the results file, once.
    if (!seen.insert(name).second)
      throw config::ConfigError(cfg.where("pipeline.stages") + ": stage '" + name +
                                "' is listed twice in pipeline.stages; list each stage once");
    // A product this stage uses that a builder publishes along the way: that builder runs
    // now when the pipeline runs it anyway (the stage then reads nothing twice).
    for (auto use : stage->uses_products)
      for (const auto &b : product_builders())
        if (!published.count(use) && built_anyway.count(b.product) &&
            std::find(b.also_publishes.begin(), b.also_publishes.end(), use) != b.also_publishes.end())
          build(b.product);
    for (auto need : stage->requires_products) {
      if (published.count(need)) continue;
      if (builder_of(need)) {
        build(need);
        continue;
      }
      throw config::ConfigError(cfg.where("pipeline.stages") + ": stage '" + name + "' needs the " + std::string(need) +
                                ", which " + providers_of(need) + " provides: add " + providers_of(need) + " before '" +
                                name + "' in pipeline.stages (`perfsift stages` lists what each stage needs)");
    }
    plan.push_back({nullptr, stage});
    for (auto made : stage->provides_products) published.insert(made);
  }
  ask_providers(cfg, plan);
  // Only builders' products: stages' products (findings' inputs) are read after the plan.
  auto needs = [](const PlanStep &s, std::string_view product) {
    const auto &req = s.builder ? s.builder->requires_products : s.stage->requires_products;
    const bool used = s.stage && std::find(s.stage->uses_products.begin(), s.stage->uses_products.end(), product) !=
                                     s.stage->uses_products.end();
    return used || std::find(req.begin(), req.end(), product) != req.end();
  };
  for (size_t b = 0; b < plan.size(); ++b) {
    if (!plan[b].builder) continue;
    const std::string_view main = plan[b].builder->product;
    std::vector<std::string_view> products = {main};
    products.insert(products.end(), plan[b].builder->also_publishes.begin(), plan[b].builder->also_publishes.end());
    for (const auto product : products) {
      size_t last = b;
      for (size_t j = b + 1; j < plan.size(); ++j)
        if (needs(plan[j], product)) last = j;
      if (product != main) {
        if (last == b) continue;  // a by-product no later step uses: not made at all
        plan[b].by_products.push_back(product);
      }
      plan[last].release_after.push_back(product);
    }
  }
  return plan;
}

config::Values load_pipeline(const std::string &path, const config::EnvLookup &env) {
  config::Values v = path.empty() ? config::parse(pipeline_keys(), "", "", env, pipeline_sections())
                                  : config::parse_file(pipeline_keys(), path, env, pipeline_sections());
  std::vector<std::string> names;
  for (const auto &s : stage_registry()) names.push_back(s.name);
  for (const auto &s : v.get_list("pipeline.stages"))
    if (!find_stage(s))
      throw config::ConfigError(v.where("pipeline.stages") + ": unknown stage '" + s +
                                "' in pipeline.stages; did you mean '" + config::nearest(s, names) +
                                "'? (`perfsift stages` lists every stage)");
  plan_pipeline(v);
  return v;
}

}  // namespace perfsift::pipeline
