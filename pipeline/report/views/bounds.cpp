// The bounds stage in the reports: each parallel region's lower bounds.
#include <ostream>

#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

void bounds_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto t = rs.table("bounds/bounds");
  const auto &region = column<std::string>(t, "region"), &q = column<std::string>(t, "question");
  const auto &pred = column<double>(t, "predicted_s");
  const auto &clamped_steps = column<int64_t>(t, "clamped_steps");
  os << "\nLower bounds per parallel region (PerWiz F3; Q1 no waiting, Q2 balanced computation, Q3 balanced "
        "communication):\n";
  std::string clamped;
  for (size_t i = 0; i + 7 < t.rows(); i += 8) {
    os << "  " << clip(region[i], 28) << ":";
    for (int c : {0, 1, 2, 3, 7})
      os << " " << q[i + static_cast<size_t>(c)] << " " << format_seconds(pred[i + static_cast<size_t>(c)])
         << (c == 7 ? "" : ";");
    os << "\n";
    for (size_t c = 1; c < 8 && i + c < clamped_steps.size(); ++c)
      if (clamped_steps[i + c] > 0 && clamped.size() < 400)
        clamped += (clamped.empty() ? "" : ", ") + q[i + c] + " on " + clip(region[i], 28);
  }
  if (!clamped.empty())
    os << "  (" << clamped
       << ": kept at the replayed time in some steps, where balancing alone would give ranks computation their "
          "waiting does not absorb)\n";
}

// "bounds": {region: {"steps", "breakdown": {...}, "none": s, "Q1": s, ...}}
void bounds_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto t = rs.table("bounds/bounds");
  const auto b = rs.table("bounds/breakdown");
  const auto &region = column<std::string>(t, "region"), &q = column<std::string>(t, "question");
  const auto &pred = column<double>(t, "predicted_s");
  const auto &steps = column<int64_t>(b, "steps");
  const auto &calc = column<double>(b, "computation_s"), &comm = column<double>(b, "communication_s"),
             &wait = column<double>(b, "waiting_s");
  j.begin_object();
  for (size_t r = 0; r < b.rows(); ++r) {
    j.key(region[r * 8]).begin_object();
    j.key("steps").value(steps[r]);
    j.key("breakdown")
        .begin_object()
        .key("computation_s")
        .value(calc[r])
        .key("communication_s")
        .value(comm[r])
        .key("waiting_s")
        .value(wait[r])
        .end_object();
    for (size_t c = 0; c < 8; ++c) j.key(q[r * 8 + c]).value(pred[r * 8 + c]);
    j.end_object();
  }
  j.end_object();
}

}  // namespace

StageView bounds_view() { return {"bounds", bounds_text, nullptr, bounds_json}; }

}  // namespace perfsift::pipeline
