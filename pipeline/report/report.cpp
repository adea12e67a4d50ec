// The text and JSON reports of a results store: the run, the ranked problems, then each
// stage's own part (its view, else its group as stored).
#include "pipeline/report/report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

#include "pipeline/format/text.h"
#include "pipeline/format/json_writer.h"
#include "pipeline/format/results_view.h"
#include "pipeline/engine/problem_kinds.h"
#include "pipeline/report/views/efficiency.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

// A problem's identity columns (place_*, fix_*) are for programs that match problems
// across runs; the reports show the rest.
bool is_identity_column(const std::string &name) { return name.rfind("place", 0) == 0 || name.rfind("fix_", 0) == 0; }

void write_attr_value(JsonWriter &j, const io::AttrValue &v) {
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<int64_t>>)
          j.values(x);
        else
          j.value(x);
      },
      v);
}

ReportLimits resolve(const io::ResultsStore &rs, ReportLimits l) {
  const auto root = rs.attributes("");
  if (l.top < 0) l.top = attr_or<int64_t>(root, "report_top", 10);
  if (l.json_max_rows < 0) l.json_max_rows = attr_or<int64_t>(root, "report_json_max_rows", 1000);
  if (l.width < 0) l.width = attr_or<int64_t>(root, "report_width", 100);
  l.width = std::max<int64_t>(l.width, 60);
  return l;
}

// A table as a JSON array of row objects; `more` may add keys to row r's object.
void write_table_json(JsonWriter &j, const io::Table &t, const std::function<void(size_t)> &more = {}) {
  j.begin_array();
  for (size_t r = 0; r < t.rows(); ++r) {
    j.begin_object();
    for (const auto &c : t.columns) {
      j.key(c.name);
      std::visit([&](const auto &col) { j.value(col[r]); }, c.values);
    }
    if (more) more(r);
    j.end_object();
  }
  j.end_array();
}

// One line on what else saw problem k (1-based) and the waiting it causes; empty when only
// its own method saw it and it causes none.
std::string evidence_summary(const io::Table &ev, size_t k) {
  const auto &problem = column<int64_t>(ev, "problem");
  const auto &role = column<std::string>(ev, "role"), &kind = column<std::string>(ev, "kind"),
             &stage = column<std::string>(ev, "stage"), &where = column<std::string>(ev, "where"),
             &ranks = column<std::string>(ev, "ranks");
  const auto &lost = column<double>(ev, "lost_s");
  std::string seen, symptoms;
  std::vector<std::string> methods;  // each once: one method seeing the cause at two places is still one
  for (size_t r = 0; r < ev.rows(); ++r) {
    if (problem[r] != static_cast<int64_t>(k)) continue;
    if (role[r] == "evidence") {
      const std::string method = stage[r] + " (" + kind[r] + ")";
      if (std::find(methods.begin(), methods.end(), method) != methods.end()) continue;
      methods.push_back(method);
      seen += (seen.empty() ? "" : ", ") + method;
    } else {
      symptoms += (symptoms.empty() ? "" : "; ") + kind[r] + " at " + clip(where[r], 40) + " on ranks " +
                  clip(ranks[r], 20) + ", " + format_seconds(lost[r]);
    }
  }
  std::string out = methods.size() > 1 ? "seen by " + seen : "";
  if (!symptoms.empty()) out += (out.empty() ? "" : "; ") + std::string("causes ") + symptoms;
  return out;
}

// The problems: each /problems row with its evidence and symptoms from /evidence.
void write_problems_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto t = problems_for_readers(rs);
  const io::Table ev = rs.table("evidence");
  std::vector<std::vector<size_t>> rows_of(t.rows());
  const auto &problem = column<int64_t>(ev, "problem");
  for (size_t r = 0; r < problem.size(); ++r)
    if (problem[r] >= 1 && static_cast<size_t>(problem[r]) <= rows_of.size())
      rows_of[static_cast<size_t>(problem[r] - 1)].push_back(r);
  write_table_json(j, t, [&](size_t r) {
    for (const char *role : {"evidence", "symptom"}) {
      j.key(std::string(role) == "evidence" ? "evidence" : "symptoms").begin_array();
      for (size_t e : rows_of[r]) {
        if (column<std::string>(ev, "role")[e] != role) continue;
        j.begin_object();
        for (const char *k : {"stage", "kind", "where", "ranks"}) j.key(k).value(column<std::string>(ev, k)[e]);
        j.key("lost_s").value(column<double>(ev, "lost_s")[e]);
        j.key("cause").value(column<std::string>(ev, "cause")[e]);
        j.end_object();
      }
      j.end_array();
    }
  });
}

