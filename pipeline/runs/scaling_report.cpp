// perfsift scaling's answer, text report and JSON (docs/scaling-models.md).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pipeline/format/json_writer.h"
#include "pipeline/format/text.h"
#include "pipeline/runs/scaling_analysis.h"

namespace perfsift::pipeline {

namespace {

constexpr size_t kTableRows = 10;
constexpr const char *kNoEfficiency = "efficiencies: n/a (results store without /efficiency: re-run analyze)";

std::string ranks_word(int64_t p) { return std::to_string(p) + (p == 1 ? " rank" : " ranks"); }

std::string counts_list(const ScalingAnalysis &a) {
  std::string out;
  int64_t last = -1;
  for (const auto &r : a.runs)
    if (r.results.ranks != last) out += (out.empty() ? "" : ", ") + std::to_string(last = r.results.ranks);
  return out;
}

// Grows without bound: "growing, levelling off" approaches a limit.
bool grows(const kernels::scaling::Model &m) { return m.growth().rfind("growing ", 0) == 0; }

// The region that breaks first: the most predicted time at the largest target among the
// growing ones (else the most time there).
const ScaledQuantity *breaks_first(const ScalingAnalysis &a) {
  for (const auto &q : a.regions)
    if (grows(q.model) && !q.model.noisy()) return &q;
  return a.regions.empty() ? nullptr : &a.regions.front();
}

std::string trust_sentence(const ScalingAnalysis &a) {
  std::string out;
  if (a.points < kernels::scaling::kRecommendedPoints)
    out = "The models rest on " + std::to_string(a.points) + " rank counts (" + counts_list(a) +
          "); Extra-P wants 5 at least" +
          (a.points == 2 ? ": with 2 each model is a straight line through both, no term chosen"
                         : ": with fewer the choice of term is weakly tested") +
          ". Take the predictions as rough.";
  std::string noisy;
  size_t n_noisy = 0;
  if (a.rest.model.noisy()) {
    char b[64];
    std::snprintf(b, sizeof b, " (leave-one-out error %.0f %%)", a.rest.model.cv_smape);
    noisy = std::string("the program time outside the regions") + b;
    ++n_noisy;
  }
  for (const auto &q : a.regions)
    if (q.model.noisy() && n_noisy++ < 3) {
      char b[48];
      std::snprintf(b, sizeof b, " (leave-one-out error %.0f %%)", q.model.cv_smape);
      noisy += (noisy.empty() ? "" : ", ") + q.name + b;
    }
  if (!noisy.empty())
    out += std::string(out.empty() ? "" : " ") + "Too noisy for a model: " + noisy +
           (n_noisy > 3 ? " and " + std::to_string(n_noisy - 3) + " more" : "") + ".";
  return out;
}

std::string efficiency_sentence(const ScalingAnalysis &a) {
  const auto &ref = a.runs.front(), &last = a.runs.back();
  if (!ref.efficiency.present || !last.efficiency.present) return kNoEfficiency;
  char b[320];
  std::snprintf(b, sizeof b,
                "POP: parallel efficiency %.2f at %s, %.2f at %s (load balance %.2f, communication %.2f); "
                "computation scalability %.2f, global efficiency %.2f%s.",
                ref.efficiency.parallel, ranks_word(ref.results.ranks).c_str(), last.efficiency.parallel,
                ranks_word(last.results.ranks).c_str(), last.efficiency.load_balance, last.efficiency.communication,
                last.efficiency.computation_scalability, last.efficiency.global,
                last.efficiency.global < 0.8 ? " (below 0.8)" : "");
  return b;
}

std::string share(double part, double whole) { return whole > 0 ? format_percent(part / whole) : "-"; }

// Two lines: the name, its model and growth; the measurements, the fit error and the predictions.
void model_lines(std::string &out, const ScaledQuantity &q, const std::vector<int64_t> &targets,
                 bool composed = false) {
  const auto &m = q.model;
  out += "  " + printable(q.name) +
         (q.pace_rank >= 0 ? " (slowest on rank " + std::to_string(q.pace_rank) + ")" : std::string()) + ": " +
         (composed ? "predicted as its top-level regions' models and the rest's summed; alone " : "") + m.formula() +
         ", " + m.growth() + (m.noisy() ? " (too noisy for a model: the mean predicts)" : "") + "\n    measured";
  for (size_t k = 0; k < q.ranks.size(); ++k)
    out += (k ? ", " : " ") + format_seconds(q.measured_s[k]) + " @" + std::to_string(static_cast<int64_t>(q.ranks[k]));
  char b[160];
  std::snprintf(b, sizeof b, "; SMAPE %.1f %%", m.smape);
  out += b;
  if (m.cv_smape >= 0) {
    std::snprintf(b, sizeof b, ", leave-one-out %.1f %%", m.cv_smape);
    out += b;
  }
  if (!m.constant) out += ", adjusted R2 " + format_ratio(m.adjusted_r2, "-");
  out += "; predicted";
  for (size_t k = 0; k < targets.size(); ++k)
    out += (k ? ", " : " ") + format_seconds(q.predicted_s.at(targets[k])) + " @" + std::to_string(targets[k]);
  out += "\n";
}

void quantity_table(std::string &out, const char *title, const std::vector<ScaledQuantity> &rows,
                    const std::vector<int64_t> &targets) {
  if (rows.empty()) return;
  out += std::string("\n") + title + "\n";
  for (size_t i = 0; i < rows.size() && i < kTableRows; ++i) model_lines(out, rows[i], targets);
  if (rows.size() > kTableRows) out += "  (" + std::to_string(rows.size() - kTableRows) + " more in --json)\n";
}

void efficiency_table(std::string &out, const ScalingAnalysis &a) {
  out += "\nEfficiency (POP; computation scalability and global against the " +
         std::to_string(a.runs.front().results.ranks) + "-rank run)\n";
  out += "   ranks    program  parallel  load bal  comm  serial  transfer  comp scal  global\n";
  for (const auto &r : a.runs) {
    char b[200];
    const auto &e = r.efficiency;
    std::snprintf(b, sizeof b, "  %6lld %10s", static_cast<long long>(r.results.ranks),
                  format_seconds(r.results.program_time_s).c_str());
    out += b;
    if (!e.present) {
      out += std::string("  ") + kNoEfficiency + "\n";
      continue;
    }
    std::snprintf(b, sizeof b, "  %8s  %8s  %4s  %6s  %8s  %9s  %6s\n", format_ratio(e.parallel, "-").c_str(),
                  format_ratio(e.load_balance, "-").c_str(), format_ratio(e.communication, "-").c_str(),
                  format_ratio(e.serialisation, "-").c_str(), format_ratio(e.transfer, "-").c_str(),
                  format_ratio(e.computation_scalability, "-").c_str(), format_ratio(e.global, "-").c_str());
    out += b;
  }
}

void model_json(JsonWriter &w, const ScaledQuantity &q) {
  const auto &m = q.model;
  w.key("model").value(m.formula());
  w.key("term").value(m.constant ? std::string("constant") : m.term.text());
  w.key("growth").value(m.growth());
  w.key("c0").value(m.c0);
  w.key("c1").value(m.constant ? 0.0 : m.c1);
  w.key("points").value(static_cast<int64_t>(m.points));
  w.key("smape_percent").value(m.smape);
  w.key("loo_smape_percent").value(m.cv_smape >= 0 ? m.cv_smape : std::nan(""));
  w.key("adjusted_r2").value(m.constant ? std::nan("") : m.adjusted_r2);
  w.key("rss").value(m.rss);
  w.key("restricted").value(m.restricted());
  w.key("noisy").value(m.noisy());
  w.key("measured_s").begin_object();
  for (size_t k = 0; k < q.ranks.size(); ++k)
    w.key(std::to_string(static_cast<int64_t>(q.ranks[k]))).value(q.measured_s[k]);
  w.end_object();
  w.key("predicted_s").begin_object();
  for (const auto &[p, s] : q.predicted_s) w.key(std::to_string(p)).value(s);
  w.end_object();
}

void efficiency_json(JsonWriter &w, const PopEfficiency &e) {
  if (!e.present) {
    w.null();
    return;
  }
  w.begin_object();
  const std::pair<const char *, double> values[] = {{"load_balance", e.load_balance},
                                                    {"serialisation", e.serialisation},
                                                    {"transfer", e.transfer},
                                                    {"communication", e.communication},
                                                    {"parallel", e.parallel},
                                                    {"computation_scalability", e.computation_scalability},
                                                    {"global", e.global},
                                                    {"runtime_s", e.runtime_s},
                                                    {"useful_sum_s", e.useful_sum_s},
                                                    {"useful_max_s", e.useful_max_s},
                                                    {"ideal_network_runtime_s", e.ideal_network_runtime_s}};
  for (const auto &[k, v] : values) w.key(k).value(v);
  w.key("ranks").value(e.ranks);
  w.end_object();
}

}  // namespace

std::vector<std::string> scaling_answer(const ScalingAnalysis &a) {
  std::vector<std::string> out;
  const int64_t top = a.largest_target();
  const auto &last = a.runs.back();
  const double program_at = a.program_time.predicted_s.at(top);
  if (const ScaledQuantity *q = breaks_first(a)) {
    const double today = q->measured_s.empty() ? 0 : q->measured_s.back();
    const bool in_last = !q->ranks.empty() && static_cast<int64_t>(q->ranks.back()) == last.results.ranks;
    out.push_back("At " + ranks_word(top) + " " + q->name +
                  (q->pace_rank >= 0 ? " (slowest on rank " + std::to_string(q->pace_rank) + ")" : "") +
                  (grows(q->model) ? " breaks first: " : " takes the most: ") + format_seconds(q->predicted_s.at(top)) +
                  ", " + share(q->predicted_s.at(top), program_at) + " of the run, " + q->model.growth() + "; today (" +
                  ranks_word(last.results.ranks) + ") " +
                  (in_last ? format_seconds(today) + ", " + share(today, last.results.program_time_s) : "absent") +
                  ".");
  } else {
    out.push_back("No region to model (the runs have no regions besides the program).");
  }
  out.push_back("The program: " + format_seconds(program_at) + " predicted at " + ranks_word(top) +
                " (its regions' models summed with the rest, " + a.rest.model.growth() + "), " +
                format_seconds(last.results.program_time_s) + " at " + ranks_word(last.results.ranks) + "; " +
                a.scaling + " scaling (computation per rank x" + format_ratio(a.work_per_rank_ratio, "-") + " from " +
                ranks_word(a.runs.front().results.ranks) + " to " + ranks_word(last.results.ranks) + ").");
  if (const std::string trust = trust_sentence(a); !trust.empty()) out.push_back(trust);
  out.push_back(a.relative);
  out.push_back(efficiency_sentence(a));
  return out;
}

std::string scaling_text(const ScalingAnalysis &a) {
  std::string out = "perfsift scaling: " + std::to_string(a.runs.size()) + " runs of " +
                    (a.program.empty() ? std::string("one program") : printable(a.program)) + " at " + counts_list(a) +
                    " ranks\n\n";
  for (const auto &sentence : scaling_answer(a))
    for (const auto &line : wrap(sentence, 100, 8)) out += line + "\n";
  efficiency_table(out, a);
  out += "\nModels (seconds; p = ranks; chosen by leave-one-out cross-validation)\n";
  model_lines(out, a.program_time, a.targets, true);
  model_lines(out, a.rest, a.targets);
  quantity_table(out, "Regions (time on the rank that sets the pace, the most at the largest target first)", a.regions,
                 a.targets);
  quantity_table(out, "Problems (time at stake, matched by kind and place)", a.problems, a.targets);
  out += "\nRuns\n";
  for (const auto &r : a.runs)
    out += "  " + ranks_word(r.results.ranks) + ": " + printable(r.results.path) + ", program " +
           format_seconds(r.results.program_time_s) + ", started " + printable(r.results.start_time) + "\n";
  return out;
}

std::string scaling_json(const ScalingAnalysis &a) {
  JsonWriter w;
  w.begin_object();
  w.key("format").value("perfsift-scaling");
  w.key("version").value(1);
  w.key("answer").values(scaling_answer(a));
  w.key("program").value(a.program);
  w.key("scaling").value(a.scaling);
  w.key("work_per_rank_ratio").value(a.work_per_rank_ratio);
  w.key("points").value(static_cast<int64_t>(a.points));
  w.key("at").values(a.targets);
  w.key("runs").begin_array();
  for (const auto &r : a.runs) {
    w.begin_object();
    w.key("path").value(r.results.path);
    w.key("command").value(r.results.command);
    w.key("ranks").value(r.results.ranks);
    w.key("program_time_s").value(r.results.program_time_s);
    w.key("computation_s").value(r.computation_s);
    w.key("efficiency");
    efficiency_json(w, r.efficiency);
    w.end_object();
  }
  w.end_array();
  w.key("program_time").begin_object();
  model_json(w, a.program_time);  // predicted_s: the top-level regions' and the rest's summed
  w.end_object();
  w.key("rest").begin_object();
  model_json(w, a.rest);
  w.end_object();
  for (const auto *list : {&a.regions, &a.problems}) {
    w.key(list == &a.regions ? "regions" : "problems").begin_array();
    for (const auto &q : *list) {
      w.begin_object();
      w.key(list == &a.regions ? "region" : "problem").value(q.name);
      if (list == &a.regions) w.key("pace_rank").value(q.pace_rank);
      model_json(w, q);
      w.end_object();
    }
    w.end_array();
  }
  w.key("relative").value(a.relative);
  w.end_object();
  return w.take();
}

}  // namespace perfsift::pipeline
