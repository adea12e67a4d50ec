#include "pipeline/runs/run_results.h"

#include <cmath>
#include <cstdio>
#include <variant>

#include "io/results_store.h"
#include "pipeline/format/results_view.h"

namespace perfsift::pipeline {

namespace {

// A column's value at row i as text, whatever its type ("" when the column is absent).
std::string cell_text(const io::Column &c, size_t i) {
  if (const auto *s = std::get_if<io::StringColumn>(&c.values)) return i < s->size() ? (*s)[i] : "";
  if (const auto *n = std::get_if<io::IntColumn>(&c.values)) return i < n->size() ? std::to_string((*n)[i]) : "";
  const auto &f = std::get<io::FloatColumn>(c.values);
  if (i >= f.size()) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", f[i]);
  return text;
}

// The identity columns whose names start with `prefix`, joined (a unit separator between).
std::string identity(const io::Table &t, const std::string &prefix, size_t i) {
  std::string out;
  for (const auto &c : t.columns)
    if (c.name.rfind(prefix, 0) == 0) out += c.name + "=" + cell_text(c, i) + '\x1f';
  return out;
}

template <class T>
T at(const std::vector<T> &column, size_t i, T fallback) {
  return i < column.size() ? column[i] : fallback;
}

std::vector<ProblemRow> read_problems(const io::ResultsStore &rs) {
  const io::Table t = rs.table("problems");
  const auto &rank = column<int64_t>(t, "rank");
  const auto &kind = column<std::string>(t, "kind"), &where = column<std::string>(t, "where");
  const auto &ranks = column<std::string>(t, "ranks"), &cause = column<std::string>(t, "cause");
  const auto &question = column<std::string>(t, "question");
  const auto &lost = column<double>(t, "lost_s"), &gain = column<double>(t, "predicted_gain_s");
  std::vector<ProblemRow> out;
  for (size_t i = 0; i < t.rows(); ++i) {
    ProblemRow p;
    p.rank = at<int64_t>(rank, i, static_cast<int64_t>(i) + 1);
    p.kind = at<std::string>(kind, i, "");
    p.where = at<std::string>(where, i, "");
    p.ranks = at<std::string>(ranks, i, "");
    p.cause = at<std::string>(cause, i, "");
    p.question = at<std::string>(question, i, "");
    p.lost_s = at<double>(lost, i, 0);
    p.predicted_gain_s = at<double>(gain, i, std::nan(""));
    p.place = identity(t, "place", i);
    p.fix = identity(t, "fix_", i);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<RegionRow> read_regions(const io::ResultsStore &rs) {
  if (!has_child(rs, "profile", "regions")) return {};
  const io::Table t = rs.table("profile/regions");
  const auto &path = column<std::string>(t, "path");
  const auto &wall = column<double>(t, "wall_mean_s"), &wall_max = column<double>(t, "wall_max_s");
  const auto &mpi = column<double>(t, "mpi_mean_s"), &comp_max = column<double>(t, "comp_max_s");
  const auto &visits = column<int64_t>(t, "visits"), &max_rank = column<int64_t>(t, "wall_max_rank");
  std::vector<RegionRow> out;
  for (size_t i = 0; i < t.rows(); ++i)
    out.push_back({at<std::string>(path, i, ""), at<double>(wall, i, 0), at<double>(wall_max, i, 0),
                   at<double>(mpi, i, 0), at<double>(comp_max, i, 0), static_cast<double>(at<int64_t>(visits, i, 0)),
                   at<int64_t>(max_rank, i, -1)});
  return out;
}

std::vector<OperationRow> read_operations(const io::ResultsStore &rs) {
  if (!has_child(rs, "profile", "ops")) return {};
  const io::Table t = rs.table("profile/ops");
  const auto &op = column<std::string>(t, "op");
  const auto &calls = column<int64_t>(t, "calls");
  const auto &time = column<double>(t, "time_s");
  const auto &bytes = column<double>(t, "bytes");
  const auto &bytes_int = column<int64_t>(t, "bytes");
  std::vector<OperationRow> out;
  for (size_t i = 0; i < t.rows(); ++i)
    out.push_back({at<std::string>(op, i, ""), static_cast<double>(at<int64_t>(calls, i, 0)), at<double>(time, i, 0),
                   i < bytes.size() ? bytes[i] : static_cast<double>(at<int64_t>(bytes_int, i, 0))});
  return out;
}

// A call site as people read it and two runs match it: "function (file:line)" where the
// debug information gives the line, else "function+0xOFFSET" (module and its offset when
// the function is unknown too).
std::string site_name(const std::string &function, const std::string &file, int64_t line, int64_t offset) {
  if (line > 0) return function + " (" + file + ":" + std::to_string(line) + ")";
  char hex[32];
  std::snprintf(hex, sizeof hex, "+0x%llx", static_cast<unsigned long long>(offset));
  return function + hex;
}

std::vector<CallSiteRow> read_callsites(const io::ResultsStore &rs) {
  if (!has_child(rs, "profile", "callsites")) return {};
  const io::Table t = rs.table("profile/callsites");
  const auto &function = column<std::string>(t, "function"), &file = column<std::string>(t, "file");
  const auto &line = column<int64_t>(t, "line"), &offset = column<int64_t>(t, "offset");
  const auto &calls = column<int64_t>(t, "calls"), &bytes = column<int64_t>(t, "bytes");
  const auto &op = column<std::string>(t, "op");
  const auto &time = column<double>(t, "time_s");
  std::vector<CallSiteRow> out;
  for (size_t i = 0; i < t.rows(); ++i)
    out.push_back({site_name(at<std::string>(function, i, ""), at<std::string>(file, i, ""), at<int64_t>(line, i, 0),
                             at<int64_t>(offset, i, 0)),
                   at<std::string>(op, i, ""), static_cast<double>(at<int64_t>(calls, i, 0)), at<double>(time, i, 0),
                   static_cast<double>(at<int64_t>(bytes, i, 0))});
  return out;
}

}  // namespace

bool ProblemRow::priced() const { return std::isfinite(predicted_gain_s); }

RunResults read_run_results(const std::string &results_path) {
  const io::ResultsStore rs(results_path);
  RunResults r;
  r.path = results_path;
  const auto root = rs.attributes("");
  r.source_store = attr_or<std::string>(root, "source_store", "");
  const auto run = rs.attributes("run");
  r.command = attr_or<std::string>(run, "command", "");
  r.start_time = attr_or<std::string>(run, "start_time", "");
  r.mpi_library = attr_or<std::string>(run, "mpi_library", "");
  r.hosts = attr_or<std::string>(run, "hosts", "");
  r.ranks = attr_or<int64_t>(run, "ranks", 0);
  r.program_time_s = attr_or<double>(run, "program_time_s", 0);
  r.wall_time_s = attr_or<double>(run, "wall_time_s", 0);
  r.problems = read_problems(rs);
  if (has_child(rs, "", "profile")) {
    r.regions = read_regions(rs);
    r.operations = read_operations(rs);
    r.callsites = read_callsites(rs);
  }
  return r;
}

}  // namespace perfsift::pipeline
