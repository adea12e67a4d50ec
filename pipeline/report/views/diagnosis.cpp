// The diagnosis stage in the reports: the recognised model, its causes and the relative diagnosis.
#include <cstdio>
#include <ostream>

#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

void diagnosis_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("diagnosis");
  const std::string model = attr_or<std::string>(a, "model", "none");
  if (model == "none") {
    os << "\nModel diagnosis (Hercule): no master-worker, wavefront or divide-and-conquer structure recognised\n";
    return;
  }
  const std::string rel = attr_or<std::string>(a, "relative_cause", "");
  char conf[32];
  std::snprintf(conf, sizeof conf, "%.2f", attr_or<double>(a, "confidence", 0));
  os << "\nModel diagnosis (Hercule): " << model << " (confidence " << conf << "); "
     << attr_or<std::string>(a, "symptom", "") << "\n";
  const auto t = rs.table("diagnosis/causes");
  const auto &id = column<std::string>(t, "id");
  const auto &sh = column<double>(t, "share");
  const auto &se = column<double>(t, "seconds");
  os << " ";
  for (size_t i = 0; i < t.rows(); ++i)
    os << " " << id[i] << " " << format_percent(sh[i]) << " (" << format_seconds(se[i]) << ")"
       << (i + 1 < t.rows() ? "," : "");
  os << "\n";
  if (!rel.empty())
    os << "  against " << attr_or<std::string>(a, "reference", "") << " (" << attr_or<std::string>(a, "scaling", "")
       << " scaling): " << rel << "\n";
}

// "diagnosis": [{"model", "confidence", "symptom", "worst", "causes": [{"id", "share", "text"}], "narrative",
// "metrics"}]
void diagnosis_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto a = rs.attributes("diagnosis");
  j.begin_array();
  const std::string model = attr_or<std::string>(a, "model", "none");
  if (model != "none") {
    j.begin_object().key("model").value(model).key("confidence").value(attr_or<double>(a, "confidence", 0));
    j.key("symptom")
        .value(attr_or<std::string>(a, "symptom", ""))
        .key("worst")
        .value(attr_or<std::string>(a, "worst", ""));
    const auto t = rs.table("diagnosis/causes");
    const auto &id = column<std::string>(t, "id"), &tx = column<std::string>(t, "text");
    const auto &sh = column<double>(t, "share"), &se = column<double>(t, "seconds");
    j.key("causes").begin_array();
    for (size_t i = 0; i < t.rows(); ++i)
      j.begin_object()
          .key("id")
          .value(id[i])
          .key("share")
          .value(sh[i])
          .key("seconds")
          .value(se[i])
          .key("text")
          .value(tx[i])
          .end_object();
    j.end_array();
    j.key("metrics").begin_object();
    for (const auto &[k, v] : a)
      if (k.rfind("metric_", 0) == 0 && std::holds_alternative<double>(v))
        j.key(k.substr(7)).value(std::get<double>(v));
    j.end_object();
    if (const std::string rel = attr_or<std::string>(a, "relative_cause", ""); !rel.empty()) {
      j.key("relative").begin_object().key("reference").value(attr_or<std::string>(a, "reference", ""));
      j.key("scaling")
          .value(attr_or<std::string>(a, "scaling", ""))
          .key("cause")
          .value(rel)
          .key("metrics")
          .begin_array();
      const auto r = rs.table("diagnosis/relative");
      const auto &n = column<std::string>(r, "metric");
      const auto &x = column<double>(r, "run"), &y = column<double>(r, "reference"), &e = column<double>(r, "expected"),
                 &p = column<double>(r, "difference_percent");
      for (size_t i = 0; i < r.rows(); ++i)
        j.begin_object()
            .key("metric")
            .value(n[i])
            .key("run")
            .value(x[i])
            .key("reference")
            .value(y[i])
            .key("expected")
            .value(e[i])
            .key("difference_percent")
            .value(p[i])
            .end_object();
      j.end_array().end_object();
    }
    j.key("narrative").value(attr_or<std::string>(a, "narrative", "")).end_object();
  }
  j.end_array();
}

}  // namespace

StageView diagnosis_view() { return {"diagnosis", diagnosis_text, nullptr, diagnosis_json}; }

}  // namespace perfsift::pipeline
