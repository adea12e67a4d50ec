#include "pipeline/runs/comparison_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "io/results_store.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/runs/comparison_report.h"

namespace perfsift::pipeline {

namespace {

constexpr int64_t kHeatRanks = 32;   // rows of a heat table: every k-th rank beyond
constexpr size_t kHeatRegions = 10;  // columns: the regions with the most wall time before
constexpr size_t kTableRows = 50;

std::string seconds(double s) { return html_text(format_seconds(s)); }

struct Heat {
  std::vector<std::string> regions;
  int64_t ranks = 0;
  std::vector<double> comp;  // [rank][region], the regions above
};

// A side's first run's rank x region computation (self, MPI taken out), for the regions named.
Heat heat_of(const RunResults &run, const std::vector<std::string> &regions) {
  Heat h;
  h.regions = regions;
  const io::ResultsStore rs(run.path);
  if (!has_child(rs, "profile", "rank_region_comp_s")) return h;
  const auto info = rs.matrix_info("profile/rank_region_comp_s");
  const auto values = rs.matrix("profile/rank_region_comp_s");
  std::map<std::string, size_t> col;
  for (size_t k = 0; k < info.col_labels.size(); ++k) col.emplace(info.col_labels[k], k);
  h.ranks = info.rows;
  h.comp.assign(static_cast<size_t>(h.ranks) * regions.size(), std::nan(""));
  for (int64_t r = 0; r < h.ranks; ++r)
    for (size_t g = 0; g < regions.size(); ++g)
      if (const auto it = col.find(regions[g]); it != col.end())
        h.comp[static_cast<size_t>(r) * regions.size() + g] = values[static_cast<size_t>(r * info.cols) + it->second];
  return h;
}

void heat_table(std::string &out, const char *title, const Heat &h, double top) {
  out += "<div class=heat><h3>" + std::string(title) + "</h3>";
  if (h.ranks == 0) {
    out += "<p>no rank x region computation (the profile stage did not run)</p></div>";
    return;
  }
  const int64_t step = std::max<int64_t>(1, (h.ranks + kHeatRanks - 1) / kHeatRanks);
  if (step > 1) out += "<p>every " + std::to_string(step) + "th rank of " + std::to_string(h.ranks) + "</p>";
  out += "<table><tr><th>rank</th>";
  for (const auto &r : h.regions) out += "<th>" + html_text(clip(r, 24)) + "</th>";
  out += "</tr>";
  for (int64_t r = 0; r < h.ranks; r += step) {
    out += "<tr><th>" + std::to_string(r) + "</th>";
    for (size_t g = 0; g < h.regions.size(); ++g) {
      const double v = h.comp[static_cast<size_t>(r) * h.regions.size() + g];
      const int shade =
          std::isfinite(v) && top > 0 ? static_cast<int>(std::lround(255 * (1 - std::min(1.0, v / top)))) : 255;
      char cell[160];
      std::snprintf(cell, sizeof cell, "<td style=\"background:rgb(255,%d,%d)\">%s</td>", shade, shade,
                    seconds(v).c_str());
      out += cell;
    }
    out += "</tr>";
  }
  out += "</table></div>";
}

void answer_box(std::string &out, const char *title, const std::vector<std::string> &lines) {
  out += "<div class=side><h3>" + std::string(title) + "</h3>";
  std::string text;
  for (const auto &l : lines) text += (text.empty() ? "" : " ") + l;  // the text report's line breaks undone
  out += "<p>" + html_text(text) + "</p></div>";
}

void problems(std::string &out, const Comparison &c) {
  out +=
      "<h2>Problems</h2><table><tr><th>status</th><th>kind</th><th>where</th><th>ranks</th><th>lost before</th>"
      "<th>lost after</th><th>predicted</th><th>realised</th><th>verdict</th></tr>";
  for (size_t i = 0; i < c.problems.size() && i < kTableRows; ++i) {
    const auto &p = c.problems[i];
    const SideProblem *b = c.before_of(p), *a = c.after_of(p);
    const SideProblem *s = b ? b : a;
    const double realised = std::isfinite(p.realised_gain_s) ? p.realised_gain_s : p.realised_at_problem_s;
    out += std::string("<tr class=") + status_word(p.match.status) + "><td>" + status_word(p.match.status) +
           "</td><td>" + html_text(s->row.kind) + "</td><td>" + html_text(s->row.where) +
           (b && a && a->row.where != b->row.where ? " &rarr; " + html_text(a->row.where) : "") + "</td><td>" +
           html_text(s->row.ranks) +
           (b && a && a->row.ranks != b->row.ranks ? " &rarr; " + html_text(a->row.ranks) : "") + "</td><td>" +
           (b ? seconds(p.lost_before_s) : "-") + "</td><td>" + (a ? seconds(p.lost_after_s) : "-") + "</td><td>" +
           seconds(p.predicted_gain_s) + "</td><td>" + (b ? seconds(realised) : "-") + "</td><td>" +
           verdict_words(p.verdict) + "</td></tr>";
  }
  out += "</table>";
}

void calls(std::string &out, const std::vector<CallsChange> &rows, const char *title, const char *what) {
  if (rows.empty()) return;
  out += std::string("<h2>") + title + "</h2><table><tr><th>" + what +
         "</th><th>time before</th><th>time after</th><th>calls before</th><th>calls after</th></tr>";
  for (size_t i = 0; i < rows.size() && i < kTableRows; ++i) {
    const auto &o = rows[i];
    char counts[96];
    std::snprintf(counts, sizeof counts, "</td><td>%.0f</td><td>%.0f</td></tr>", o.calls_before, o.calls_after);
    out += "<tr><td>" + html_text(o.name) + "</td><td>" + seconds(o.time.before_mean) + "</td><td>" +
           seconds(o.time.after_mean) + counts;
  }
  out += "</table>";
}

void regions(std::string &out, const Comparison &c) {
  out +=
      "<h2>Regions</h2><table><tr><th>region</th><th>wall before</th><th>wall after</th><th>change</th>"
      "<th>MPI before</th><th>MPI after</th></tr>";
  for (size_t i = 0; i < c.regions.size() && i < kTableRows; ++i) {
    const auto &r = c.regions[i];
    out += "<tr><td>" + html_text(r.path) + "</td><td>" + seconds(r.wall.before_mean) + "</td><td>" +
           seconds(r.wall.after_mean) + "</td><td>" + seconds(r.wall.change) + "</td><td>" +
           seconds(r.mpi.before_mean) + "</td><td>" + seconds(r.mpi.after_mean) + "</td></tr>";
  }
  out += "</table>";
  calls(out, c.operations, "MPI operations", "operation");
  calls(out, c.callsites, "Call sites", "call site");
}

// The regions both heat tables show: the most wall time before (then after) first.
std::vector<std::string> heat_regions(const Comparison &c) {
  std::vector<const RegionChange *> order;
  for (const auto &r : c.regions) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const RegionChange *x, const RegionChange *y) {
    return std::max(x->wall.before_mean, x->wall.after_mean) > std::max(y->wall.before_mean, y->wall.after_mean);
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < order.size() && i < kHeatRegions; ++i) out.push_back(order[i]->path);
  return out;
}

double largest(const Heat &h) {
  double top = 0;
  for (const double v : h.comp)
    if (std::isfinite(v)) top = std::max(top, v);
  return top;
}

}  // namespace

