// Stage `domino` (PerWiz F1 for communication): the domino paths of the run and, beside
// them, the longest-wait choice. The search replays the whole run once per candidate
// event, so every process holds every rank's program (up to domino.max_events events);
// each batch of candidates is spread over processes and their threads.
//
// Cost: gathering the programs, O(events) memory per process; then candidates x
// O(events) replay work divided by processes x threads, candidates pruned by the wait
// bound (kernels/domino.h).
#include <omp.h>

#include <cstdio>
#include <ostream>

#include "kernels/domino.h"
#include "pipeline/format/text.h"
#include "pipeline/replay/replay_model.h"
#include "pipeline/format/results_view.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;
namespace dm = kernels::domino;

namespace {

// One row of /domino/paths: a step of a domino path or the longest-wait choice, labelled.
struct DominoRow {
  const char *kind;  // domino or longest-wait
  int64_t path;      // 0 for the longest-wait row
  int32_t terminates_at;
  bool reaches_best;
  dm::Step step;
  std::string operation, region;
};

// What the stage found: the paths, or why the search was skipped.
struct DominoResult {
  std::string skipped;  // empty: searched
  dm::Result search;
  std::vector<DominoRow> rows;
};

// Searches the domino paths over the whole run (collective: each batch of candidates is
// spread over the processes, process k replaying candidates k, k + np, ...; results meet
// in one allreduce).
dm::Result search_paths(const Context &ctx, const config::Values &cfg, const ReplayModel &all) {
  rp::Scenario base;
  base.net = all.params;
  const auto rest = dm::rest_bounds(all.programs, all.baseline);
  const auto snap = rp::replay_snapshot(all.programs, base);
  std::vector<int32_t> slot_of_rank(static_cast<size_t>(ctx.nranks()), -1);
  for (size_t s = 0; s < all.programs.size(); ++s)
    slot_of_rank[static_cast<size_t>(all.programs[s].rank)] = static_cast<int32_t>(s);
  const auto evaluate = [&](const std::vector<dm::EventRef> &events, int64_t threshold) {
    std::vector<int64_t> times(events.size(), INT64_MIN);
    std::vector<size_t> mine;
    for (size_t i = static_cast<size_t>(ctx.me()); i < events.size(); i += static_cast<size_t>(ctx.nprocs()))
      mine.push_back(i);
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t k = 0; k < mine.size(); ++k) {
      const dm::EventRef e = events[mine[k]];
      times[mine[k]] =
          dm::zero_wait_time(all.programs, base, rest, snap, slot_of_rank[static_cast<size_t>(e.rank)], e, threshold);
    }
    MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
    return times;
  };
  dm::Options opt;
  opt.max_ties = static_cast<int>(cfg.get_int("domino.max_ties"));
  opt.max_replays = cfg.get_int("domino.max_replays");
  ctx.progress().begin("domino: searching paths");
  const auto partners = dm::program_partners(all.programs, all.baseline);
  dm::Result res = dm::find_paths(all.programs, all.baseline, partners, evaluate, opt);
  ctx.progress().end();
  return res;
}

// The paths' steps, then the longest-wait choice, each labelled with its operation and region.
std::vector<DominoRow> path_rows(const Context &ctx, const ReplayModel &all, const dm::Result &res) {
  const auto &ops = ctx.store().ops();
  const auto &regions = ctx.store().regions();
  std::vector<int32_t> slot(static_cast<size_t>(ctx.nranks()), -1);
  for (size_t s = 0; s < all.programs.size(); ++s)
    slot[static_cast<size_t>(all.programs[s].rank)] = static_cast<int32_t>(s);
  std::vector<DominoRow> rows;
  auto row = [&](const char *kind, int64_t no, int32_t term, bool reaches, const dm::Step &st) {
    DominoRow r{kind, no, term, reaches, st, "", ""};
    if (st.event.rank >= 0 && slot[static_cast<size_t>(st.event.rank)] >= 0) {
      const size_t s = static_cast<size_t>(slot[static_cast<size_t>(st.event.rank)]);
      const uint16_t code = all.side[s].op[static_cast<size_t>(st.event.event)];
      const int32_t reg = all.side[s].region[static_cast<size_t>(st.event.event)];
      r.operation = code < ops.size() ? ops[code] : "?";
      r.region = reg >= 0 && static_cast<size_t>(reg) < regions.size() ? regions[static_cast<size_t>(reg)].path : "?";
    }
    rows.push_back(std::move(r));
  };
  int64_t no = 0;
  for (const auto &p : res.paths) {
    ++no;
    for (const auto &st : p.steps) row("domino", no, p.rank, p.predicted == res.best, st);
  }
  if (res.longest_wait.event.rank >= 0)
    row("longest-wait", 0, -1, res.longest_wait.predicted == res.best, res.longest_wait);
  return rows;
}

