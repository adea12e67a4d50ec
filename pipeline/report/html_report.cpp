// `perfsift report RESULTS --format html`: one self-contained file (no network fetches;
// data, script and styles inline; charts drawn as SVG and canvas by the script), readable
// offline. Views: the ranked findings with predicted gains; RPPA's views (region time,
// calls and communication volume per rank, one rank against the others); the rank x
// region heatmap; the dissimilarity clusters; the rank x rank communication matrix; the
// space-time diagram of the measured run with message lines, zoomable, beside the
// predicted timeline of any stored what-if question with the domino path highlighted;
// root causes, wait states, message classes and the model diagnosis narrative.
//
// Large runs are summarised so the file stays small: ranks in blocks (at most
// kMaxRankRows rows per matrix), the communication matrix in blocks, and timelines of
// more than kMaxTimelineEvents events as the share of time in MPI per rank block and time
// bin. Cost: O(stored rows) to read; output O(kMaxRankRows x regions + events shown).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "kernels/rank_set.h"
#include "pipeline/report/html_template.h"
#include "pipeline/format/json_writer.h"
#include "pipeline/report/report.h"
#include "pipeline/engine/op_traits.h"
#include "pipeline/format/results_view.h"
#include "pipeline/report/views/efficiency.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

constexpr int64_t kMaxRankRows = 512;
constexpr int64_t kMaxTimelineEvents = 60000;
constexpr int64_t kTimeBins = 240;
constexpr size_t kUnwrapped = 100000;  // a line width no answer reaches

// Ranks in blocks of `per` (1 when the run is small): block labels "a" or "a-b".
struct RankBlocks {
  int64_t ranks = 0, per = 1;
  int64_t blocks() const { return (ranks + per - 1) / per; }
  std::string label(int64_t b) const {
    const int64_t lo = b * per, hi = std::min(ranks, lo + per) - 1;
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
  }
};

// Four significant digits are all a chart shows; they keep the file small.
double round4(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", x);
  return std::strtod(b, nullptr);
}

// Whether group/name exists; false (not an error) when the group itself is absent, as it
// is for every stage the pipeline did not run.
bool has_path(const io::ResultsStore &rs, const std::string &group, const std::string &name) {
  return has_child(rs, "", group) && (name.empty() || has_child(rs, group, name));
}

// Attributes of a group, empty when the group is absent.
std::vector<std::pair<std::string, io::AttrValue>> attributes_or_none(const io::ResultsStore &rs,
                                                                      const std::string &group) {
  if (!has_child(rs, "", group)) return {};
  return rs.attributes(group);
}

// Which stages ran, and why a view that needs one of them is absent.
struct StagesRun {
  std::vector<std::string> ran;
  const io::ResultsStore *rs = nullptr;
  bool has(const std::string &stage) const {
    return std::find(ran.begin(), ran.end(), stage) != ran.end() && has_path(*rs, stage, "");
  }
  // Empty when the stage ran and stored its results; else why not, and the fix.
  std::string why_not(const std::string &stage) const {
    if (std::find(ran.begin(), ran.end(), stage) == ran.end())
      return "the " + stage + " stage did not run (add it to pipeline.stages)";
    if (!has_path(*rs, stage, ""))
      return "the " + stage + " stage ran but its results are not in the file (group /" + stage +
             " is missing; analyse again)";
    return "";
  }
};

// A [ranks][cols] matrix as block means: [blocks][cols].
void matrix_json(JsonWriter &j, const io::ResultsStore &rs, const std::string &path, const RankBlocks &rb) {
  const auto info = rs.matrix_info(path);
  const auto v = rs.matrix(path);
  j.begin_object().key("units").value(info.units).key("description").value(info.description);
  j.key("cols").values(info.col_labels).key("rows").begin_array();
  for (int64_t b = 0; b < rb.blocks(); ++b) {
    j.begin_array();
    for (int64_t c = 0; c < info.cols; ++c) {
      double s = 0;
      int64_t n = 0;
      for (int64_t r = b * rb.per; r < std::min(info.rows, (b + 1) * rb.per); ++r) {
        const double x = v[static_cast<size_t>(r * info.cols + c)];
        if (!std::isnan(x)) s += x, ++n;
      }
      j.value(n ? round4(s / static_cast<double>(n)) : std::nan(""));
    }
    j.end_array();
  }
  j.end_array().end_object();
}

