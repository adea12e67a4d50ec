// A stage as the registry describes it: its keys, what it requires, uses and provides,
// its set-up check and its run; and where it writes its results.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "config/schema.h"
#include "io/results_store.h"
#include "io/trace_store.h"
#include "pipeline/engine/context.h"

namespace perfsift::pipeline {

// Where a stage puts its results: a group named after the stage in the results store.
class StageOutput {
 public:
  StageOutput(io::ResultsWriter &writer, std::string stage) : m_writer(writer), m_stage(std::move(stage)) {}
  const std::string &name() const { return m_stage; }
  void attribute(const std::string &name, const io::AttrValue &v) { m_writer.attribute(m_stage, name, v); }
  void table(const std::string &name, const io::Table &t) { m_writer.table(m_stage + "/" + name, t); }
  void table_rows(const std::string &name, const io::Table &mine) { m_writer.table_rows(m_stage + "/" + name, mine); }
  void matrix(const std::string &name, const io::MatrixBlock &mine) { m_writer.matrix(m_stage + "/" + name, mine); }

 private:
  io::ResultsWriter &m_writer;
  std::string m_stage;
};

// A stage: complexity stated in its file's header comment.
struct StageInfo {
  std::string name;
  std::string description;           // one line, for `perfsift stages`
  std::vector<config::KeyDef> keys;  // its [name] table; key names without the prefix
  // Writes the stage's group of the results store; the report shows the group through
  // its view (pipeline/report/views/), from the store alone.
  std::function<void(Context &, const config::Values &, StageOutput &)> run;
  // Products (their kProduct names): needed before the run (a pipeline without a provider
  // is refused at set-up), read when present, and published by the run.
  std::vector<std::string_view> requires_products{}, uses_products{}, provides_products{};
  // Products made on request that this stage reads on some runs only (in uses_products):
  // given the configuration, on which runs. The plan hands each request to the earlier
  // stage providing the product.
  std::function<std::vector<ProductRequest>(const config::Values &)> requests{};
  // Set-up: checks the stage's settings against the store before any stage runs (a wrong
  // name or file stops here, not after the other stages' work). Throws. Optional.
  std::function<void(const config::Values &, const io::TraceStore &)> check{};
};

// A shared product no stage provides, built collectively at the boundary before the
// first stage that requires it (every analysis process runs the same plan, so the
// collectives inside a build always meet).
struct ProductBuilder {
  std::string_view product;
  std::string description;  // for `perfsift stages`
  std::vector<std::string_view> requires_products;
  // Collective; publishes the product, and those of also_publishes a later stage uses
  // (`wanted`: the plan's, PlanStep::by_products).
  std::function<void(Context &, const std::vector<std::string_view> &wanted)> build;
  // Products it can publish along the way (what a scan it makes anyway can also sum): a
  // stage using one gets the builder run before it when the pipeline builds the product
  // anyway, instead of at the first stage that requires it.
  std::vector<std::string_view> also_publishes{};
};

}  // namespace perfsift::pipeline