DominoResult compute_domino(Context &ctx, const config::Values &cfg) {
  const ReplayModel &model = *ctx.products().get<ReplayBaseline>().model;
  const int64_t limit = cfg.get_int("domino.max_events");
  DominoResult r;
  if (model.events > limit) {
    r.skipped = "the run has " + std::to_string(model.events) +
                " events, more than domino.max_events = " + std::to_string(limit) +
                " (every process would hold them all)";
    return r;
  }
  if (model.threaded_ranks > 0) {
    // Candidates resume from a snapshot of one stream per rank; lanes run side by side.
    r.skipped = std::to_string(model.threaded_ranks) +
                " ranks call MPI from several threads: the domino search resumes replays of one call sequence "
                "per rank (the what-if questions and bounds replay every thread)";
    return r;
  }
  ctx.progress().begin("domino: gathering the run");
  const auto whole = gather_whole(ctx, model);
  ctx.progress().end();
  r.search = search_paths(ctx, cfg, *whole);
  r.rows = path_rows(ctx, *whole, r.search);
  return r;
}

void write_domino(const DominoResult &r, StageOutput &out) {
  io::Table t;
  t.description = "domino paths (PerWiz Fig. 3) and the longest-wait choice: each row zeroes one event's wait";
  auto &kind = t.strings("kind", "domino or longest-wait");
  auto &path_no = t.ints("path", "", "path number; 0 for the longest-wait row");
  auto &ends = t.ints("terminates_at", "", "rank whose last event the path starts from");
  auto &best = t.ints("reaches_best", "", "1 when the path reaches the minimum predicted time T");
  auto &rank = t.ints("rank", "", "rank of the event whose wait is zeroed");
  auto &event = t.ints("event", "", "its index within the rank");
  auto &opn = t.strings("operation", "its MPI operation");
  auto &where = t.strings("region", "its region");
  auto &prank = t.ints("partner_rank", "", "rank of the event it waited for (-1: none)");
  auto &pevent = t.ints("partner_event", "", "index of that event");
  auto &wait = t.floats("wait_s", "s", "its waiting time in the baseline replay");
  auto &pred = t.floats("predicted_s", "s", "predicted run time after zeroing it (and the path's earlier events)");
  if (!r.skipped.empty()) {
    out.attribute("skipped", r.skipped);
    out.table("paths", t);
    return;
  }
  for (const DominoRow &x : r.rows) {
    kind.push_back(x.kind);
    path_no.push_back(x.path);
    ends.push_back(x.terminates_at);
    best.push_back(x.reaches_best);
    rank.push_back(x.step.event.rank);
    event.push_back(x.step.event.event);
    opn.push_back(x.operation);
    where.push_back(x.region);
    prank.push_back(x.step.partner.rank);
    pevent.push_back(x.step.partner.event);
    wait.push_back(static_cast<double>(x.step.wait) * 1e-9);
    pred.push_back(static_cast<double>(x.step.predicted) * 1e-9);
  }
  const dm::Result &res = r.search;
  out.attribute("baseline_s", static_cast<double>(res.baseline) * 1e-9);
  out.attribute("best_s", static_cast<double>(res.best) * 1e-9);
  out.attribute("longest_wait_s", static_cast<double>(res.longest_wait.predicted) * 1e-9);
  out.attribute("replays", res.replays);
  out.table("paths", t);
}

// No findings: the paths are read from the report.
void run_domino(Context &ctx, const config::Values &cfg, StageOutput &out) {
  write_domino(compute_domino(ctx, cfg), out);
}