// Any table as {columns: [...], rows: [[...], ...]}, at most `max_rows` rows.
void table_json(JsonWriter &j, const io::Table &t, size_t max_rows) {
  j.begin_object().key("columns").begin_array();
  for (const auto &c : t.columns) j.value(c.name);
  j.end_array().key("total").value(static_cast<int64_t>(t.rows())).key("rows").begin_array();
  for (size_t r = 0; r < t.rows() && r < max_rows; ++r) {
    j.begin_array();
    for (const auto &c : t.columns) std::visit([&](const auto &col) { j.value(col[r]); }, c.values);
    j.end_array();
  }
  j.end_array().end_object();
}

// Every call: [rank, event, enter, exit, op, region] per question; the messages between them.
void timeline_calls(JsonWriter &j, const io::ResultsStore &rs, const io::Table &t,
                    const std::map<int64_t, int64_t> &per_question) {
  const auto &q = column<int64_t>(t, "question"), &rank = column<int64_t>(t, "rank"),
             &event = column<int64_t>(t, "event"), &enter = column<int64_t>(t, "enter_ns"),
             &exit = column<int64_t>(t, "exit_ns"), &op = column<int64_t>(t, "op"),
             &region = column<int64_t>(t, "region");
  j.key("events").begin_object();
  for (const auto &[k, n] : per_question) {
    j.key(std::to_string(k)).begin_array();
    for (size_t i = 0; i < t.rows(); ++i)
      if (q[i] == k)
        j.begin_array()
            .value(rank[i])
            .value(event[i])
            .value(enter[i])
            .value(exit[i])
            .value(op[i])
            .value(region[i])
            .end_array();
    j.end_array();
  }
  j.end_object();
  if (!has_path(rs, "whatif", "messages")) return;
  const auto m = rs.table("whatif/messages");
  const auto &s = column<int64_t>(m, "sender"), &se = column<int64_t>(m, "send_event"),
             &r = column<int64_t>(m, "receiver"), &re = column<int64_t>(m, "recv_event");
  j.key("messages").begin_array();
  for (size_t i = 0; i < m.rows() && static_cast<int64_t>(i) < kMaxTimelineEvents; ++i)
    j.begin_array().value(s[i]).value(se[i]).value(r[i]).value(re[i]).end_array();
  j.end_array();
}

// Question k's share of time in MPI per rank block and time bin, in integer percent.
void binned_share(JsonWriter &j, const io::Table &t, int64_t k, const RankBlocks &rb) {
  const auto &q = column<int64_t>(t, "question"), &rank = column<int64_t>(t, "rank"),
             &enter = column<int64_t>(t, "enter_ns"), &exit = column<int64_t>(t, "exit_ns");
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (size_t i = 0; i < t.rows(); ++i)
    if (q[i] == k) t0 = std::min(t0, enter[i]), t1 = std::max(t1, exit[i]);
  // Integer bins: every step moves to the next bin boundary, so it always progresses.
  const int64_t span = std::max<int64_t>(1, t1 - t0);
  auto bin_of = [&](int64_t x) {
    return std::min<int64_t>(kTimeBins - 1, static_cast<int64_t>(static_cast<__int128>(x) * kTimeBins / span));
  };
  auto bin_end = [&](int64_t b) {
    return static_cast<int64_t>((static_cast<__int128>(b + 1) * span + kTimeBins - 1) / kTimeBins);
  };
  std::vector<double> busy(static_cast<size_t>(rb.blocks() * kTimeBins), 0.0);
  for (size_t i = 0; i < t.rows(); ++i) {
    if (q[i] != k) continue;
    const int64_t b = rank[i] / rb.per, e = exit[i] - t0;
    for (int64_t x = enter[i] - t0; x < e;) {
      const int64_t bin = bin_of(x);
      const int64_t end = bin == kTimeBins - 1 ? e : std::min(e, bin_end(bin));
      busy[static_cast<size_t>(b * kTimeBins + bin)] += static_cast<double>(end - x);
      x = end;
    }
  }
  const double width = static_cast<double>(span) / kTimeBins;
  j.key(std::to_string(k)).begin_object().key("t0").value(t0).key("t1").value(t1).key("share").begin_array();
  for (int64_t b = 0; b < rb.blocks(); ++b) {
    const double ranks_in = static_cast<double>(std::min(rb.ranks, (b + 1) * rb.per) - b * rb.per);
    j.begin_array();
    for (int64_t x = 0; x < kTimeBins; ++x)
      j.value(
          static_cast<int64_t>(std::lround(busy[static_cast<size_t>(b * kTimeBins + x)] / (width * ranks_in) * 100)));
    j.end_array();
  }
  j.end_array().end_object();
}

