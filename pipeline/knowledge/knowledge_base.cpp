// Hercule's knowledge base and inference (see knowledge_base.h).
#include "pipeline/knowledge/knowledge_base.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "config/schema.h"
#include "pipeline/format/text.h"

namespace perfsift::pipeline {

namespace {

std::string at(const std::string &origin, const toml::node &n) {
  const auto &s = n.source();
  return origin + ":" + std::to_string(s.begin.line) + ":" + std::to_string(s.begin.column);
}

// Rejects keys a table must not have, naming the nearest valid one.
void only(const toml::table &t, const std::string &origin, const std::string &what,
          const std::vector<std::string> &keys) {
  for (const auto &[k, v] : t) {
    const std::string key(k.str());
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      throw config::ConfigError(at(origin, v) + ": unknown key '" + key + "' in " + what + " (did you mean '" +
                                config::nearest(key, keys) + "'?)");
  }
}

std::string str(const toml::table &t, const std::string &key, const std::string &origin, bool required) {
  const auto *n = t.get(key);
  if (!n) {
    if (required) throw config::ConfigError(origin + ": '" + key + "' is missing");
    return "";
  }
  if (!n->is_string()) throw config::ConfigError(at(origin, *n) + ": '" + key + "' must be a string");
  return std::string(**n->as_string());
}

}  // namespace

KnowledgeBase parse_knowledge(const std::string &text, const std::string &origin,
                              const std::vector<std::string> &known_metrics) {
  toml::table root;
  try {
    root = toml::parse(text, origin);
  } catch (const toml::parse_error &e) {
    const auto &s = e.source();
    throw config::ConfigError(origin + ":" + std::to_string(s.begin.line) + ":" + std::to_string(s.begin.column) +
                              ": " + std::string(e.description()));
  }
  only(root, origin, "a model file", {"model", "title", "symptom", "factors", "events", "metrics", "nodes"});
  KnowledgeBase kb;
  kb.origin = origin;
  kb.model = str(root, "model", origin, true);
  kb.title = str(root, "title", origin, false);
  kb.symptom = str(root, "symptom", origin, true);
  if (const auto *f = root.get_as<toml::array>("factors"))
    for (const auto &x : *f)
      if (x.is_string()) kb.factors.push_back(std::string(**x.as_string()));
  auto tables = [&](const char *key, auto &&fn) {
    const auto *a = root.get(key);
    if (!a) return;
    if (!a->is_array_of_tables())
      throw config::ConfigError(at(origin, *a) + ": '" + key + "' must be an array of tables ([[" + key + "]])");
    for (const auto &x : *a->as_array()) fn(*x.as_table());
  };
  tables("events", [&](const toml::table &t) {
    only(t, origin, "[[events]]", {"name", "level", "expression", "meaning"});
    kb.events.push_back({str(t, "name", origin, true), str(t, "expression", origin, false),
                         str(t, "meaning", origin, false), static_cast<int>(t["level"].value_or(int64_t{1}))});
  });
  std::set<std::string> metric_ids;
  tables("metrics", [&](const toml::table &t) {
    only(t, origin, "[[metrics]]", {"id", "formula", "meaning"});
    KbMetric m{str(t, "id", origin, true), str(t, "formula", origin, false), str(t, "meaning", origin, false)};
    if (std::find(known_metrics.begin(), known_metrics.end(), m.id) == known_metrics.end())
      throw config::ConfigError(at(origin, *t.get("id")) + ": perfsift cannot compute metric '" + m.id + "' for " +
                                kb.model + " (it computes: " +
                                [&] {
                                  std::string s;
                                  for (const auto &k : known_metrics) s += (s.empty() ? "" : ", ") + k;
                                  return s;
                                }() +
                                ")");
    metric_ids.insert(m.id);
    kb.metrics.push_back(m);
  });
  std::set<std::string> node_ids;
  tables("nodes", [&](const toml::table &t) {
    only(t, origin, "[[nodes]]", {"id", "parent", "level", "metric", "cause", "threshold", "experiment", "text"});
    KbNode n;
    n.id = str(t, "id", origin, true);
    n.parent = str(t, "parent", origin, false);
    n.metric = str(t, "metric", origin, true);
    n.text = str(t, "text", origin, true);
    n.experiment = str(t, "experiment", origin, false);
    n.level = static_cast<int>(t["level"].value_or(int64_t{1}));
    n.cause = t["cause"].value_or(false);
    n.threshold = t["threshold"].value_or(0.0);
    const toml::node &where = *t.get("id");
    if (!metric_ids.count(n.metric))
      throw config::ConfigError(at(origin, where) + ": node '" + n.id + "' uses metric '" + n.metric +
                                "', not defined in [[metrics]]");
    if (!n.parent.empty() && !node_ids.count(n.parent))
      throw config::ConfigError(at(origin, where) + ": node '" + n.id + "' has parent '" + n.parent +
                                "', not defined before it");
    if (n.parent.empty() && !kb.nodes.empty())
      throw config::ConfigError(at(origin, where) + ": node '" + n.id +
                                "' has no parent; only the first node is the root");
    node_ids.insert(n.id);
    kb.nodes.push_back(n);
  });
  if (kb.nodes.empty()) throw config::ConfigError(origin + ": no [[nodes]]: the inference tree is empty");
  return kb;
}

KnowledgeBase load_knowledge(const std::string &model, const std::string &dir,
                             const std::vector<std::string> &known_metrics) {
  if (!dir.empty()) {
    const auto path = std::filesystem::path(dir) / (model + ".toml");
    if (std::filesystem::exists(path)) {
      std::ifstream in(path);
      std::stringstream ss;
      ss << in.rdbuf();
      KnowledgeBase kb = parse_knowledge(ss.str(), path.string(), known_metrics);
      if (kb.model != model)
        throw config::ConfigError(path.string() + ": model = \"" + kb.model + "\", but the file name says " + model);
      return kb;
    }
  }
  const auto &b = builtin_knowledge();
  const auto it = b.find(model);
  if (it == b.end()) throw std::runtime_error("no knowledge base for model '" + model + "'");
  return parse_knowledge(it->second, "built-in " + model + ".toml", known_metrics);
}

const std::vector<std::string> &master_worker_metrics() {
  static const std::vector<std::string> m = {"efficiency", "t_wait", "t_comm",   "t_seq",
                                             "t_w-setup",  "t_w-bn", "t_w-final"};
  return m;
}

const std::vector<std::string> &wavefront_metrics() {
  static const std::vector<std::string> m = {
      "efficiency", "t_wait", "t_comm", "t_pl_fill", "t_pl_empty", "t_pl_handshake", "t_pl_directionchange"};
  return m;
}

const std::vector<std::string> &divide_and_conquer_metrics() {
  static const std::vector<std::string> m = {"efficiency", "t_wait", "t_comm", "t_w-divide", "t_w-solve", "t_w-merge"};
  return m;
}

void check_knowledge(const std::string &dir) {
  load_knowledge("master-worker", dir, master_worker_metrics());
  load_knowledge("wavefront", dir, wavefront_metrics());
  load_knowledge("divide-and-conquer", dir, divide_and_conquer_metrics());
}

std::map<std::string, std::vector<uint8_t>> map_events(const std::vector<std::string> &mapping,
                                                       const std::vector<io::RegionRow> &regions) {
  static const std::vector<std::string> events = {"Setup", "Compute", "Divide", "Solve", "Merge"};
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto &entry : mapping) {
    const auto eq = entry.find('=');
    const std::string event = entry.substr(0, eq), region = eq == std::string::npos ? "" : entry.substr(eq + 1);
    if (eq == std::string::npos || region.empty())
      throw std::runtime_error("diagnosis.events: '" + entry + "' is not EVENT=REGION (e.g. Setup=master_setup)");
    if (std::find(events.begin(), events.end(), event) == events.end())
      throw std::runtime_error("diagnosis.events: unknown event '" + event +
                               "' (events: Setup, Compute, Divide, Solve, Merge; did you mean '" +
                               config::nearest(event, events) + "'?)");
    std::vector<uint8_t> in(regions.size(), 0);
    bool found = false;
    for (size_t r = 0; r < regions.size(); ++r) {
      in[r] = regions[r].path == region || regions[r].name == region;
      found |= in[r] != 0;
    }
    if (!found) {
      std::string names;
      for (size_t r = 0; r < regions.size() && r < 12; ++r) names += (r ? ", " : "") + regions[r].path;
      throw std::runtime_error("diagnosis.events: no region '" + region + "' in the trace store for " + event +
                               " (regions: " + names + (regions.size() > 12 ? ", ..." : "") + "; see perfsift info)");
    }
    // Regions nested inside a mapped one belong to the event too (parents come first).
    for (size_t r = 0; r < regions.size(); ++r) {
      const int32_t parent = regions[r].parent;
      if (!in[r] && parent >= 0 && static_cast<size_t>(parent) < r) in[r] = in[static_cast<size_t>(parent)];
    }
    auto &slot = out[event];
    if (slot.empty())
      slot = in;
    else
      for (size_t r = 0; r < in.size(); ++r) slot[r] |= in[r];
  }
  return out;
}

