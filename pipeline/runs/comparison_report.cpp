#include "pipeline/runs/comparison_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pipeline/engine/problem_kinds.h"
#include "pipeline/format/json_writer.h"
#include "pipeline/format/text.h"

namespace perfsift::pipeline {

namespace {

constexpr size_t kWidth = 100;
constexpr size_t kAnswerProblems = 4;  // the answer: program time, then at most four problems
constexpr size_t kTableRows = 10;
// A problem the answer names: at least this share of the program at stake on one side.
constexpr double kAnswerShare = 0.01;

std::string kind_name(const std::string &id) {
  const auto known = find_problem_kind(id);
  return known ? std::string(kind_info(*known).name) : id;
}

std::string on_ranks(const std::string &ranks) {
  if (ranks == "all") return "all ranks";
  return (ranks.find_first_of(",-") == std::string::npos ? "rank " : "ranks ") + clip(ranks, 40);
}

std::string named(const ProblemRow &p) {
  return kind_name(p.kind) + " in " + clip(p.where, 60) + " on " + on_ranks(p.ranks);
}

std::string percent(double ratio) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f %%", 100 * ratio);
  return b;
}

std::string runs_word(int n) { return n == 1 ? "one run" : std::to_string(n) + " runs"; }

// The noise behind a change, in words.
std::string noise_words(const SampleChange &s) {
  if (!s.noise_known) return "one run per side: the noise is unknown";
  char b[160];
  std::snprintf(b, sizeof b, "%s before, %s after: %s the noise, p = %.3g", runs_word(s.before_runs).c_str(),
                runs_word(s.after_runs).c_str(), s.beyond_noise() ? "beyond" : "within", s.p_value);
  return b;
}

std::string program_line(const Comparison &c) {
  const SampleChange &p = c.program;
  const std::string times =
      "program " + format_seconds(p.before_mean) + " before, " + format_seconds(p.after_mean) + " after";
  std::string head;
  if (p.change == 0)
    head = "BEFORE and AFTER take the same program time (" + times + "; ";
  else if (p.noise_known && !p.beyond_noise())
    head = "AFTER runs as fast as BEFORE within the noise (" + format_seconds(p.change) + ", " + times + "; ";
  else
    head = std::string("AFTER runs ") + format_seconds(std::abs(p.change)) + (p.change <= 0 ? " faster" : " slower") +
           " (" + percent(std::abs(p.relative())) + "; " + times + "; ";
  std::string line = head + noise_words(p) + ").";
  if (c.per_rank)
    line += " The runs differ in rank count (" + std::to_string(c.before_ranks) + " before, " +
            std::to_string(c.after_ranks) +
            " after): operations and call sites compare per rank, culprits by their share "
            "of the ranks.";
  return line;
}

std::string prediction_words(const ProblemComparison &p, bool alone) {
  if (p.verdict == PredictionVerdict::Unpriced) return "no fix was priced";
  const double realised = std::isfinite(p.realised_gain_s) ? p.realised_gain_s : p.realised_at_problem_s;
  std::string s = "predicted to save " + format_seconds(p.predicted_gain_s) + ", " +
                  (alone ? "the program saved " : "saved at the problem ") + format_seconds(realised);
  if (std::isfinite(p.ratio()))
    s += " (" + percent(p.ratio()) + " of the prediction: " + verdict_words(p.verdict) + ")";
  return s;
}

std::string problem_line(const Comparison &c, const ProblemComparison &p) {
  const SideProblem *b = c.before_of(p), *a = c.after_of(p);
  const bool alone = std::isfinite(p.realised_gain_s);
  switch (p.match.status) {
    case ProblemStatus::Gone:
      return "The " + named(b->row) + " is gone: " + prediction_words(p, alone) + ".";
    case ProblemStatus::New:
      return "New: the " + named(a->row) + ", " + format_seconds(p.lost_after_s) + " at stake.";
    case ProblemStatus::Moved:
      return "The " + kind_name(b->row.kind) + " moved " + p.match.moved + ": " + clip(b->row.where, 40) + " on " +
             on_ranks(b->row.ranks) + " before, " + clip(a->row.where, 40) + " on " + on_ranks(a->row.ranks) +
             " after; " + format_seconds(p.lost_before_s) + " at stake before, " + format_seconds(p.lost_after_s) +
             " after" + (p.fixed ? "; " + prediction_words(p, alone) : "") + ".";
    case ProblemStatus::Persists:
      return "The " + named(b->row) + " persists: " + format_seconds(p.lost_before_s) + " at stake before, " +
             format_seconds(p.lost_after_s) + " after" + (p.fixed ? "; " + prediction_words(p, alone) : "") + ".";
  }
  return "";
}

void answer(std::string &out, const Comparison &c) {
  const auto sentences = comparison_answer(c);
  for (size_t k = 0; k < sentences.size(); ++k)
    for (const auto &w : wrap(sentences[k], k ? kWidth - 2 : kWidth, k ? 3 : 4)) out += (k ? "  " : "") + w + "\n";
}

void problem_table(std::string &out, const Comparison &c) {
  out +=
      "\nProblems (lost = time at stake; realised = the program's saving when this was the one fixed, else at the "
      "problem):\n";
  char line[320];
  std::snprintf(line, sizeof line, "  %-9s %-16s %-28s %-10s %9s %9s %9s %9s  %s\n", "status", "kind", "where", "ranks",
                "lost bef", "lost aft", "predicted", "realised", "verdict");
  out += line;
  for (size_t i = 0; i < c.problems.size() && i < kTableRows; ++i) {
    const auto &p = c.problems[i];
    const SideProblem *s = c.before_of(p) ? c.before_of(p) : c.after_of(p);
    const double realised = std::isfinite(p.realised_gain_s) ? p.realised_gain_s : p.realised_at_problem_s;
    std::snprintf(line, sizeof line, "  %-9s %-16s %-28s %-10s %9s %9s %9s %9s  %s\n", status_word(p.match.status),
                  clip(s->row.kind, 16).c_str(), clip(printable(s->row.where), 28).c_str(),
                  clip(s->row.ranks, 10).c_str(), format_seconds(p.lost_before_s).c_str(),
                  format_seconds(p.lost_after_s).c_str(), format_seconds(p.predicted_gain_s).c_str(),
                  format_seconds(p.match.before ? realised : std::nan("")).c_str(), verdict_words(p.verdict));
    out += line;
  }
  if (c.problems.size() > kTableRows)
    out += "  (" + std::to_string(c.problems.size() - kTableRows) + " more in the JSON report)\n";
}

void region_table(std::string &out, const Comparison &c) {
  if (c.regions.empty()) return;
  out += "\nRegions (mean over ranks; the largest changes first):\n";
  char line[320];
  std::snprintf(line, sizeof line, "  %-36s %10s %10s %10s %10s %10s  %s\n", "region", "wall bef", "wall aft", "change",
                "MPI bef", "MPI aft", "noise");
  out += line;
  for (size_t i = 0; i < c.regions.size() && i < kTableRows; ++i) {
    const auto &r = c.regions[i];
    std::snprintf(line, sizeof line, "  %-36s %10s %10s %10s %10s %10s  %s\n", clip(printable(r.path), 36).c_str(),
                  format_seconds(r.wall.before_mean).c_str(), format_seconds(r.wall.after_mean).c_str(),
                  format_seconds(r.wall.change).c_str(), format_seconds(r.mpi.before_mean).c_str(),
                  format_seconds(r.mpi.after_mean).c_str(),
                  !r.wall.noise_known     ? "unknown"
                  : r.wall.beyond_noise() ? "beyond"
                                          : "within");
    out += line;
  }
}

// MPI operations or call sites: time inside the calls, calls and bytes.
void calls_table(std::string &out, const Comparison &c, const std::vector<CallsChange> &rows, const char *title,
                 const char *what, size_t width) {
  if (rows.empty()) return;
  out += std::string("\n") + title + " (" + (c.per_rank ? "per rank" : "summed over ranks") +
         "; the largest changes of time first):\n";
  char line[400];
  const int w = static_cast<int>(width);
  std::snprintf(line, sizeof line, "  %-*s %10s %10s %10s %12s %12s %12s %12s\n", w, what, "time bef", "time aft",
                "change", "calls bef", "calls aft", "bytes bef", "bytes aft");
  out += line;
  for (size_t i = 0; i < rows.size() && i < kTableRows; ++i) {
    const auto &o = rows[i];
    std::snprintf(line, sizeof line, "  %-*s %10s %10s %10s %12.0f %12.0f %12.0f %12.0f\n", w,
                  clip(printable(o.name), width).c_str(), format_seconds(o.time.before_mean).c_str(),
                  format_seconds(o.time.after_mean).c_str(), format_seconds(o.time.change).c_str(), o.calls_before,
                  o.calls_after, o.bytes_before, o.bytes_after);
    out += line;
  }
}

void run_list(std::string &out, const char *side, const std::vector<RunResults> &runs) {
  for (const auto &r : runs)
    out += std::string("  ") + side + ": " + printable(r.path) + " - " + std::to_string(r.ranks) + " ranks, program " +
           format_seconds(r.program_time_s) + ", started " + printable(r.start_time) + ", " +
           clip(printable(r.command), 60) + "\n";
}

void change_json(JsonWriter &j, const SampleChange &s) {
  j.begin_object();
  j.key("before").value(s.before_mean).key("after").value(s.after_mean).key("change").value(s.change);
  j.key("before_sd").value(s.before_runs > 1 ? s.before_sd : std::nan(""));
  j.key("after_sd").value(s.after_runs > 1 ? s.after_sd : std::nan(""));
  j.key("noise_known").value(s.noise_known);
  j.key("p_value").value(s.noise_known ? s.p_value : std::nan(""));
  j.key("ci95").begin_array();
  j.value(s.noise_known ? s.ci95_low : std::nan("")).value(s.noise_known ? s.ci95_high : std::nan(""));
  j.end_array();
  j.key("beyond_noise").value(s.noise_known ? s.beyond_noise() : false);
  j.end_object();
}

void calls_json(JsonWriter &j, const std::vector<CallsChange> &rows, const char *key) {
  j.begin_array();
  for (const auto &o : rows) {
    j.begin_object().key(key).value(o.name).key("time_s");
    change_json(j, o.time);
    j.key("calls_before").value(o.calls_before).key("calls_after").value(o.calls_after);
    j.key("bytes_before").value(o.bytes_before).key("bytes_after").value(o.bytes_after);
    j.end_object();
  }
  j.end_array();
}

void runs_json(JsonWriter &j, const std::vector<RunResults> &runs) {
  j.begin_array();
  for (const auto &r : runs) {
    j.begin_object();
    j.key("results").value(r.path).key("store").value(r.source_store).key("command").value(r.command);
    j.key("ranks").value(r.ranks).key("start_time").value(r.start_time).key("hosts").value(r.hosts);
    j.key("mpi_library").value(r.mpi_library).key("program_time_s").value(r.program_time_s);
    j.end_object();
  }
  j.end_array();
}

void problem_json(JsonWriter &j, const Comparison &c, const ProblemComparison &p) {
  const SideProblem *b = c.before_of(p), *a = c.after_of(p);
  const SideProblem *s = b ? b : a;
  j.begin_object();
  j.key("status").value(status_word(p.match.status));
  if (p.match.status == ProblemStatus::Moved) j.key("moved").value(p.match.moved);
  j.key("kind").value(s->row.kind).key("where").value(s->row.where).key("ranks").value(s->row.ranks);
  if (b && a) j.key("where_after").value(a->row.where).key("ranks_after").value(a->row.ranks);
  j.key("lost_before_s").value(b ? p.lost_before_s : std::nan(""));
  j.key("lost_after_s").value(a ? p.lost_after_s : std::nan(""));
  j.key("predicted_gain_s").value(p.predicted_gain_s);
  j.key("question").value(b ? b->row.question : "");
  j.key("fixed").value(p.fixed);
  j.key("realised_gain_s").value(p.realised_gain_s);
  j.key("realised_at_problem_s").value(p.realised_at_problem_s);
  j.key("ratio").value(p.ratio());
  j.key("verdict").value(verdict_words(p.verdict));
  j.key("tolerance_s")
      .value(p.verdict == PredictionVerdict::Unpriced || p.verdict == PredictionVerdict::NotFixed ? std::nan("")
                                                                                                  : p.tolerance_s);
  j.end_object();
}

}  // namespace