// The first domino path that reaches the best predicted time: [rank, event] per step.
void domino_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto d = rs.table("domino/paths");
  const auto &kind = column<std::string>(d, "kind");
  const auto &reaches = column<int64_t>(d, "reaches_best"), &path = column<int64_t>(d, "path"),
             &dr = column<int64_t>(d, "rank"), &de = column<int64_t>(d, "event");
  int64_t chosen = -1;
  j.key("domino").begin_array();
  for (size_t i = 0; i < d.rows(); ++i) {
    if (kind[i] != "domino" || !reaches[i] || (chosen >= 0 && path[i] != chosen)) continue;
    chosen = path[i];
    j.begin_array().value(dr[i]).value(de[i]).end_array();
  }
  j.end_array();
}

void timeline_json(JsonWriter &j, const io::ResultsStore &rs, const RankBlocks &rb, const StagesRun &st) {
  if (const auto why = st.why_not("whatif"); !why.empty()) {
    j.key("timeline").begin_object().key("absent").value("no predicted timeline: " + why).end_object();
    return;
  }
  const auto a = rs.attributes("whatif");
  if (!has_path(rs, "whatif", "trace") || !has_path(rs, "whatif", "questions")) {
    j.key("timeline")
        .begin_object()
        .key("absent")
        .value(attr_or<int64_t>(a, "traces_stored", 0)
                   ? "no timeline: the whatif stage stored no trace rows"
                   : "no timeline: the run has more events than whatif.trace_max_events, so the whatif stage "
                     "stored none (raise whatif.trace_max_events and analyse again)")
        .end_object();
    return;
  }
  const auto t = rs.table("whatif/trace");
  const auto &q = column<int64_t>(t, "question");
  const auto qt = rs.table("whatif/questions");
  const auto &qtext = column<std::string>(qt, "question");
  std::map<int64_t, int64_t> per_question;
  for (int64_t x : q) ++per_question[x];
  int64_t largest = 0;
  for (const auto &[k, n] : per_question) largest = std::max(largest, n);
  j.key("timeline").begin_object();
  const auto ops = attr_or<std::vector<std::string>>(a, "trace_operations", {});
  j.key("ops").values(ops);
  std::vector<int64_t> lifecycle;  // start-up and shut-down: drawn grey, not the program
  for (const auto &op : ops) lifecycle.push_back(is_lifecycle_op(op));
  j.key("lifecycle_ops").values(lifecycle);
  j.key("regions").values(attr_or<std::vector<std::string>>(a, "trace_regions", {}));
  j.key("questions").begin_array();
  for (const auto &[k, n] : per_question) {
    const std::string label = k < 0                                    ? std::string("measured run")
                              : k < static_cast<int64_t>(qtext.size()) ? qtext[static_cast<size_t>(k)]
                                                                       : "?";
    j.begin_object().key("id").value(k).key("label").value(label).key("events").value(n).end_object();
  }
  j.end_array();
  // The run's calls: the measured run's rows (each question replays the same calls again).
  const auto measured = per_question.find(-1);
  j.key("calls").value(measured != per_question.end() ? measured->second : largest);
  if (largest <= kMaxTimelineEvents) {
    timeline_calls(j, rs, t, per_question);
  } else {
    // Too many calls to draw: the share of time in MPI per rank block and time bin.
    j.key("binned").begin_object();
    for (const auto &[k, n] : per_question) binned_share(j, t, k, rb);
    j.end_object();
  }
  if (has_path(rs, "domino", "paths"))
    domino_json(j, rs);
  else
    j.key("domino_absent").value("no domino path: " + st.why_not("domino"));
  j.end_object();
}