using JsonHook = std::function<void(JsonWriter &, const io::ResultsStore &)>;

void write_group_json(JsonWriter &j, const io::ResultsStore &rs, const std::string &group, int64_t max_rows,
                      const JsonHook *extra = nullptr) {
  j.begin_object();
  for (const auto &[k, v] : rs.attributes(group)) {
    if (k == "description") continue;
    j.key(k);
    write_attr_value(j, v);
  }
  for (const auto &c : rs.children(group)) {
    const std::string path = group + "/" + c.name;
    j.key(c.name);
    if (c.kind == io::ResultsStore::Kind::Group) {
      write_group_json(j, rs, path, max_rows);
    } else if (c.kind == io::ResultsStore::Kind::Table) {
      const auto t = rs.table(path);
      if (static_cast<int64_t>(t.rows()) <= max_rows)
        write_table_json(j, t);
      else {
        std::vector<std::string> cols;
        for (const auto &col : t.columns) cols.push_back(col.name);
        j.begin_object().key("rows").value(static_cast<int64_t>(t.rows())).key("columns").values(cols);
        j.key("hdf5").value("/" + path).end_object();
      }
    } else {
      const auto info = rs.matrix_info(path);
      j.begin_object();
      j.key("dims").values(std::vector<std::string>{info.row_dim, info.col_dim});
      j.key("shape").values(std::vector<int64_t>{info.rows, info.cols});
      j.key("units").value(info.units);
      j.key("columns").values(info.col_labels);
      j.key("hdf5").value("/" + path);
      if (info.rows <= max_rows) {
        const auto m = rs.matrix(path);
        j.key("values").begin_array();
        for (int64_t r = 0; r < info.rows; ++r)
          j.values(std::vector<double>(m.begin() + r * info.cols, m.begin() + (r + 1) * info.cols));
        j.end_array();
      }
      j.end_object();
    }
  }
  if (extra) (*extra)(j, rs);
  j.end_object();
}

// "0.25 s program (start-up 0.92 s and shut-down 1 ms not counted; 1.17 s wall)"
std::string run_times(const Attrs &run) {
  const double wall = attr_or<double>(run, "wall_time_s", 0), program = attr_or<double>(run, "program_time_s", 0);
  if (program <= 0) return format_seconds(wall) + " wall";
  return format_seconds(program) + " program (start-up " + format_seconds(attr_or<double>(run, "startup_s", 0)) +
         " and shut-down " + format_seconds(attr_or<double>(run, "shutdown_s", 0)) + " not counted; " +
         format_seconds(wall) + " wall)";
}

std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &x : v) s += (s.empty() ? "" : ", ") + printable(x);
  return s;
}

// What a run without a problem is: ": MPI is 13 % of the program, mostly 352,954
// MPI_Allreduce calls of 3 us" (start-up and shut-down left out); empty without a profile.
std::string mpi_summary(const io::ResultsStore &rs, double run_s) {
  if (!has_child(rs, "", "profile") || !has_child(rs, "profile", "ops") || !(run_s > 0)) return "";
  const auto ops = operations_by_time(rs.table("profile/ops"));
  double mpi = 0;
  for (const auto &o : ops.program) mpi += o.time_s;
  if (ops.program.empty() || !(mpi > 0)) return ": the program spends no time in MPI calls";
  const double ranks = static_cast<double>(std::max<int64_t>(1, attr_or<int64_t>(rs.attributes("run"), "ranks", 1)));
  const OperationTime &top = ops.program.front();
  return ": MPI is " + format_percent(mpi / ranks / run_s) + " of the program, mostly " + format_count(top.calls) +
         " " + top.op + " calls of " +
         format_seconds(top.calls > 0 ? top.time_s / static_cast<double>(top.calls) : 0.0);
}

}  // namespace

io::Table problems_for_readers(const io::ResultsStore &rs) {
  io::Table t = rs.table("problems");
  std::erase_if(t.columns, [](const io::Column &c) { return is_identity_column(c.name); });
  return t;
}