void domino_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("domino");
  if (const auto why = attr_or<std::string>(a, "skipped", ""); !why.empty()) {
    os << "\nDomino paths: skipped (" << why << ")\n";
    return;
  }
  const auto t = rs.table("domino/paths");
  const auto &kind = column<std::string>(t, "kind"), &op = column<std::string>(t, "operation"),
             &region = column<std::string>(t, "region");
  const auto &path = column<int64_t>(t, "path"), &rank = column<int64_t>(t, "rank"),
             &event = column<int64_t>(t, "event"), &reaches = column<int64_t>(t, "reaches_best");
  const auto &pred = column<double>(t, "predicted_s");
  os << "\nDomino paths (PerWiz): baseline " << format_seconds(attr_or<double>(a, "baseline_s", 0)) << ", best path "
     << format_seconds(attr_or<double>(a, "best_s", 0)) << ", longest wait alone "
     << format_seconds(attr_or<double>(a, "longest_wait_s", 0)) << "\n";
  int64_t shown = -1;
  for (size_t i = 0; i < t.rows(); ++i) {
    if (kind[i] != "domino" || !reaches[i]) continue;
    if (shown >= 0 && path[i] != shown) break;  // the first path reaching the best
    if (shown < 0) os << "  path:";
    shown = path[i];
    os << " " << op[i] << "@" << rank[i] << ":" << event[i] << " (" << clip(region[i], 20) << ", "
       << format_seconds(pred[i]) << ")";
  }
  if (shown >= 0)
    os << "\n";
  else
    os << "  no wait whose removal shortens the run\n";
}

// "domino": [{"kind", "terminates_at", "predicted_s", "reaches_best", "events": [...]}]
void domino_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto t = rs.table("domino/paths");
  const auto &kind = column<std::string>(t, "kind"), &op = column<std::string>(t, "operation"),
             &region = column<std::string>(t, "region");
  const auto &path = column<int64_t>(t, "path"), &rank = column<int64_t>(t, "rank"),
             &event = column<int64_t>(t, "event"), &ends = column<int64_t>(t, "terminates_at"),
             &reaches = column<int64_t>(t, "reaches_best"), &prank = column<int64_t>(t, "partner_rank"),
             &pevent = column<int64_t>(t, "partner_event");
  const auto &wait = column<double>(t, "wait_s"), &pred = column<double>(t, "predicted_s");
  j.begin_array();
  for (size_t i = 0; i < t.rows();) {
    size_t k = i;
    while (k < t.rows() && path[k] == path[i] && kind[k] == kind[i]) ++k;
    j.begin_object().key("kind").value(kind[i]).key("terminates_at").value(ends[i]);
    j.key("predicted_s").value(pred[k - 1]).key("reaches_best").value(reaches[i] != 0);
    j.key("events").begin_array();
    for (size_t x = i; x < k; ++x) {
      j.begin_object().key("rank").value(rank[x]).key("event").value(event[x]).key("operation").value(op[x]);
      j.key("region").value(region[x]).key("waited_for").begin_array().value(prank[x]).value(pevent[x]).end_array();
      j.key("wait_s").value(wait[x]).key("predicted_s").value(pred[x]).end_object();
    }
    j.end_array().end_object();
    i = k;
  }
  j.end_array();
}

}  // namespace

StageInfo domino_stage() {
  StageInfo s{"domino",
              "PerWiz's domino paths (Fig. 3): the chain of waits whose removal topples the most waiting, with the "
              "predicted time after each, beside the longest-wait choice",
              {{"max_events", config::Type::Int, int64_t{200000}, "",
                "search only runs with at most this many events (every process holds them all)", 0, 1e12},
               {"max_ties", config::Type::Int, int64_t{4}, "",
                "tied candidates explored per step (the paper's round robin)", 1, 1000},
               {"max_replays", config::Type::Int, int64_t{5000}, "",
                "at most this many candidate replays (each replays the whole run)", 1, 1e9}},
              run_domino,
              domino_text,
              nullptr};
  s.json_value = domino_json;
  s.requires_products = {product_name<ReplayBaseline>()};
  return s;
}

}  // namespace perfsift::pipeline