std::vector<std::string> comparison_answer(const Comparison &c) {
  std::vector<std::string> out = {program_line(c)};
  const double program = std::max(c.program.before_mean, c.program.after_mean);
  size_t named = 0, small = 0;
  for (const auto &p : c.problems) {
    if (std::max(p.lost_before_s, p.lost_after_s) < kAnswerShare * program)
      ++small;
    else if (named++ < kAnswerProblems)
      out.push_back(problem_line(c, p));
  }
  if (small)
    out.push_back(std::to_string(small) + " problem" + (small > 1 ? "s" : "") + " with less than " +
                  percent(kAnswerShare) + " of the program at stake on either side: in the table.");
  if (c.fixed_problems > 1)
    out.push_back(std::to_string(c.fixed_problems) +
                  " problems were fixed together: each is judged by its own time at stake; the program's change is "
                  "theirs together.");
  if (c.problems.empty()) out.push_back("Neither side has a problem.");
  return out;
}

std::string comparison_text(const Comparison &c) {
  std::string out = "perfsift comparison of " + runs_word(static_cast<int>(c.before.size())) + " before and " +
                    runs_word(static_cast<int>(c.after.size())) + " after\n";
  answer(out, c);
  problem_table(out, c);
  region_table(out, c);
  calls_table(out, c, c.operations, "MPI operations", "operation", 22);
  calls_table(out, c, c.callsites, "Call sites", "call site", 56);
  out += "\nRuns:\n";
  run_list(out, "before", c.before);
  run_list(out, "after", c.after);
  return printable(out, true);
}

