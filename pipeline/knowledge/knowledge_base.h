// Hercule's knowledge base as data (pipeline/knowledge/*.toml, compiled in; a user's
// directory may replace or add files): per model the abstract events, the metrics with
// their formulas, the performance factors, and the inference tree whose nodes carry the
// cause texts. The inference walks the tree level by level from the symptom: a node fires
// when its parent fired and its metric's share reaches the node's threshold (default 0:
// every aspect is evaluated, as Hercule does).
#pragma once

#include <map>
#include <cstdint>
#include <string>
#include <vector>

#include "io/trace_store.h"

namespace perfsift::pipeline {

struct KbNode {
  std::string id, parent, metric, text, experiment;
  int level = 1;
  bool cause = false;
  double threshold = 0;  // share of the lost time (the root: always evaluated)
};
struct KbMetric {
  std::string id, formula, meaning;
};
struct KbEvent {
  std::string name, expression, meaning;
  int level = 1;
};
struct KnowledgeBase {
  std::string model, title, symptom, origin;  // origin: built in, or the file
  std::vector<std::string> factors;
  std::vector<KbEvent> events;
  std::vector<KbMetric> metrics;
  std::vector<KbNode> nodes;  // parents before children
};

// Parses one model file; `known_metrics` are those perfsift can compute for it. Throws
// config::ConfigError "file:line:col: ..." naming the bad key and the nearest valid one.
KnowledgeBase parse_knowledge(const std::string &text, const std::string &origin,
                              const std::vector<std::string> &known_metrics);
// The model's knowledge: `dir/<model>.toml` when the directory has one, else the built-in.
KnowledgeBase load_knowledge(const std::string &model, const std::string &dir,
                             const std::vector<std::string> &known_metrics);
// Loads every model this version diagnoses from `dir` (or the built-ins), so a bad file
// fails before the analysis starts.
void check_knowledge(const std::string &dir);
// The metrics perfsift computes for a master-worker program (stage diagnosis).
const std::vector<std::string> &master_worker_metrics();
const std::vector<std::string> &wavefront_metrics();
const std::vector<std::string> &divide_and_conquer_metrics();
// The user's mapping of abstract events to regions (diagnosis.events: "Setup=master_setup",
// "Compute=...", "Divide=...", "Solve=...", "Merge=..."): per event, which of the store's
// regions lie inside one of that name or path. Throws naming the entry and the fix.
std::map<std::string, std::vector<uint8_t>> map_events(const std::vector<std::string> &mapping,
                                                       const std::vector<io::RegionRow> &regions);
// The built-in files' text (generated from pipeline/knowledge/*.toml), by model name.
const std::map<std::string, std::string> &builtin_knowledge();

struct Fired {
  const KbNode *node;
  double share;      // of the lost time
  std::string text;  // placeholders filled
};
struct Inference {
  std::vector<Fired> fired;  // level by level, in file order within a level
  std::string narrative;     // the thesis's report: levels between ===== lines
};
// shares: metric id -> share of the lost time (the root's metric: its value); words:
// placeholder -> text ({share} and {seconds} are per node: seconds[metric]). A node below
// max(its threshold, min_share) does not fire.
Inference infer(const KnowledgeBase &kb, const std::map<std::string, double> &shares,
                const std::map<std::string, double> &seconds, const std::map<std::string, std::string> &words,
                const std::string &header, double min_share = 0);

}  // namespace perfsift::pipeline