// The run, and the labels of the rank blocks every matrix uses.
void run_json(JsonWriter &j, const io::ResultsStore &rs, const RankBlocks &rb) {
  const auto root = rs.attributes("");
  const auto run = attributes_or_none(rs, "run");
  j.key("run").begin_object().key("ranks").value(rb.ranks).key("wall_s").value(attr_or<double>(run, "wall_time_s", 0));
  // The program proper: the timelines open on it, start-up and shut-down greyed outside
  j.key("program_s")
      .value(program_time_s(run))
      .key("program_start_s")
      .value(attr_or<double>(run, "program_start_s", 0));
  j.key("startup_s")
      .value(attr_or<double>(run, "startup_s", 0))
      .key("shutdown_s")
      .value(attr_or<double>(run, "shutdown_s", 0));
  j.key("command")
      .value(attr_or<std::string>(run, "command", ""))
      .key("start")
      .value(attr_or<std::string>(run, "start_time", ""));
  j.key("store").value(attr_or<std::string>(root, "source_store", "")).key("results").value(rs.path());
  j.key("warnings").values(attr_or<std::vector<std::string>>(root, "warnings", {}));
  j.key("rank_block").value(rb.per).end_object();
  j.key("rank_labels").begin_array();
  for (int64_t b = 0; b < rb.blocks(); ++b) j.value(rb.label(b));
  j.end_array();
}

// The profile stage's views: regions, the rank x region and rank x operation matrices, and
// the communication matrix in rank blocks: bytes per (sender block, receiver block).
void profile_json(JsonWriter &j, const io::ResultsStore &rs, const RankBlocks &rb) {
  j.key("regions");
  table_json(j, rs.table("profile/regions"), 1000);
  j.key("rank_region_wall_s");
  matrix_json(j, rs, "profile/rank_region_wall_s", rb);
  j.key("rank_op_calls");
  matrix_json(j, rs, "profile/rank_op_calls", rb);
  j.key("rank_op_bytes");
  matrix_json(j, rs, "profile/rank_op_bytes", rb);
  const auto m = rs.table("profile/messages");
  const auto &s = column<int64_t>(m, "sender"), &r = column<int64_t>(m, "receiver"),
             &bytes = column<int64_t>(m, "bytes"), &cnt = column<int64_t>(m, "messages");
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> cells;
  for (size_t i = 0; i < m.rows(); ++i) {
    auto &c = cells[{s[i] / rb.per, r[i] / rb.per}];
    c.first += cnt[i];
    c.second += bytes[i];
  }
  j.key("comm").begin_array();
  for (const auto &[k, v] : cells)
    j.begin_array().value(k.first).value(k.second).value(v.first).value(v.second).end_array();
  j.end_array();
}

// The MPI operations by time, start-up and shut-down apart: [op, calls, time per rank (s), share].
void operations_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto ops = operations_by_time(rs.table("profile/ops"));
  const double ranks =
      std::max<double>(1, static_cast<double>(attr_or<int64_t>(rs.attributes("profile"), "ranks_with_data", 1)));
  j.key("operations").begin_object();
  for (const auto &[key, side] : {std::pair{"program", &ops.program}, std::pair{"lifecycle", &ops.lifecycle}}) {
    j.key(key).begin_array();
    for (const auto &o : *side)
      j.begin_array().value(o.op).value(o.calls).value(round4(o.time_s / ranks)).value(round4(o.share)).end_array();
    j.end_array();
  }
  j.end_object();
}