Inference infer(const KnowledgeBase &kb, const std::map<std::string, double> &shares,
                const std::map<std::string, double> &seconds, const std::map<std::string, std::string> &words,
                const std::string &header, double min_share) {
  Inference out;
  auto fill = [&](std::string t, const KbNode &n, double share) {
    std::map<std::string, std::string> w = words;
    w["share"] = format_percent(share);
    const auto s = seconds.find(n.metric);
    w["seconds"] = s == seconds.end() ? "-" : format_seconds(s->second);
    std::string r;
    for (size_t i = 0; i < t.size();) {
      const size_t close = t[i] == '{' ? t.find('}', i) : std::string::npos;
      const auto hit = close == std::string::npos ? w.end() : w.find(t.substr(i + 1, close - i - 1));
      if (hit != w.end()) {
        r += hit->second;
        i = close + 1;
      } else {
        r += t[i++];
      }
    }
    return r;
  };
  std::set<std::string> fired_ids;
  std::ostringstream nar;
  nar << "Begin diagnosing " << header << " ...\n";
  for (int l = 1; l <= 16; ++l) {
    std::vector<Fired> level_fired;
    std::string experiment;  // the level's experiment: the first of its nodes that states one
    for (const KbNode &n : kb.nodes) {
      if (n.level != l) continue;
      if (!n.parent.empty() && !fired_ids.count(n.parent)) continue;
      const auto s = shares.find(n.metric);
      const double share = s == shares.end() ? 0 : s->second;
      if (experiment.empty() && !n.experiment.empty()) experiment = fill(n.experiment, n, share);
      if (!n.parent.empty() && (share <= 0 || share < std::max(n.threshold, min_share))) continue;
      level_fired.push_back({&n, share, fill(n.text, n, share)});
    }
    if (level_fired.empty()) break;  // nothing fired here: no deeper level can
    nar << "=====\n";
    if (!experiment.empty()) nar << "Level " << l << " experiment - " << experiment << ".\n";
    for (const Fired &f : level_fired) {
      fired_ids.insert(f.node->id);
      nar << "-----\n" << f.text << "\n";
      out.fired.push_back(f);
    }
  }
  nar << "=====\nDiagnosing finished...\n";
  out.narrative = nar.str();
  return out;
}

}  // namespace perfsift::pipeline
