// The domino stage in the reports: the first domino path that reaches the best time.
#include <ostream>

#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

void domino_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("domino");
  if (const auto why = attr_or<std::string>(a, "skipped", ""); !why.empty()) {
    os << "\nDomino paths: skipped (" << why << ")\n";
    return;
  }
  const auto t = rs.table("domino/paths");
  const auto &kind = column<std::string>(t, "kind"), &op = column<std::string>(t, "operation"),
             &region = column<std::string>(t, "region");
  const auto &path = column<int64_t>(t, "path"), &rank = column<int64_t>(t, "rank"),
             &event = column<int64_t>(t, "event"), &reaches = column<int64_t>(t, "reaches_best");
  const auto &pred = column<double>(t, "predicted_s");
  os << "\nDomino paths (PerWiz): baseline " << format_seconds(attr_or<double>(a, "baseline_s", 0)) << ", best path "
     << format_seconds(attr_or<double>(a, "best_s", 0)) << ", longest wait alone "
     << format_seconds(attr_or<double>(a, "longest_wait_s", 0)) << "\n";
  int64_t shown = -1;
  for (size_t i = 0; i < t.rows(); ++i) {
    if (kind[i] != "domino" || !reaches[i]) continue;
    if (shown >= 0 && path[i] != shown) break;  // the first path reaching the best
    if (shown < 0) os << "  path:";
    shown = path[i];
    os << " " << op[i] << "@" << rank[i] << ":" << event[i] << " (" << clip(region[i], 20) << ", "
       << format_seconds(pred[i]) << ")";
  }
  if (shown >= 0)
    os << "\n";
  else if (const double least = attr_or<double>(a, "min_gain_s", 0); least > 0)
    os << "  no wait whose removal shortens the run by " << format_seconds(least) << " or more\n";
  else
    os << "  no wait whose removal shortens the run\n";
}

// "domino": [{"kind", "terminates_at", "predicted_s", "reaches_best", "events": [...]}]
void domino_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto t = rs.table("domino/paths");
  const auto &kind = column<std::string>(t, "kind"), &op = column<std::string>(t, "operation"),
             &region = column<std::string>(t, "region");
  const auto &path = column<int64_t>(t, "path"), &rank = column<int64_t>(t, "rank"),
             &event = column<int64_t>(t, "event"), &ends = column<int64_t>(t, "terminates_at"),
             &reaches = column<int64_t>(t, "reaches_best"), &prank = column<int64_t>(t, "partner_rank"),
             &pevent = column<int64_t>(t, "partner_event");
  const auto &wait = column<double>(t, "wait_s"), &pred = column<double>(t, "predicted_s");
  j.begin_array();
  for (size_t i = 0; i < t.rows();) {
    size_t k = i;
    while (k < t.rows() && path[k] == path[i] && kind[k] == kind[i]) ++k;
    j.begin_object().key("kind").value(kind[i]).key("terminates_at").value(ends[i]);
    j.key("predicted_s").value(pred[k - 1]).key("reaches_best").value(reaches[i] != 0);
    j.key("events").begin_array();
    for (size_t x = i; x < k; ++x) {
      j.begin_object().key("rank").value(rank[x]).key("event").value(event[x]).key("operation").value(op[x]);
      j.key("region").value(region[x]).key("waited_for").begin_array().value(prank[x]).value(pevent[x]).end_array();
      j.key("wait_s").value(wait[x]).key("predicted_s").value(pred[x]).end_object();
    }
    j.end_array().end_object();
    i = k;
  }
  j.end_array();
}

}  // namespace

StageView domino_view() { return {"domino", domino_text, nullptr, domino_json}; }

}  // namespace perfsift::pipeline