std::string render_json(const io::ResultsStore &rs, const ReportLimits &lim) {
  const ReportLimits l = resolve(rs, lim);
  JsonWriter j;
  const auto root = rs.attributes("");
  j.begin_object();
  j.key("format").value(attr_or<std::string>(root, "format", ""));
  j.key("version").value(attr_or<int64_t>(root, "version", 0));
  j.key("source").begin_object();
  j.key("path").value(attr_or<std::string>(root, "source_store", ""));
  j.key("checksum").value(attr_or<std::string>(root, "source_checksum", ""));
  j.end_object();
  j.key("run");
  write_group_json(j, rs, "run", l.json_max_rows);
  j.key("warnings").values(attr_or<std::vector<std::string>>(root, "warnings", {}));
  j.key("configuration").value(attr_or<std::string>(root, "configuration_effective", ""));
  j.key("findings");
  write_problems_json(j, rs);
  j.key("notes");
  write_table_json(j, rs.table("notes"));
  for (const auto &stage : attr_or<std::vector<std::string>>(root, "stages", {})) {
    const auto *info = find_view(stage);
    j.key(info && !info->json_key.empty() ? info->json_key : stage);
    if (info && info->json_value)
      info->json_value(j, rs);
    else
      write_group_json(j, rs, stage, l.json_max_rows, info && info->json ? &info->json : nullptr);
  }
  j.end_object();
  return j.take();
}

std::vector<std::string> answer_lines(const io::ResultsStore &rs, size_t width) {
  const double run_s = program_time_s(rs.attributes("run"));
  const auto f = rs.table("problems");
  const auto share = [&](double s) { return run_s > 0 ? " (" + format_percent(s / run_s) + " of the run)" : ""; };
  const std::string disturbed = disturbed_run_words(rs);
  if (f.rows() == 0) {
    const size_t notes = rs.table("notes").rows();
    auto lines =
        wrap("Answer: no problem worth fixing" + mpi_summary(rs, run_s) +
                 (notes ? " (" + std::to_string(notes) + " method outputs are notes, below)." : std::string(".")),
             width, 3);
    if (!disturbed.empty())
      for (const auto &w : wrap(disturbed, width - 2, 3)) lines.push_back("  " + w);
    return lines;
  }
  const std::string &id = column<std::string>(f, "kind")[0];
  const auto known = find_problem_kind(id);
  const std::string kind = known ? std::string(kind_info(*known).name) : id;
  const std::string &where = column<std::string>(f, "where")[0], &ranks = column<std::string>(f, "ranks")[0];
  const double lost = column<double>(f, "lost_s")[0], gain = column<double>(f, "predicted_gain_s")[0];
  const auto *q = f.find("question");
  const std::string question = q ? column<std::string>(f, "question")[0] : "";
  const auto &fix_column = column<std::string>(f, "fix");
  const std::string fix = fix_column.empty() || fix_column[0].empty() ? question : fix_column[0];
  std::string text =
      "Answer: " + kind + " in " + clip(where, 60) + ", on " +
      (ranks == "all"
           ? "all ranks"
           : "rank" + std::string(ranks.find_first_of(",-") == std::string::npos ? " " : "s ") + clip(ranks, 40)) +
      ": " + format_seconds(lost) + " at stake" + share(lost) + "; ";
  if (std::isnan(gain) && !fix.empty())
    text += "the replay cannot price its fix (" + clip(fix, 90) + "): see why.";
  else if (std::isnan(gain))
    text += "no fix was priced (the whatif stage did not run or states none).";
  else if (fix.empty())
    text += "its fix is predicted to save " + format_seconds(gain) + share(gain) + ".";
  else
    text += clip(fix, 120) + ": predicted to save " + format_seconds(gain) + share(gain) + ".";
  std::vector<std::string> lines = wrap(text, width, 2);
  // A gain far from the time at stake is explained first: the rest of the cause may not fit.
  std::string why = column<std::string>(f, "cause")[0];
  if (const size_t gap = why.find("; the fix gains "); gap != std::string::npos)
    why = why.substr(gap + 2) + "; " + why.substr(0, gap);
  for (const auto &w : wrap("Why: " + why, width - 2, 3)) lines.push_back("  " + w);
  if (!disturbed.empty())
    for (const auto &w : wrap(disturbed, width - 2, 3)) lines.push_back("  " + w);
  return lines;
}

