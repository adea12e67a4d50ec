// perfsift scaling's page: the answer, the POP efficiencies across runs, and one small plot
// per top region (its measured times and the fitted model out to the largest target), drawn
// as inline SVG so that the page needs no script.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "pipeline/format/text.h"
#include "pipeline/runs/scaling_analysis.h"

namespace perfsift::pipeline {

namespace {

constexpr size_t kPlots = 6;
constexpr double kWidth = 320, kHeight = 200, kLeft = 56, kRight = 12, kTop = 22, kBottom = 30;

std::string num(double v, const char *format = "%.1f") {
  char b[32];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string cell(double v) { return std::isfinite(v) ? num(v, "%.2f") : "-"; }

// One region's plot: measured points (filled), the model's curve from the smallest measured
// count to the largest target, the predictions (hollow) at each target.
std::string plot(const ScaledQuantity &q, const std::vector<int64_t> &targets,
                 const std::function<double(double)> &curve_at) {
  const double x0 = *std::min_element(q.ranks.begin(), q.ranks.end());
  const double x1 = std::max(*std::max_element(q.ranks.begin(), q.ranks.end()),
                             targets.empty() ? 0.0 : static_cast<double>(targets.back()));
  double y1 = 0;
  for (const double y : q.measured_s) y1 = std::max(y1, y);
  for (const auto &[p, s] : q.predicted_s) y1 = std::max(y1, s);
  y1 = y1 > 0 ? y1 * 1.1 : 1;
  const double span = x1 > x0 ? x1 - x0 : 1;
  const auto X = [&](double p) { return kLeft + (p - x0) / span * (kWidth - kLeft - kRight); };
  const auto Y = [&](double s) { return kTop + (1 - s / y1) * (kHeight - kTop - kBottom); };
  std::string svg = "<svg width=" + num(kWidth, "%.0f") + " height=" + num(kHeight, "%.0f") + " role=img>";
  svg += "<text x=4 y=14 class=title>" + html_text(clip(q.name, 40)) + ": " +
         html_text(q.name == "(program)" ? "the regions' models and the rest's summed" : q.model.growth()) + "</text>";
  svg += "<line x1=" + num(kLeft) + " y1=" + num(Y(0)) + " x2=" + num(kWidth - kRight) + " y2=" + num(Y(0)) +
         " stroke=#888 /><line x1=" + num(kLeft) + " y1=" + num(kTop) + " x2=" + num(kLeft) + " y2=" + num(Y(0)) +
         " stroke=#888 />";
  svg += "<text x=2 y=" + num(kTop + 8) + ">" + html_text(format_seconds(y1)) + "</text><text x=" + num(kLeft) +
         " y=" + num(kHeight - 8) + ">" + num(x0, "%.0f") + "</text><text x=" + num(kWidth - kRight - 30) +
         " y=" + num(kHeight - 8) + ">" + num(x1, "%.0f") + " ranks</text>";
  std::string curve;
  for (int k = 0; k <= 80; ++k) {
    const double p = x0 + span * k / 80;
    curve += num(X(p)) + "," + num(Y(std::min(y1, curve_at(p)))) + " ";
  }
  svg += "<polyline fill=none stroke=#36c stroke-width=1.5 points=\"" + curve + "\"><title>" +
         html_text(q.model.formula()) + "</title></polyline>";
  for (size_t k = 0; k < q.ranks.size(); ++k)
    svg += "<circle cx=" + num(X(q.ranks[k])) + " cy=" + num(Y(q.measured_s[k])) + " r=3.5 fill=#c33><title>" +
           num(q.ranks[k], "%.0f") + " ranks: " + html_text(format_seconds(q.measured_s[k])) +
           " measured</title></circle>";
  for (const auto &[p, s] : q.predicted_s)
    svg += "<circle cx=" + num(X(static_cast<double>(p))) + " cy=" + num(Y(s)) +
           " r=4 fill=none stroke=#36c stroke-width=1.5><title>" + std::to_string(p) +
           " ranks: " + html_text(format_seconds(s)) + " predicted</title></circle>";
  return svg + "</svg>";
}

void efficiency_table(std::string &out, const ScalingAnalysis &a) {
  out +=
      "<h2>Efficiency (POP)</h2><table><tr><th>ranks</th><th>program</th><th>parallel</th><th>load balance</th>"
      "<th>communication</th><th>serialisation</th><th>transfer</th><th>computation scalability</th>"
      "<th>global</th></tr>";
  for (const auto &r : a.runs) {
    const auto &e = r.efficiency;
    out += "<tr><td>" + std::to_string(r.results.ranks) + "</td><td>" +
           html_text(format_seconds(r.results.program_time_s)) + "</td>";
    if (!e.present) {
      out += "<td colspan=7>n/a (results store without /efficiency: re-run analyze)</td></tr>";
      continue;
    }
    for (const double v : {e.parallel, e.load_balance, e.communication, e.serialisation, e.transfer,
                           e.computation_scalability, e.global})
      out += std::string("<td") + (std::isfinite(v) && v < 0.8 ? " class=low" : "") + ">" + cell(v) + "</td>";
    out += "</tr>";
  }
  out += "</table>";
}

void model_table(std::string &out, const ScalingAnalysis &a) {
  out += "<h2>Models</h2><table><tr><th>region</th><th>model (s; p = ranks)</th><th>SMAPE</th><th>leave-one-out</th>";
  for (const int64_t p : a.targets) out += "<th>at " + std::to_string(p) + "</th>";
  out += "</tr>";
  std::vector<const ScaledQuantity *> rows{&a.program_time, &a.rest};
  for (const auto &q : a.regions) rows.push_back(&q);
  for (const auto *q : rows) {
    out += "<tr><td>" + html_text(q->name) + "</td><td>" + html_text(q->model.formula()) + "</td><td>" +
           num(q->model.smape, "%.1f %%") + "</td><td>" +
           (q->model.cv_smape >= 0 ? num(q->model.cv_smape, "%.1f %%") : "-") + "</td>";
    for (const int64_t p : a.targets) out += "<td>" + html_text(format_seconds(q->predicted_s.at(p))) + "</td>";
    out += "</tr>";
  }
  out += "</table>";
}

}  // namespace

std::string scaling_html(const ScalingAnalysis &a) {
  std::string out =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>perfsift scaling</title><style>"
      "body{font-family:sans-serif;margin:1.5em;max-width:80em}table{border-collapse:collapse;margin:.5em 0}"
      "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}td:first-child,th{text-align:left}"
      "td.low{color:#c00}.answer{font-size:1.1em;background:#f4f7fb;padding:.5em 1em;border-left:4px solid #36c}"
      ".plots{display:flex;flex-wrap:wrap;gap:1em}svg text{font:10px sans-serif;fill:#333}svg "
      "text.title{font-weight:bold}"
      "</style></head><body><h1>perfsift scaling: " +
      html_text(a.program) + "</h1><div class=answer>";
  for (const auto &sentence : scaling_answer(a)) out += "<p>" + html_text(sentence) + "</p>";
  out += "</div>";
  efficiency_table(out, a);
  out +=
      "<h2>Top regions</h2><p>Time on the rank that sets the pace: measured (filled) and the fitted model (line) out "
      "to the predictions (hollow).</p><div class=plots>";
  out += plot(a.program_time, a.targets, [&a](double p) { return a.program_at(p); });
  for (size_t i = 0; i < a.regions.size() && i < kPlots; ++i) {
    const auto &model = a.regions[i].model;
    out += plot(a.regions[i], a.targets, [&model](double p) { return model.at(p); });
  }
  out += "</div>";
  model_table(out, a);
  out += "<h2>Runs</h2><ul>";
  for (const auto &r : a.runs)
    out += "<li>" + std::to_string(r.results.ranks) + " ranks: " + html_text(r.results.path) + ", program " +
           html_text(format_seconds(r.results.program_time_s)) + ", started " + html_text(r.results.start_time) +
           "</li>";
  out += "</ul></body></html>\n";
  return out;
}

}  // namespace perfsift::pipeline
