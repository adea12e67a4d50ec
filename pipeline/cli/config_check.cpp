// perfsift config check: a pipeline file parsed and validated, its plan included, as
// `perfsift analyze` would before any work.
#include <cstdio>
#include <string>

#include "config/schema.h"
#include "pipeline/cli/commands.h"
#include "pipeline/stages/registry.h"

namespace perfsift::cli {

int run_config_check(const std::string &path) {
  const auto v = pipeline::load_pipeline(path, config::process_environment());
  std::printf("%s: valid; stages: ", path.c_str());
  const auto &st = v.get_list("pipeline.stages");
  for (size_t i = 0; i < st.size(); ++i) std::printf("%s%s", i ? ", " : "", st[i].c_str());
  std::printf("\n");
  return 0;
}

}  // namespace perfsift::cli