std::string render_text(const io::ResultsStore &rs, const ReportLimits &lim) {
  const ReportLimits l = resolve(rs, lim);
  std::ostringstream os;
  const auto root = rs.attributes("");
  const auto run = rs.attributes("run");
  os << "perfsift analysis of " << printable(attr_or<std::string>(root, "source_store", "?")) << "\n";
  if (const auto aborted = attr_or<std::string>(run, "aborted", ""); !aborted.empty())
    for (const auto &line : wrap("The program aborted: " + aborted + ". What follows covers the run up to there.",
                                 static_cast<size_t>(l.width), 3))
      os << line << "\n";
  for (const auto &line : answer_lines(rs, static_cast<size_t>(l.width))) os << line << "\n";
  os << "\n";
  os << "run: " << attr_or<int64_t>(run, "ranks", 0) << " ranks, " << run_times(run) << ", started "
     << printable(attr_or<std::string>(run, "start_time", "?")) << "\n";
  const auto cmd = attr_or<std::string>(run, "command", "");
  if (!cmd.empty()) os << "command: " << clip(cmd, 100) << "\n";
  const auto unavailable = attr_or<std::vector<std::string>>(run, "counters_unavailable", {});
  if (!unavailable.empty())
    os << "counters not recorded: " << join(unavailable) << " (analyses that need them fall back and say so)\n";
  for (const auto &w : attr_or<std::vector<std::string>>(root, "warnings", {}))
    os << "warning: " << printable(w) << "\n";
  for (const auto &line : efficiency_lines(rs, static_cast<size_t>(l.width))) os << line << "\n";

  const auto f = rs.table("problems");
  const io::Table ev = rs.table("evidence");
  const auto &kind = column<std::string>(f, "kind"), &where = column<std::string>(f, "where"),
             &ranks = column<std::string>(f, "ranks"), &cause = column<std::string>(f, "cause");
  const auto &lost = column<double>(f, "lost_s"), &gain = column<double>(f, "predicted_gain_s");
  os << "\n";
  if (f.rows() == 0)
    os << "No findings: no region, rank or operation crossed the reporting thresholds.\n";
  else {
    os << "Top findings (" << std::min<int64_t>(l.top, static_cast<int64_t>(f.rows())) << " of " << f.rows()
       << "; lost = time at stake, gain = simulated payoff of a fix):\n";
    char line[512];
    std::snprintf(line, sizeof line, "  %2s  %-15s %-24s %-12s %9s %9s\n", "#", "kind", "where", "ranks", "lost",
                  "gain");
    os << line;
    for (size_t r = 0; r < f.rows() && static_cast<int64_t>(r) < l.top; ++r) {
      std::snprintf(line, sizeof line, "  %2zu  %-15s %-24s %-12s %9s %9s\n", r + 1, clip(kind[r], 15).c_str(),
                    clip(where[r], 24).c_str(), clip(ranks[r], 12).c_str(), format_seconds(lost[r]).c_str(),
                    std::isnan(gain[r]) ? "n/a" : format_seconds(gain[r]).c_str());
      os << line;
      for (const auto &w : wrap(cause[r], static_cast<size_t>(l.width) - 6, 2)) os << "      " << w << "\n";
      const std::string seen = evidence_summary(ev, r + 1);
      if (!seen.empty())
        for (const auto &w : wrap(seen, static_cast<size_t>(l.width) - 6, 2)) os << "      " << w << "\n";
    }
  }
  if (const auto n = rs.table("notes"); n.rows() > 0) {
    const auto &nkind = column<std::string>(n, "kind"), &nwhere = column<std::string>(n, "where"),
               &reason = column<std::string>(n, "reason");
    os << "\nNotes, not problems (" << n.rows() << "):\n";
    for (size_t r = 0; r < n.rows() && r < 5; ++r)
      for (const auto &w : wrap(clip(nkind[r], 20) + " at " + clip(nwhere[r], 40) + ": " + reason[r],
                                static_cast<size_t>(l.width) - 4, 2))
        os << "  " << w << "\n";
  }
  for (const auto &stage : attr_or<std::vector<std::string>>(root, "stages", {}))
    if (const auto *info = find_view(stage); info && info->text) info->text(os, rs);
  os << "\nDetails: " << printable(rs.path()) << " (HDF5; see docs/results.md), or perfsift report "
     << printable(rs.path()) << " --format json\n";
  // The stages' parts print names through clip() and wrap(); a name printed whole still
  // cannot carry a control character or an ill-formed byte to the terminal.
  return printable(os.str(), true);
}

}  // namespace perfsift::pipeline
