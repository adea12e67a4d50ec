// The rootcause stage in the reports: the rough-set attributes, cores and reducts.
#include <ostream>
#include <set>

#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

// "a + b" -> {a, b}; "(none needed)" -> {}.
std::vector<std::string> split(const std::string &s, const std::string &sep) {
  std::vector<std::string> out;
  if (s.empty() || s == "(none needed)") return out;
  size_t a = 0;
  for (size_t b; (b = s.find(sep, a)) != std::string::npos; a = b + sep.size()) out.push_back(s.substr(a, b - a));
  out.push_back(s.substr(a));
  return out;
}

void rootcause_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("rootcause");
  const auto dropped = attr_or<std::vector<std::string>>(a, "dropped", {});
  os << "\nRoot causes (rough sets):";
  if (!dropped.empty()) os << " " << dropped.size() << " attribute(s) lack data";
  os << "\n";
  // The attributes used and those lacking data (each one's reason is in the results,
  // rootcause attribute `dropped`), wrapped to the report's width.
  std::string used, lacking;
  for (const auto &u : attr_or<std::vector<std::string>>(a, "attributes", {})) used += (used.empty() ? "" : ", ") + u;
  for (const auto &d : dropped) lacking += (lacking.empty() ? "" : ", ") + d.substr(0, d.find(" ("));
  for (const auto &w : wrap("attributes: " + (used.empty() ? std::string("-") : used), 96, 3)) os << "  " << w << "\n";
  if (!lacking.empty())
    for (const auto &w : wrap("lacking data: " + lacking, 96, 3)) os << "  " << w << "\n";
  for (const char *kind : {"dissimilarity", "disparity"}) {
    const std::string k = kind;
    const auto reducts = attr_or<std::vector<std::string>>(a, k + "_reducts", {});
    if (reducts.empty()) continue;
    std::string core;
    for (const auto &c : attr_or<std::vector<std::string>>(a, k + "_core", {})) core += (core.empty() ? "" : ", ") + c;
    std::string all;
    for (const auto &r : reducts) all += (all.empty() ? "" : " | ") + r;
    if (reducts.size() == 1 && reducts[0] == "(none needed)")
      os << "  " << k << ", all regions together: no recorded attribute separates the decisions\n";
    else
      os << "  " << k << ", all regions together: core {" << core << "}, reducts (the paper's \"core attributions\") "
         << clip(all, 50) << "\n";
    // Each bottleneck's own table: what its finding says as its root cause.
    if (!has_child(rs, "rootcause", k + "_per_region")) continue;
    const auto per = rs.table("rootcause/" + k + "_per_region");
    const auto &path = column<std::string>(per, "path"), &causes = column<std::string>(per, "causes");
    for (size_t i = 0; i < path.size() && i < causes.size() && i < 5; ++i)
      for (const auto &w : wrap("at " + clip(path[i], 40) + ": " + causes[i], 94, 2)) os << "    " << w << "\n";
  }
}

void rootcause_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto a = rs.attributes("rootcause");
  std::set<std::string> groups;
  for (const auto &c : rs.children("rootcause")) groups.insert(c.name);
  for (const char *kind : {"dissimilarity", "disparity"}) {
    const std::string k = kind;
    if (!groups.count(k + "_table")) continue;
    j.key(k).begin_object();
    j.key("core").values(attr_or<std::vector<std::string>>(a, k + "_core", {}));
    j.key("reducts").begin_array();
    for (const auto &r : attr_or<std::vector<std::string>>(a, k + "_reducts", {})) j.values(split(r, " + "));
    j.end_array();
    j.key("minimal_reduct").values(attr_or<std::vector<std::string>>(a, k + "_minimal_reduct", {}));
    j.key("per_region").begin_object();
    const auto per = rs.table("rootcause/" + k + "_per_region");
    const auto &path = column<std::string>(per, "path"), &causes = column<std::string>(per, "causes");
    for (size_t i = 0; i < path.size(); ++i) {
      j.key(path[i]).values(split(causes[i], "; "));
    }
    j.end_object();
    j.end_object();
  }
}

}  // namespace

StageView rootcause_view() { return {"rootcause", rootcause_text, rootcause_json}; }

}  // namespace perfsift::pipeline
