// perfsift stages: every stage with its description, products and keys, the shared
// products' builders, and the pipeline file's general sections, from the registry.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "config/schema.h"
#include "pipeline/cli/commands.h"
#include "pipeline/stages/registry.h"

namespace perfsift::cli {

namespace {

std::string joined(const std::vector<std::string_view> &names) {
  std::string s;
  for (auto n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

}  // namespace

int run_stages() {
  for (const auto &s : pipeline::stage_registry()) {
    std::printf("%s\n    %s\n", s.name.c_str(), s.description.c_str());
    if (!s.requires_products.empty()) std::printf("    requires: %s\n", joined(s.requires_products).c_str());
    if (!s.uses_products.empty()) std::printf("    uses when present: %s\n", joined(s.uses_products).c_str());
    if (!s.provides_products.empty()) std::printf("    provides: %s\n", joined(s.provides_products).c_str());
    std::vector<config::KeyDef> keys;
    for (const auto &d : pipeline::pipeline_keys())
      if (d.key.rfind(s.name + ".", 0) == 0) keys.push_back(d);
    if (keys.empty()) std::printf("  (no keys)\n");
    std::printf("%s\n", config::describe(keys).c_str());
  }
  std::printf(
      "shared products (built before the first stage that requires them, or, when a stage requires them anyway, "
      "before an earlier stage that uses what their build also publishes)\n");
  for (const auto &b : pipeline::product_builders()) {
    std::printf("  %s%s%s\n    %s\n", std::string(b.product).c_str(), b.requires_products.empty() ? "" : ", from the ",
                joined(b.requires_products).c_str(), b.description.c_str());
    if (!b.also_publishes.empty()) std::printf("    also publishes: %s\n", joined(b.also_publishes).c_str());
  }
  std::printf("general sections\n");
  std::vector<config::KeyDef> general;
  for (const auto &d : pipeline::pipeline_keys())
    if (!pipeline::find_stage(d.key.substr(0, d.key.find('.')))) general.push_back(d);
  std::printf("%s", config::describe(general).c_str());
  return 0;
}

}  // namespace perfsift::cli
