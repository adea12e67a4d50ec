// libFuzzer target for the pipeline file (`perfsift analyze --pipeline`, `perfsift config
// check`): any text must load and plan (config/ parses it against the registry's keys,
// pipeline/stages/registry plans it) or throw config::ConfigError with file:line:col,
// never crash or hang. The collector's configuration goes through the same parser.
// Seeds (corpus/pipeline/): the repository's pipeline examples.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "config/collect_config.h"
#include "config/schema.h"
#include "pipeline/stages/registry.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
std::optional<std::string> no_environment(const std::string &) { return std::nullopt; }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = perfsift::fuzz::scratch_path("fuzz_pipeline", ".toml");
  if (!perfsift::fuzz::write_input(path, data, size)) return 0;
  try {
    const perfsift::config::Values v = perfsift::pipeline::load_pipeline(path, no_environment);
    const auto plan = perfsift::pipeline::plan_pipeline(v);
    PERFSIFT_FUZZ_CHECK(plan.size() >= v.get_list("pipeline.stages").size());
  } catch (const perfsift::config::ConfigError &) {}
  try {
    perfsift::config::load_collect_config(path, no_environment);
  } catch (const perfsift::config::ConfigError &) {}
  return 0;
}
