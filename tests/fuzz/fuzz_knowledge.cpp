// libFuzzer target for Hercule's knowledge files (diagnosis.knowledge: a user's
// directory of model TOMLs): any text must parse against the metrics perfsift computes
// or throw config::ConfigError with file:line:col, and what parses must infer without
// crashing or looping. Seeds (corpus/knowledge/): pipeline/knowledge/*.toml.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "config/schema.h"
#include "pipeline/knowledge/knowledge_base.h"
#include "tests/fuzz/fuzz_util.h"

using namespace perfsift::pipeline;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  for (const auto *known : {&master_worker_metrics(), &wavefront_metrics(), &divide_and_conquer_metrics()}) {
    try {
      const KnowledgeBase kb = parse_knowledge(text, "fuzz.toml", *known);
      std::map<std::string, double> shares, seconds;
      double v = 0.9;
      for (const auto &m : kb.metrics) {
        shares[m.id] = v;
        seconds[m.id] = 10 * v;
        v *= 0.5;
      }
      const Inference inf = infer(kb, shares, seconds, {{"master", "rank 0"}}, "fuzz", 0.01);
      PERFSIFT_FUZZ_CHECK(inf.fired.size() <= kb.nodes.size());
    } catch (const perfsift::config::ConfigError &) {}
  }
  return 0;
}