std::string comparison_json(const Comparison &c) {
  JsonWriter j;
  j.begin_object();
  j.key("format").value("perfsift-comparison").key("version").value(1);
  j.key("answer").begin_array();
  for (const auto &sentence : comparison_answer(c)) j.value(sentence);
  j.end_array();
  j.key("before").begin_object().key("runs");
  runs_json(j, c.before);
  j.end_object();
  j.key("after").begin_object().key("runs");
  runs_json(j, c.after);
  j.end_object();
  j.key("ranks_differ").value(c.per_rank);
  j.key("program_time_s");
  change_json(j, c.program);
  j.key("fixed_problems").value(c.fixed_problems);
  j.key("problems").begin_array();
  for (const auto &p : c.problems) problem_json(j, c, p);
  j.end_array();
  j.key("regions").begin_array();
  for (const auto &r : c.regions) {
    j.begin_object().key("path").value(r.path).key("wall_s");
    change_json(j, r.wall);
    j.key("mpi_s");
    change_json(j, r.mpi);
    j.key("visits_before").value(r.visits_before).key("visits_after").value(r.visits_after);
    j.end_object();
  }
  j.end_array();
  j.key("operations").begin_object().key("per_rank").value(c.per_rank).key("rows");
  calls_json(j, c.operations, "op");
  j.end_object();
  j.key("callsites").begin_object().key("per_rank").value(c.per_rank).key("rows");
  calls_json(j, c.callsites, "site");
  j.end_object();
  j.end_object();
  return j.take();
}

std::string slower_than_allowed(const Comparison &c, double max_share) {
  const SampleChange &p = c.program;
  if (p.change <= 0 || p.relative() <= max_share || (p.noise_known && !p.beyond_noise())) return "";
  char b[320];
  std::snprintf(b, sizeof b, "AFTER is slower: program time %s before, %s after (+%.1f %%, more than %.1f %%; %s)",
                format_seconds(p.before_mean).c_str(), format_seconds(p.after_mean).c_str(), 100 * p.relative(),
                100 * max_share, noise_words(p).c_str());
  return b;
}

}  // namespace perfsift::pipeline
