// The dissimilarity stage in the reports: the rank clusters and the critical code regions that split them.
#include <cstdio>
#include <map>
#include <ostream>

#include "kernels/rank_set.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

void dissimilarity_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("dissimilarity");
  const auto ranks = rs.table("dissimilarity/ranks");
  const auto &rank = column<int64_t>(ranks, "rank"), &cl = column<int64_t>(ranks, "cluster");
  std::map<int64_t, std::vector<int32_t>> groups;
  for (size_t i = 0; i < rank.size(); ++i) groups[cl[i]].push_back(static_cast<int32_t>(rank[i]));
  std::string list;
  for (const auto &[k, v] : groups) list += (list.empty() ? "" : " | ") + kernels::format_ranges(kernels::to_ranges(v));
  char sev[32];
  std::snprintf(sev, sizeof sev, "%.2f", attr_or<double>(a, "severity", 0));
  os << "\nRank clusters by " << attr_or<std::string>(a, "metric", "?") << " time per region: " << groups.size() << " ("
     << clip(list, 60) << "), severity " << sev << "\n";
  const auto ccr = rs.table("dissimilarity/ccr_table");
  const auto &path = column<std::string>(ccr, "path");
  const auto &cccr = column<int64_t>(ccr, "cccr");
  if (groups.size() > 1) {
    std::string c1, c2;
    for (size_t i = 0; i < path.size(); ++i)
      (cccr[i] ? c2 : c1) += (cccr[i] ? (c2.empty() ? "" : ", ") : (c1.empty() ? "" : ", ")) + path[i];
    os << "  CCCR: " << (c2.empty() ? "none found" : clip(c2, 70))
       << (c1.empty() ? "" : "; other CCRs: " + clip(c1, 40)) << "\n";
  }
}

void dissimilarity_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto ranks = rs.table("dissimilarity/ranks");
  const auto &rank = column<int64_t>(ranks, "rank"), &cl = column<int64_t>(ranks, "cluster");
  std::map<int64_t, std::vector<int64_t>> groups;
  for (size_t i = 0; i < rank.size(); ++i) groups[cl[i]].push_back(rank[i]);
  j.key("clusters").begin_array();
  for (const auto &[k, v] : groups) j.values(v);
  j.end_array();
  const auto ccr = rs.table("dissimilarity/ccr_table");
  const auto &path = column<std::string>(ccr, "path");
  const auto &cccr = column<int64_t>(ccr, "cccr");
  std::vector<std::string> all, core;
  for (size_t i = 0; i < path.size(); ++i) {
    all.push_back(path[i]);
    if (cccr[i]) core.push_back(path[i]);
  }
  j.key("ccr").values(all);
  j.key("cccr").values(core);
}

}  // namespace

StageView dissimilarity_view() { return {"dissimilarity", dissimilarity_text, dissimilarity_json}; }

}  // namespace perfsift::pipeline
