// The classify stage in the reports: the message classes and the costliest call-site pairs.
#include <algorithm>
#include <ostream>

#include "kernels/message_class.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

namespace vt = kernels::vetter;

void classify_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("classify");
  if (const auto why = attr_or<std::string>(a, "skipped", ""); !why.empty()) {
    os << "\nMessage classes (Vetter): skipped (" << why << ")\n";
    return;
  }
  os << "\nMessage classes (Vetter), " << attr_or<int64_t>(a, "messages", 0) << " transfers:";
  for (const char *k : vt::class_keys()) os << " " << k << " " << attr_or<int64_t>(a, std::string("count_") + k, 0);
  os << "\n";
  if (!attr_or<int64_t>(a, "platform_matches", 1))
    os << "  (the model was trained on another platform: " << attr_or<std::string>(a, "model_platform", "") << ")\n";
  const auto t = rs.table("classify/pairs");
  const auto &snd = column<std::string>(t, "sender"), &rcv = column<std::string>(t, "receiver"),
             &top = column<std::string>(t, "predominant");
  const auto &ex = column<double>(t, "excess_s");
  std::vector<size_t> order(t.rows());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ex[x] != ex[y] ? ex[x] > ex[y] : x < y; });
  for (size_t k = 0; k < order.size() && k < 5; ++k) {
    const size_t i = order[k];
    int64_t n = 0;
    for (const char *c : vt::class_keys()) n += column<int64_t>(t, c)[i];
    os << "  " << clip(snd[i], 28) << " -> " << clip(rcv[i], 28) << ": " << n << " transfers, mostly " << top[i] << ", "
       << format_seconds(ex[i]) << " beyond normal\n";
  }
}

// "classification": {"counts": {...}, "pairs": [{"sender", "receiver", "counts", "predominant", ...}]}
void classify_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto a = rs.attributes("classify");
  j.begin_object();
  if (const auto why = attr_or<std::string>(a, "skipped", ""); !why.empty()) j.key("skipped").value(why);
  j.key("counts").begin_object();
  for (const char *k : vt::class_keys()) j.key(k).value(attr_or<int64_t>(a, std::string("count_") + k, 0));
  j.end_object();
  j.key("model")
      .value(attr_or<std::string>(a, "model", ""))
      .key("platform_matches")
      .value(attr_or<int64_t>(a, "platform_matches", 0) != 0);
  const auto t = rs.table("classify/pairs");
  const auto &snd = column<std::string>(t, "sender"), &rcv = column<std::string>(t, "receiver"),
             &top = column<std::string>(t, "predominant"), &sr = column<std::string>(t, "senders"),
             &rr = column<std::string>(t, "receivers");
  const auto &sid = column<int64_t>(t, "sender_site"), &rid = column<int64_t>(t, "receiver_site");
  const auto &conf = column<double>(t, "mean_confidence"), &ex = column<double>(t, "excess_s");
  j.key("pairs").begin_array();
  for (size_t i = 0; i < t.rows(); ++i) {
    j.begin_object()
        .key("sender")
        .value(snd[i])
        .key("receiver")
        .value(rcv[i])
        .key("sender_site")
        .value(sid[i])
        .key("receiver_site")
        .value(rid[i]);
    j.key("sender_ranks").value(sr[i]).key("receiver_ranks").value(rr[i]);
    j.key("counts").begin_object();
    for (const char *k : vt::class_keys()) j.key(k).value(column<int64_t>(t, k)[i]);
    j.end_object();
    j.key("predominant").value(top[i]).key("mean_confidence").value(conf[i]).key("excess_s").value(ex[i]).end_object();
  }
  j.end_array().end_object();
}

}  // namespace

StageView classify_view() { return {"classify", classify_text, nullptr, classify_json, "classification"}; }

}  // namespace perfsift::pipeline