// The dissimilarity clusters: id, size and ranks of each.
void clusters_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto t = rs.table("dissimilarity/ranks");
  const auto &rank = column<int64_t>(t, "rank"), &cl = column<int64_t>(t, "cluster");
  std::map<int64_t, std::vector<int32_t>> clusters;
  for (size_t i = 0; i < t.rows(); ++i) clusters[cl[i]].push_back(static_cast<int32_t>(rank[i]));
  j.key("clusters").begin_array();
  for (const auto &[id, members] : clusters)
    j.begin_object()
        .key("cluster")
        .value(id)
        .key("size")
        .value(static_cast<int64_t>(members.size()))
        .key("ranks")
        .value(kernels::format_ranges(kernels::to_ranges(members)))
        .end_object();
  j.end_array();
}

// Why a stage that ran stored no table: what it found, said as a fact, not an error.
std::string found_nothing(const io::ResultsStore &rs, const std::string &stage) {
  if (stage == "diagnosis" && attr_or<std::string>(rs.attributes("diagnosis"), "model", "none") == "none")
    return "none: no master-worker, wavefront or divide-and-conquer structure recognised";
  if (stage == "dissimilarity") return "none: the dissimilarity stage clustered no ranks";
  return "none: the " + stage + " stage found nothing to list";
}

// Tables shown as they are, those the stages wrote.
void tables_json(JsonWriter &j, const io::ResultsStore &rs, const StagesRun &st) {
  static const std::vector<std::pair<std::string, std::string>> shown = {
      {"rootcause/dissimilarity_per_region", "Root causes of rank dissimilarity (rough sets)"},
      {"rootcause/disparity_per_region", "Root causes of region disparity (rough sets)"},
      {"waitstates/waits", "Wait states (Scalasca patterns)"},
      {"classify/pairs", "Message classes per call-site pair (Vetter)"},
      {"diagnosis/causes", "Model diagnosis causes (Hercule)"},
      {"whatif/questions", "What-if questions (PerWiz)"},
      {"bounds/bounds", "Lower bounds (PerWiz)"}};
  j.key("tables").begin_array();
  std::vector<std::pair<std::string, std::string>> absent, none;
  for (const auto &[path, title] : shown) {
    const auto slash = path.find('/');
    const std::string stage = path.substr(0, slash);
    if (!has_path(rs, stage, path.substr(slash + 1))) {
      // A stage that ran and stored its group leaves a table out when it found nothing for it.
      if (const std::string why = st.why_not(stage); !why.empty())
        absent.emplace_back(title, why);
      else
        none.emplace_back(title, found_nothing(rs, stage));
      continue;
    }
    j.begin_object().key("title").value(title).key("hdf5").value("/" + path).key("table");
    table_json(j, rs.table(path), 200);
    j.end_object();
  }
  j.end_array();
  for (const auto &[key, rows] : {std::pair{"tables_absent", &absent}, std::pair{"tables_none", &none}}) {
    j.key(key).begin_array();
    for (const auto &[title, why] : *rows)
      j.begin_object().key("title").value(title).key("why").value(why).end_object();
    j.end_array();
  }
}

// Every view that is not drawn, and why: one line each, shown at the top of the page and
// in place of the view.
void absent_json(JsonWriter &j, const io::ResultsStore &rs, const StagesRun &st) {
  struct View {
    const char *key, *what, *stage;
  };
  static const View views[] = {
      {"rppa", "no per-rank views (RPPA)", "profile"},
      {"heatmap", "no rank x region heatmap", "profile"},
      {"operations", "no MPI operations table", "profile"},
      {"comm", "no communication matrix", "profile"},
      {"clusters", "no rank clusters", "dissimilarity"},
      {"diagnosis", "no model diagnosis", "diagnosis"},
      {"gain", "no predicted gains in the findings", "whatif"},
      {"timeline", "no predicted timeline", "whatif"},
      {"domino", "no domino path in the predicted timeline", "domino"},
  };
  j.key("stages_run").values(st.ran);
  std::vector<std::string> not_run;
  for (const auto &v : stage_views())
    if (std::find(st.ran.begin(), st.ran.end(), v.group) == st.ran.end()) not_run.push_back(v.group);
  j.key("stages_not_run").values(not_run);
  // Absent: the stage did not run or its results are missing, said at the top of the page.
  // None: the stage ran and found nothing to draw, said in place of the view alone.
  j.key("absent").begin_object();
  for (const auto &v : views)
    if (const std::string why = st.why_not(v.stage); !why.empty()) j.key(v.key).value(std::string(v.what) + ": " + why);
  j.end_object();
  j.key("none").begin_object();
  if (st.why_not("dissimilarity").empty() && !has_path(rs, "dissimilarity", "ranks"))
    j.key("clusters").value("No rank clusters: the dissimilarity stage clustered no ranks.");
  j.end_object();
}

