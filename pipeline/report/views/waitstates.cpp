// The waitstates stage in the reports: time per Scalasca pattern and the clock-condition violations;
// in JSON, each pattern by rank and by call path.
#include <algorithm>
#include <map>
#include <ostream>

#include "kernels/rank_set.h"
#include "kernels/wait_states.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

using namespace kernels::waitstates;

void waitstates_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("waitstates");
  os << "\nWait states (Scalasca patterns):";
  for (int32_t p = 0; p < kPatterns; ++p) {
    const char *k = pattern_key(p);
    const double s = attr_or<double>(a, std::string(k) + "_s", 0);
    if (s > 0) os << " " << k << " " << format_seconds(s);
  }
  os << "\n";
  const int64_t vio =
      attr_or<int64_t>(a, "clock_violations_p2p", 0) + attr_or<int64_t>(a, "clock_violations_collective", 0);
  if (vio)
    os << "  " << vio << " clock-condition violations (up to "
       << format_seconds(attr_or<double>(a, "clock_violation_max_s", 0)) << ")\n";
}

// "waitstates": {"late_sender": {"total_s", "wrong_order_s", "by_rank": [...], "by_callpath": [...]}, ...,
//                "clock_violations": {...}}
void waitstates_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto a = rs.attributes("waitstates");
  const auto t = rs.table("waitstates/waits");
  const int64_t nranks = attr_or<int64_t>(rs.attributes("run"), "ranks", 0);
  const auto &pat = column<std::string>(t, "pattern"), &cp = column<std::string>(t, "callpath");
  const auto &rank = column<int64_t>(t, "rank");
  const auto &wait = column<double>(t, "wait_s"), &wrong = column<double>(t, "wrong_order_s");
  j.begin_object();
  for (int32_t p = 0; p < kPatterns; ++p) {
    const char *k = pattern_key(p);
    int64_t top = nranks - 1;
    for (size_t i = 0; i < t.rows(); ++i)
      if (pat[i] == k) top = std::max(top, rank[i]);
    std::vector<double> by_rank(static_cast<size_t>(top + 1), 0.0);
    std::map<std::string, std::pair<double, std::vector<int32_t>>> by_path;
    double wrong_order = 0;
    for (size_t i = 0; i < t.rows(); ++i) {
      if (pat[i] != k) continue;
      by_rank[static_cast<size_t>(rank[i])] += wait[i];
      by_path[cp[i]].first += wait[i];
      by_path[cp[i]].second.push_back(static_cast<int32_t>(rank[i]));
      wrong_order += wrong[i];
    }
    j.key(k).begin_object().key("total_s").value(attr_or<double>(a, std::string(k) + "_s", 0));
    if (std::string(k) == "late_sender") j.key("wrong_order_s").value(wrong_order);
    j.key("by_rank").begin_array();
    for (double x : by_rank) j.value(x);
    j.end_array().key("by_callpath").begin_array();
    for (const auto &[path, v] : by_path)
      j.begin_object()
          .key("callpath")
          .value(path)
          .key("total_s")
          .value(v.first)
          .key("ranks")
          .value(kernels::format_ranges_brief(kernels::to_ranges(v.second), 200))
          .end_object();
    j.end_array().end_object();
  }
  j.key("clock_violations").begin_object().key("p2p").value(attr_or<int64_t>(a, "clock_violations_p2p", 0));
  j.key("collective")
      .value(attr_or<int64_t>(a, "clock_violations_collective", 0))
      .key("max_s")
      .value(attr_or<double>(a, "clock_violation_max_s", 0));
  j.end_object().end_object();
}

}  // namespace

StageView waitstates_view() { return {"waitstates", waitstates_text, nullptr, waitstates_json}; }

}  // namespace perfsift::pipeline
