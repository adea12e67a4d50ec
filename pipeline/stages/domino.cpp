// Stage `domino` (PerWiz F1 for communication): the domino paths of the run and, beside
// them, the longest-wait choice. The search (kernels/domino.h) runs on the distributed
// replay: each rank is asked on its owner, and each batch of candidates replays side by
// side, each resumed from the owners' parts of the baseline snapshot and advancing only
// the ranks it disturbs (or needs), on their owners.
//
// Cost: the snapshot beside the replay model (its timings are the baseline's; per message
// its times and event links, per call 4-byte links), 8 B per owned event of rest bounds;
// per candidate, the events it disturbs up to the first clean cut all ranks leave equally
// ahead, plus one exchange round per hop of its disturbance between owners; a few
// reductions per step of the search.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels/domino.h"
#include "pipeline/engine/finding.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/replay/distributed_replay.h"
#include "pipeline/replay/replay_baseline.h"

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
  int64_t min_gain = 0;  // ns: paths gaining less are not followed
  std::vector<DominoRow> rows;
};

// The run as the search reads it, each rank asked on its owner: every call is collective
// and answers the same on every process. Candidates replay distributed, resumed from this
// process's part of the baseline snapshot and advancing only the ranks they disturb.
class DistributedView final : public dm::RunView {
 public:
  // `snapshot`: the baseline replay's state, as the whatif stage kept it; `net`: the
  // parameters of that replay.
  DistributedView(const Context &ctx, const ReplayModel &model, const kernels::LogGPS &net, rp::Snapshot &&snapshot)
      : m_ctx(ctx), m_model(model), m_snapshot(std::move(snapshot)) {
    m_base.net = net;
    m_rest = dm::rest_bounds(model.programs, m_snapshot.timings());
    // Candidates also stop where every rank leaves a clean cut equally ahead of the baseline.
    m_cuts = clean_cuts(ctx, model, m_snapshot);
    m_slot.assign(static_cast<size_t>(ctx.nranks()), -1);
    for (size_t s = 0; s < model.programs.size(); ++s) {
      const auto &p = model.programs[s];
      m_slot[static_cast<size_t>(p.rank)] = static_cast<int32_t>(s);
      if (!p.events.empty()) m_t0 = std::max(m_t0, m_snapshot.timings()[s].back().exit);
    }
    m_bound = dm::WaitBound(model.programs, m_snapshot.timings());
    MPI_Allreduce(MPI_IN_PLACE, &m_t0, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  }

  int64_t baseline() override { return m_t0; }
  std::vector<int64_t> last_events() override {
    std::vector<int64_t> last(static_cast<size_t>(m_ctx.nranks()), -1);
    for (const auto &p : m_model.programs)
      last[static_cast<size_t>(p.rank)] = static_cast<int64_t>(p.events.size()) - 1;
    MPI_Allreduce(MPI_IN_PLACE, last.data(), static_cast<int>(last.size()), MPI_INT64_T, MPI_MAX, m_ctx.comm());
    return last;
  }
  std::vector<int64_t> ends() override {
    std::vector<int64_t> end(static_cast<size_t>(m_ctx.nranks()), 0);
    for (size_t s = 0; s < m_model.programs.size(); ++s)
      if (!m_model.programs[s].events.empty())
        end[static_cast<size_t>(m_model.programs[s].rank)] = m_snapshot.timings()[s].back().exit;
    MPI_Allreduce(MPI_IN_PLACE, end.data(), static_cast<int>(end.size()), MPI_INT64_T, MPI_MAX, m_ctx.comm());
    return end;
  }
  std::vector<Candidate> waits_up_to(int32_t rank, int64_t last, int64_t min_wait) override {
    std::vector<Candidate> out;
    const int32_t s = m_slot[static_cast<size_t>(rank)];
    if (s >= 0)
      for (int64_t j = 0; j <= last; ++j)
        if (const int64_t w = wait(static_cast<size_t>(s), static_cast<size_t>(j)); w >= min_wait)
          out.push_back({j, w, m_snapshot.timings()[static_cast<size_t>(s)].enter(static_cast<size_t>(j))});
    broadcast(out, m_ctx.owner_of(rank));
    return out;
  }
  std::vector<int64_t> lower_bounds(const std::vector<Candidate> &cands) override {
    std::vector<int64_t> out = m_bound.bounds(cands);
    MPI_Allreduce(MPI_IN_PLACE, out.data(), static_cast<int>(out.size()), MPI_INT64_T, MPI_MAX, m_ctx.comm());
    return out;
  }
  // e's owner names what e waited for (message partners, collective instances); their
  // owners give their enters; the latest other-rank one wins, ties by e's item order,
  // then rank and event (the serial search's order).
  dm::EventRef partner(dm::EventRef e) override {
    std::vector<dm::WaitSource> asks;
    if (const int32_t s = m_slot[static_cast<size_t>(e.rank)]; s >= 0)
      asks = dm::wait_sources(m_model.programs[static_cast<size_t>(s)], e.event);
    broadcast(asks, m_ctx.owner_of(e.rank));
    // Each process's best answer: (enter, -order, -rank, -event), the largest wins.
    std::array<int64_t, 4> best = {INT64_MIN, 0, 0, 0};
    auto offer = [&](int64_t order, int32_t rank, int64_t event) {
      if (rank == e.rank || event < 0 || event == rp::Snapshot::kNever) return;
      const int32_t s = m_slot[static_cast<size_t>(rank)];
      const std::array<int64_t, 4> cand = {
          m_snapshot.timings()[static_cast<size_t>(s)].enter(static_cast<size_t>(event)), -order, -rank, -event};
      best = std::max(best, cand);
    };
    for (size_t k = 0; k < asks.size(); ++k) {
      const dm::WaitSource &a = asks[k];
      if (a.kind != dm::WaitSource::Instance) {
        const int32_t s = a.rank >= 0 ? m_slot[static_cast<size_t>(a.rank)] : -1;
        if (s < 0) continue;
        const auto &events = a.kind == dm::WaitSource::Sender ? m_snapshot.send_event : m_snapshot.recv_event;
        offer(static_cast<int64_t>(k), a.rank, events[static_cast<size_t>(s)][static_cast<size_t>(a.index)]);
        continue;
      }
      const auto range = m_snapshot.members_of(a.index);
      for (auto m = range.first; m != range.second; ++m) {
        const int32_t rank = m_model.programs[static_cast<size_t>(m->slot)].rank;
        if (a.rank >= 0 && rank != a.rank) continue;  // a rooted flow waits for its root only
        offer(static_cast<int64_t>(k), rank,
              m_snapshot.coll_event[static_cast<size_t>(m->slot)][static_cast<size_t>(m->index)]);
      }
    }
    const auto all = m_ctx.allgatherv(std::vector<std::array<int64_t, 4>>{best});
    const auto top = *std::max_element(all.begin(), all.end());
    if (top[0] == INT64_MIN) return {};
    return {static_cast<int32_t>(-top[2]), -top[3]};
  }
  dm::Step longest_wait() override {
    // (wait, -rank, -event): the first longest in rank and event order.
    std::array<int64_t, 3> best = {0, 0, 0};
    for (size_t s = 0; s < m_model.programs.size(); ++s)
      for (size_t j = 0; j < m_model.programs[s].events.size(); ++j)
        if (const int64_t w = wait(s, j); w > 0)
          best = std::max(best, {w, -m_model.programs[s].rank, -static_cast<int64_t>(j)});
    const auto all = m_ctx.allgatherv(std::vector<std::array<int64_t, 3>>{best});
    const auto top = *std::max_element(all.begin(), all.end());
    dm::Step st;
    if (top[0] > 0) {
      st.event = {static_cast<int32_t>(-top[1]), -top[2]};
      st.wait = top[0];
    }
    return st;
  }
  std::vector<int64_t> evaluate(const std::vector<dm::EventRef> &events, int64_t threshold) override {
    // Each event's baseline enter from its owner, then one distributed resumed replay per event.
    std::vector<int64_t> enter(events.size(), INT64_MIN);
    for (size_t k = 0; k < events.size(); ++k)
      if (const int32_t s = m_slot[static_cast<size_t>(events[k].rank)]; s >= 0)
        enter[k] = m_snapshot.timings()[static_cast<size_t>(s)].enter(static_cast<size_t>(events[k].event));
    MPI_Allreduce(MPI_IN_PLACE, enter.data(), static_cast<int>(enter.size()), MPI_INT64_T, MPI_MAX, m_ctx.comm());
    std::vector<rp::Scenario> scenarios(events.size(), m_base);
    for (size_t k = 0; k < events.size(); ++k) {
      rp::Scenario &sc = scenarios[k];
      sc.zero_wait_rank = events[k].rank;
      sc.zero_wait_event = events[k].event;
      sc.rest = &m_rest;
      sc.abort_at = threshold;
      sc.resume = &m_snapshot;
      sc.resume_at = enter[k];
      sc.stop_when_converged = true;
      sc.cuts = &m_cuts;
    }
    // The batch side by side: one exchange per round for all of them.
    std::vector<int64_t> out = replay_distributed(m_ctx, m_model, scenarios);
    // At or past the threshold the answer is only "not below it", however the replay ended.
    for (auto &t : out)
      if (t >= threshold) t = std::numeric_limits<int64_t>::max();
    return out;
  }

 private:
  int64_t wait(size_t s, size_t i) const { return dm::event_wait(m_model.programs[s], m_snapshot.timings()[s][i], i); }
  template <class T>
  void broadcast(std::vector<T> &v, int root) const {
    int64_t n = static_cast<int64_t>(v.size());
    MPI_Bcast(&n, 1, MPI_INT64_T, root, m_ctx.comm());
    v.resize(static_cast<size_t>(n));
    if (n) MPI_Bcast(v.data(), static_cast<int>(n * static_cast<int64_t>(sizeof(T))), MPI_BYTE, root, m_ctx.comm());
  }

  const Context &m_ctx;
  const ReplayModel &m_model;
  rp::Scenario m_base;
  rp::Snapshot m_snapshot;
  std::vector<rp::BlockDeltaColumn> m_rest;
  std::vector<std::vector<int64_t>> m_cuts;
  std::vector<int32_t> m_slot;
  dm::WaitBound m_bound;
  int64_t m_t0 = 0;
};

// The search over every process's copy of the whole run (`all` and its baseline timings
// `baseline`: gather_whole): each batch of candidates spread over the processes, process
// k replaying candidates k, k + np, ... with the serial evaluator (its threads sharing
// them); the times meet in one reduction. Collective.
dm::Result search_whole(const Context &ctx, const ReplayModel &all, const std::vector<rp::TimingColumn> &baseline,
                        const kernels::LogGPS &net, const dm::Options &opt) {
  rp::Scenario base;
  base.net = net;
  const auto rest = dm::rest_bounds(all.programs, baseline);
  const dm::Evaluate mine = dm::serial_evaluator(all.programs, base, rest);
  const dm::Evaluate evaluate = [&](const std::vector<dm::EventRef> &events, int64_t threshold) {
    std::vector<dm::EventRef> share;
    for (size_t i = static_cast<size_t>(ctx.me()); i < events.size(); i += static_cast<size_t>(ctx.nprocs()))
      share.push_back(events[i]);
    const std::vector<int64_t> got = mine(share, threshold);
    std::vector<int64_t> times(events.size(), INT64_MIN);
    for (size_t k = 0; k < got.size(); ++k)
      times[static_cast<size_t>(ctx.me()) + k * static_cast<size_t>(ctx.nprocs())] = got[k];
    MPI_Allreduce(MPI_IN_PLACE, times.data(), static_cast<int>(times.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
    return times;
  };
  const auto partners = dm::program_partners(all.programs, baseline);
  return dm::find_paths(all.programs, baseline, partners, evaluate, opt);
}

// The paths' steps, then the longest-wait choice, each labelled with its operation and
// region (each step's owner names them).
std::vector<DominoRow> path_rows(const Context &ctx, const ReplayModel &model, const dm::Result &res) {
  std::vector<const dm::Step *> steps;
  std::vector<std::pair<int64_t, int32_t>> labels;  // (path number, terminates at) per row
  for (size_t no = 0; no < res.paths.size(); ++no)
    for (const auto &st : res.paths[no].steps) {
      steps.push_back(&st);
      labels.push_back({static_cast<int64_t>(no) + 1, res.paths[no].rank});
    }
  if (res.longest_wait.event.rank >= 0) {
    steps.push_back(&res.longest_wait);
    labels.push_back({0, -1});
  }
  std::vector<int64_t> op(steps.size(), -1), region(steps.size(), -1);
  std::vector<int32_t> slot(static_cast<size_t>(ctx.nranks()), -1);
  for (size_t s = 0; s < model.programs.size(); ++s)
    slot[static_cast<size_t>(model.programs[s].rank)] = static_cast<int32_t>(s);
  for (size_t k = 0; k < steps.size(); ++k) {
    const dm::EventRef e = steps[k]->event;
    if (e.rank < 0 || slot[static_cast<size_t>(e.rank)] < 0) continue;
    const auto &side = model.side[static_cast<size_t>(slot[static_cast<size_t>(e.rank)])];
    op[k] = side.labels.op(static_cast<size_t>(e.event));
    region[k] = side.labels.region(static_cast<size_t>(e.event));
  }
  MPI_Allreduce(MPI_IN_PLACE, op.data(), static_cast<int>(op.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  MPI_Allreduce(MPI_IN_PLACE, region.data(), static_cast<int>(region.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  const auto &ops = ctx.store().ops();
  const auto &regions = ctx.store().regions();
  std::vector<DominoRow> rows;
  for (size_t k = 0; k < steps.size(); ++k) {
    const bool longest = labels[k].first == 0;
    const int64_t predicted =
        longest ? res.longest_wait.predicted : res.paths[static_cast<size_t>(labels[k].first - 1)].predicted;
    DominoRow r{longest ? "longest-wait" : "domino",
                labels[k].first,
                labels[k].second,
                predicted == res.best,
                *steps[k],
                "",
                ""};
    if (op[k] >= 0) {
      r.operation = static_cast<size_t>(op[k]) < ops.size() ? ops[static_cast<size_t>(op[k])] : "?";
      r.region = region[k] >= 0 && static_cast<size_t>(region[k]) < regions.size()
                     ? regions[static_cast<size_t>(region[k])].path
                     : "?";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// Which runs the search covers, and how (domino.max_events, domino.gather_events).
struct SearchLimits {
  explicit SearchLimits(const config::Values &cfg)
      : max_events(cfg.get_int("domino.max_events")), gather_events(cfg.get_int("domino.gather_events")) {}
  int64_t max_events, gather_events;
  // Why the search is skipped on a run of this shape (empty: it runs).
  std::string skip_reason(const RunShape &run) const {
    if (run.events > max_events)
      return "the run has " + std::to_string(run.events) +
             " events, more than domino.max_events = " + std::to_string(max_events);
    if (run.threaded_ranks > 0)
      // Candidates resume from a snapshot of one stream per rank; lanes run side by side.
      return std::to_string(run.threaded_ranks) +
             " ranks call MPI from several threads: the domino search resumes replays of one call sequence "
             "per rank (the what-if questions and bounds replay every thread)";
    return {};
  }
  // Small runs are gathered whole on every process and searched there.
  bool gathered(const RunShape &run) const { return run.events <= gather_events; }
  // The others resume their candidates from the baseline replay's state.
  bool resumes_from_baseline(const RunShape &run) const { return skip_reason(run).empty() && !gathered(run); }
};

// The least gain a path must bring to be reported: what the replay prices as a gain at
// all (no_gain_s of the baseline's run time), in ns (collective).
int64_t measurable_gain(const Context &ctx, const std::vector<rp::TimingColumn> &timings) {
  int64_t end = 0;
  for (const auto &t : timings)
    if (!t.empty()) end = std::max(end, t.back().exit);
  MPI_Allreduce(MPI_IN_PLACE, &end, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  return std::llround(1e9 * no_gain_s(1e-9 * static_cast<double>(end)));
}

// The baseline replay's state, asked of the whatif stage for the runs the search resumes
// candidates on (the plan hands the request over).
std::vector<ProductRequest> domino_requests(const config::Values &cfg) {
  const SearchLimits limits(cfg);
  return {{product_name<BaselineState>(), [limits](const RunShape &run) { return limits.resumes_from_baseline(run); }}};
}

DominoResult compute_domino(Context &ctx, const config::Values &cfg) {
  const ReplayBaseline &base = ctx.products().get<ReplayBaseline>();
  const ReplayModel &model = *base.model;
  const SearchLimits limits(cfg);
  const RunShape run{model.events, model.threaded_ranks};
  DominoResult r;
  r.skipped = limits.skip_reason(run);
  if (!r.skipped.empty()) return r;
  dm::Options opt;
  opt.max_ties = static_cast<int>(cfg.get_int("domino.max_ties"));
  opt.max_replays = cfg.get_int("domino.max_replays");
  opt.min_gain = r.min_gain = measurable_gain(ctx, *base.timings);
  if (limits.gathered(run)) {
    ctx.progress().begin("domino: gathering the run");
    std::vector<rp::TimingColumn> baseline;
    const auto whole = gather_whole(ctx, model, *base.timings, &baseline);
    ctx.progress().end();
    ctx.progress().begin("domino: searching paths");
    r.search = search_whole(ctx, *whole, baseline, base.params, opt);
    ctx.progress().end();
  } else {
    ctx.progress().begin("domino: the baseline's state");
    // The whatif stage kept it from its baseline replay, asked to (domino_requests): held
    // from there only until the search ends.
    const auto state = ctx.products().take<BaselineState>();
    PERFSIFT_CHECK(state, "the whatif stage did not keep the baseline replay's state for the domino search");
    DistributedView view(ctx, model, base.params, std::move(state->snapshot));
    ctx.progress().begin("domino: searching paths");
    r.search = dm::find_paths(view, opt);
    ctx.progress().end();
  }
  r.rows = path_rows(ctx, model, r.search);
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
  out.attribute("min_gain_s", static_cast<double>(r.min_gain) * 1e-9);
  out.table("paths", t);
}

// No findings: the paths are read from the report.
void run_domino(Context &ctx, const config::Values &cfg, StageOutput &out) {
  write_domino(compute_domino(ctx, cfg), out);
}

}  // namespace

StageInfo domino_stage() {
  StageInfo s{
      "domino",
      "PerWiz's domino paths (Fig. 3): the chain of waits whose removal topples the most waiting, with the "
      "predicted time after each, beside the longest-wait choice",
      {{"max_events", config::Type::Int, int64_t{1000000000000}, "",
        "search only runs with at most this many events (each candidate replays the part of the run it "
        "disturbs, distributed)",
        0, 1e12},
       {"gather_events", config::Type::Int, int64_t{1000000}, "",
        "runs with at most this many events are searched on every process's copy of the whole run, candidates "
        "spread over the processes (a tightly coupled run's disturbance crosses processes at every message: one "
        "exchange round each, distributed); larger runs on the distributed replay",
        0, 1e12},
       {"max_ties", config::Type::Int, int64_t{4}, "", "tied candidates explored per step (the paper's round robin)", 1,
        1000},
       {"max_replays", config::Type::Int, int64_t{5000}, "",
        "at most this many candidate replays (each resumed at its event, stopped once back on the baseline)", 1, 1e9}},
      run_domino};
  s.requires_products = {product_name<ReplayBaseline>()};
  s.uses_products = {product_name<BaselineState>()};
  s.requests = domino_requests;
  return s;
}

}  // namespace perfsift::pipeline