std::string comparison_html(const Comparison &c, const std::vector<std::string> &before_answer,
                            const std::vector<std::string> &after_answer) {
  std::string out =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>perfsift comparison</title><style>"
      "body{font-family:sans-serif;margin:1.5em;max-width:80em}table{border-collapse:collapse;margin:.5em 0}"
      "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}td:nth-child(-n+4),th{text-align:left}"
      ".answer{font-size:1.1em;background:#f4f7fb;padding:.5em 1em;border-left:4px solid #36c}"
      ".sides,.heats{display:flex;gap:2em;flex-wrap:wrap}.side,.heat{flex:1;min-width:20em}"
      "tr.gone td:first-child{color:#080}tr.new td:first-child{color:#c00}tr.moved td:first-child{color:#a60}"
      "</style></head><body><h1>perfsift comparison</h1><div class=answer>";
  for (const auto &sentence : comparison_answer(c)) out += "<p>" + html_text(sentence) + "</p>";
  out += "</div><h2>Each run's own answer</h2><div class=sides>";
  answer_box(out, "before", before_answer);
  answer_box(out, "after", after_answer);
  out += "</div>";
  problems(out, c);
  out +=
      "<h2>Computation per rank and region (self time without MPI; the first run of each side, one colour "
      "scale)</h2><div class=heats>";
  const auto names = heat_regions(c);
  const Heat before = c.before.empty() ? Heat{} : heat_of(c.before.front(), names);
  const Heat after = c.after.empty() ? Heat{} : heat_of(c.after.front(), names);
  const double top = std::max(largest(before), largest(after));
  heat_table(out, "before", before, top);
  heat_table(out, "after", after, top);
  out += "</div>";
  regions(out, c);
  out += "<h2>Runs</h2><ul>";
  for (const auto *side : {&c.before, &c.after})
    for (const auto &r : *side)
      out += std::string("<li>") + (side == &c.before ? "before" : "after") + ": " + html_text(r.path) + " &mdash; " +
             std::to_string(r.ranks) + " ranks, program " + seconds(r.program_time_s) + ", started " +
             html_text(r.start_time) + ", " + html_text(r.command) + "</li>";
  out += "</ul></body></html>\n";
  return out;
}

}  // namespace perfsift::pipeline
