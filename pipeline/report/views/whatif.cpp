// The whatif stage in the reports: the baseline's error and the questions that gain most.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

// An error the text report explains: beyond it, a replay that misses the run says why.
constexpr double kNotedReplayError = 0.05;

// Whether the ranks waited for a core in the program, and what that makes of the error.
void descheduled_text(std::ostream &os, const Attrs &a) {
  const double error = attr_or<double>(a, "baseline_error", 0);
  if (attr_or<int64_t>(a, "descheduled_ranks", 0) == 0 || std::abs(error) <= kNotedReplayError) return;
  const double program = attr_or<double>(a, "program_measured_s", 0), waited = attr_or<double>(a, "descheduled_s", 0);
  const std::string most = "rank " + std::to_string(attr_or<int64_t>(a, "descheduled_max_rank", -1)) + " most, " +
                           format_seconds(attr_or<double>(a, "descheduled_max_s", 0));
  if (attr_or<int64_t>(a, "error_within_descheduled", 0))
    os << "  The ranks waited " << format_seconds(waited) << " for a core inside the program (runnable but "
       << "descheduled; " << most << "): a replay of dedicated cores cannot reproduce that, so the error is the "
       << "machine's as much as the model's, and the gains below are those of a core per rank\n";
  else
    os << "  The ranks waited only " << format_seconds(waited) << " for a core (" << most << "): the replay's miss of "
       << format_seconds(std::abs(error) * program) << " is the model's, not the machine's\n";
}

void whatif_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("whatif");
  const auto t = rs.table("whatif/questions");
  const auto &text = column<std::string>(t, t.find("fix") ? "fix" : "question");
  const auto &pred = column<double>(t, "predicted_s"), &gain = column<double>(t, "gain_s");
  char line[256];
  std::snprintf(
      line, sizeof line,
      "\nWhat if (LogGPS replay, parameters: %s): the program replays in %s against %s measured (error %+.1f%%; "
      "start-up and shut-down replayed as measured)\n",
      attr_or<std::string>(a, "loggps_source", "?").c_str(),
      format_seconds(attr_or<double>(a, "program_baseline_s", attr_or<double>(a, "baseline_s", 0))).c_str(),
      format_seconds(attr_or<double>(a, "program_measured_s", attr_or<double>(a, "measured_s", 0))).c_str(),
      100 * attr_or<double>(a, "baseline_error", 0));
  os << line;
  // Which parameters, where each came from and how many messages it rests on.
  if (const std::string network = attr_or<std::string>(a, "loggps_summary", ""); !network.empty())
    os << "  Network: " << network << "\n";
  descheduled_text(os, a);
  // Predicted program times: start-up and shut-down as measured, taken off like the baseline's
  const double outside = attr_or<double>(a, "measured_s", 0) -
                         attr_or<double>(a, "program_measured_s", attr_or<double>(a, "measured_s", 0));
  std::vector<size_t> order;
  for (size_t i = 1; i < t.rows(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return gain[x] > gain[y]; });
  for (size_t k = 0; k < order.size() && k < 4; ++k) {  // the rest: JSON and /whatif/questions
    const size_t i = order[k];
    std::snprintf(line, sizeof line, "  %-60s %10s  gain %10s\n", clip(text[i], 60).c_str(),
                  format_seconds(pred[i] - outside).c_str(), format_seconds(gain[i]).c_str());
    os << line;
  }
}

// "whatif": [{question, predicted_s, gain_s, ...}], the baseline first.
void whatif_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto a = rs.attributes("whatif");
  const auto t = rs.table("whatif/questions");
  const auto &text = column<std::string>(t, "question"), &origin = column<std::string>(t, "origin"),
             &fix = column<std::string>(t, "fix");
  const auto &pred = column<double>(t, "predicted_s"), &gain = column<double>(t, "gain_s");
  const auto &sel = column<int64_t>(t, "selected"), &rel = column<int64_t>(t, "released");
  j.begin_array();
  for (size_t i = 0; i < t.rows(); ++i) {
    j.begin_object();
    j.key("question").value(text[i]);
    if (i < fix.size()) j.key("fix").value(fix[i]);
    j.key("predicted_s").value(pred[i]).key("gain_s").value(gain[i]);
    j.key("origin").value(origin[i]).key("selected").value(sel[i]).key("released").value(rel[i]);
    if (i == 0) {
      j.key("measured_s")
          .value(attr_or<double>(a, "measured_s", 0))
          .key("error")
          .value(attr_or<double>(a, "baseline_error", 0));
      j.key("program_measured_s").value(attr_or<double>(a, "program_measured_s", 0));
      j.key("program_predicted_s").value(attr_or<double>(a, "program_baseline_s", 0));
      j.key("run_error").value(attr_or<double>(a, "run_error", 0));
      j.key("descheduled").begin_object();
      j.key("ranks_recorded").value(attr_or<int64_t>(a, "descheduled_ranks", 0));
      j.key("total_s").value(attr_or<double>(a, "descheduled_s", 0));
      j.key("max_s").value(attr_or<double>(a, "descheduled_max_s", 0));
      j.key("max_rank").value(attr_or<int64_t>(a, "descheduled_max_rank", -1));
      j.key("covers_error").value(attr_or<int64_t>(a, "error_within_descheduled", 0) != 0);
      j.end_object();
      j.key("loggps").begin_object();
      for (const auto &[k, v] : a)
        if (k.rfind("loggps_", 0) == 0) {
          j.key(k.substr(7));
          if (auto *d = std::get_if<double>(&v))
            j.value(*d);
          else if (auto *n = std::get_if<int64_t>(&v))
            j.value(*n);
          else if (auto *s = std::get_if<std::string>(&v))
            j.value(*s);
        }
      j.end_object();
      j.key("matching").begin_object();
      for (const char *k : {"events", "sends", "receives", "unmatched_sends", "unmatched_receives",
                            "cancelled_receives", "collective_calls", "local_calls"})
        j.key(k).value(attr_or<int64_t>(a, k, 0));
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
}

}  // namespace

StageView whatif_view() { return {"whatif", whatif_text, nullptr, whatif_json}; }

std::string disturbed_run_words(const io::ResultsStore &rs) {
  const auto stages = attr_or<std::vector<std::string>>(rs.attributes(""), "stages", {});
  if (std::find(stages.begin(), stages.end(), "whatif") == stages.end()) return "";
  const auto a = rs.attributes("whatif");
  const double error = attr_or<double>(a, "baseline_error", 0);
  if (attr_or<int64_t>(a, "descheduled_ranks", 0) == 0 || std::abs(error) <= kNotedReplayError ||
      !attr_or<int64_t>(a, "error_within_descheduled", 0))
    return "";
  char line[320];
  std::snprintf(line, sizeof line,
                "Disturbed run: rank %lld waited %s of the %s program for a core (runnable but descheduled; all "
                "ranks together %s) and the replay misses the run by %+.0f%%: its figures are the machine's as "
                "much as the program's; rerun with a core per rank before acting on them.",
                static_cast<long long>(attr_or<int64_t>(a, "descheduled_max_rank", -1)),
                format_seconds(attr_or<double>(a, "descheduled_max_s", 0)).c_str(),
                format_seconds(attr_or<double>(a, "program_measured_s", 0)).c_str(),
                format_seconds(attr_or<double>(a, "descheduled_s", 0)).c_str(), 100 * error);
  return line;
}

}  // namespace perfsift::pipeline