// The POP efficiencies: each factor with the problem costing it most, and the first 20
// regions every rank enters.
void efficiency_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto factors = efficiency_factors(rs);
  if (factors.empty()) return;
  j.key("efficiency").begin_object().key("acceptable").value(kAcceptableEfficiency).key("factors").begin_array();
  for (const auto &f : factors) {
    j.begin_object().key("label").value(f.label).key("value").value(round4(f.value));
    j.key("problem").value(f.problem_words).end_object();
  }
  j.end_array().key("regions").begin_array();
  if (has_path(rs, "efficiency", "regions")) {
    const auto t = rs.table("efficiency/regions");
    const auto &lb = column<double>(t, "load_balance"), &comm = column<double>(t, "communication"),
               &par = column<double>(t, "parallel");
    for (size_t r = 0; r < t.rows() && r < 20; ++r)
      j.begin_array()
          .value(column<std::string>(t, "region")[r])
          .value(round4(lb[r]))
          .value(round4(comm[r]))
          .value(round4(par[r]))
          .end_array();
  }
  j.end_array().key("note").value(attr_or<std::string>(rs.attributes("efficiency"), "note", "")).end_object();
}

std::string data_json(const io::ResultsStore &rs) {
  JsonWriter j(true);
  const auto root = rs.attributes("");
  StagesRun st;
  st.rs = &rs;
  st.ran = attr_or<std::vector<std::string>>(root, "stages", {});
  RankBlocks rb;
  rb.ranks = attr_or<int64_t>(attributes_or_none(rs, "run"), "ranks", 0);
  rb.per = std::max<int64_t>(1, (rb.ranks + kMaxRankRows - 1) / kMaxRankRows);
  j.begin_object();
  // Paragraphs, not the text report's lines: the page reflows them to its width.
  j.key("answer").values(answer_lines(rs, kUnwrapped));
  run_json(j, rs, rb);
  efficiency_json(j, rs);
  absent_json(j, rs, st);
  j.key("findings");
  table_json(j, problems_for_readers(rs), 200);
  if (st.has("profile")) {
    profile_json(j, rs, rb);
    operations_json(j, rs);
  }
  if (st.has("dissimilarity") && has_path(rs, "dissimilarity", "ranks")) clusters_json(j, rs);
  tables_json(j, rs, st);
  if (st.has("diagnosis")) {
    const auto a = rs.attributes("diagnosis");
    j.key("diagnosis").begin_object().key("model").value(attr_or<std::string>(a, "model", "none"));
    j.key("narrative").value(attr_or<std::string>(a, "narrative", "")).end_object();
  }
  // The text report is a copy for reading; if it cannot be rendered the page says so
  // and draws the rest.
  std::string text;
  try {
    text = render_text(rs);
  } catch (const std::exception &e) {
    text = std::string("the text report could not be rendered: ") + e.what();
  }
  j.key("text_report").value(text);
  timeline_json(j, rs, rb, st);
  j.end_object();
  return j.take();  // compact is HTML-safe: no '<' inside, so no "</script>" can end the element
}

}  // namespace

std::string render_html(const io::ResultsStore &rs) {
  std::string html = kHtmlTemplate;
  const std::string marker = "/*PERFSIFT_DATA*/";
  html.replace(html.find(marker), marker.size(), data_json(rs));
  return html;
}

}  // namespace perfsift::pipeline
