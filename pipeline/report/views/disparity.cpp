// The disparity stage in the reports: the regions of high and very high severity, and the CCRs.
#include <ostream>

#include "kernels/kmeans1d.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

void disparity_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto t = rs.table("disparity/regions");
  const auto &path = column<std::string>(t, "path");
  const auto &sev = column<int64_t>(t, "severity");
  const auto &cccr = column<int64_t>(t, "cccr");
  const auto attrs = rs.attributes("disparity");
  const auto fb = attr_or<std::string>(attrs, "fallback", "");
  const auto measure = attr_or<std::string>(attrs, "measure", "");
  os << "\nDisparity by "
     << (fb.empty() ? "CRNM (wall share x CPI)"
         : measure.find("thread-CPU") != std::string::npos
             ? "wall share x wall per thread-CPU second (CPI not recorded)"
             : "wall share (CPI not recorded)")
     << ":\n";
  for (int level = 4; level >= 3; --level) {
    std::string list;
    for (size_t i = 0; i < path.size(); ++i)
      if (sev[i] == level) list += (list.empty() ? "" : ", ") + path[i] + (cccr[i] ? " (CCCR)" : "");
    os << "  " << kernels::severity_name(level) << ": " << (list.empty() ? "-" : clip(list, 90)) << "\n";
  }
}

void disparity_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto t = rs.table("disparity/regions");
  const auto &path = column<std::string>(t, "path");
  const auto &sev = column<int64_t>(t, "severity");
  const auto &ccr = column<int64_t>(t, "ccr"), &cccr = column<int64_t>(t, "cccr");
  j.key("severity").begin_object();
  for (size_t i = 0; i < path.size(); ++i) j.key(path[i]).value(sev[i]);
  j.end_object();
  std::vector<std::string> a, b;
  for (size_t i = 0; i < path.size(); ++i) {
    if (ccr[i]) a.push_back(path[i]);
    if (cccr[i]) b.push_back(path[i]);
  }
  j.key("ccr").values(a);
  j.key("cccr").values(b);
}

}  // namespace

StageView disparity_view() { return {"disparity", disparity_text, disparity_json}; }

}  // namespace perfsift::pipeline
