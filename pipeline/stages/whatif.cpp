// Stage `whatif` (PerWiz F2): how much would a fix buy? Builds the replayable program
// (messages matched across processes), replays the run on LogGPS as measured (the
// baseline, with its error against the measured run), then every question: the user's
// (`whatif.questions`, `--whatif`), the standard ones (ideal network, no waiting, each
// step region balanced, each step balanced), and one per finding of the earlier stages
// that states its fix — which prices that finding (predicted_gain_s).
//
// Cost per question: one distributed replay, O(owned events) per process plus one
// exchange round per cross-owner dependency level; building the program is one pass over
// the owned events and one all-to-all of message keys.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include "kernels/rank_set.h"
#include "kernels/replay_pass.h"
#include "pipeline/engine/heap.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/replay/descheduled_time.h"
#include "pipeline/replay/distributed_replay.h"
#include "pipeline/replay/loggps_file.h"
#include "pipeline/replay/replay_baseline.h"
#include "pipeline/replay/run_network_estimate.h"
#include "pipeline/replay/scenario_schedule.h"
#include "pipeline/whatif/questions.h"
#include "pipeline/whatif/scenarios.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {

std::vector<std::string> region_paths(const io::TraceStore &store) {
  std::vector<std::string> p;
  for (const auto &r : store.regions()) p.push_back(r.path);
  return p;
}

// Step regions present anywhere, and their largest step number (collective).
std::map<int32_t, int64_t> step_regions(const Context &ctx, const ReplayModel &model) {
  std::vector<int64_t> top(static_cast<size_t>(ctx.nregions()), -1);
  for (const auto &side : model.side)
    for (const auto &x : side.executions)
      if (x.step >= 0 && x.region >= 0 && x.region < ctx.nregions())
        top[static_cast<size_t>(x.region)] = std::max<int64_t>(top[static_cast<size_t>(x.region)], x.step);
  MPI_Allreduce(MPI_IN_PLACE, top.data(), static_cast<int>(top.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  std::map<int32_t, int64_t> out;
  for (size_t g = 0; g < top.size(); ++g)
    if (top[g] >= 0) out[static_cast<int32_t>(g)] = top[g];
  return out;
}

struct Asked {
  std::string text, origin;
  bool fixes_finding = false;  // some finding's fix (whatever origin asked it first)
  std::string fix = {};        // that fix as a thing to do (fix_words); empty for other questions
};

// Set-up: every question names what the store holds.
void check_whatif(const config::Values &cfg, const io::TraceStore &store) {
  const auto paths = region_paths(store);
  for (const auto &q : cfg.get_list("whatif.questions")) parse_question(q, paths);
}

// What the stage found: every question (baseline first) with its prediction, and the
// predicted traces it keeps.
struct WhatifResult {
  std::shared_ptr<const ReplayModel> model;  // the matched run, replayed under `params`
  kernels::LogGPS params;
  RunNetwork network;                                  // where `params` came from
  std::vector<std::string> paths;                      // region paths of the store
  std::vector<Asked> asked;                            // each text once
  size_t user_end = 0;                                 // asked[0, user_end): the baseline and the user's questions
  std::vector<int64_t> predicted, selected, released;  // per question, run-wide
  bool traces = false;                                 // predicted traces are stored
  // The baseline's timings, the stored predicted traces' (KeptReplays::kept), and the
  // baseline replay's state when a later stage asks for it (keep_state: BaselineState).
  KeptReplays replays;
  bool keep_state = false;
  // Waiting per call site (this process's part until summed) of the baseline and of every
  // fix that changes work: which waiting each fix removes.
  std::vector<uint8_t> effect_of;               // per question: its per-site waiting is measured
  std::vector<std::vector<int64_t>> site_wait;  // per question, per place (empty when not measured)
  size_t sites = 0;                             // places [0, sites) are call sites, then regions
  std::map<std::string, size_t> place_of;       // waiting fixes (FixEffects::place_of)
  // Masked fixes (price_masked_fixes): a balance fix predicting no gain alone, priced on top
  // of the other findings' balance fixes: its marginal gain and what it was priced on.
  struct Masked {
    double gain_s;
    std::string on_top_of;
  };
  std::map<std::string, Masked> masked;
};

// A finding's fix whose effect on waiting elsewhere is measured: it changes work (balance,
// scale) or the network, not waiting itself.
bool changes_work(const Asked &a, const Question &q) {
  if (!a.fixes_finding || q.baseline) return false;
  if (q.ideal_network) return true;
  if (q.clauses.empty()) return false;
  for (const auto &c : q.clauses)
    if (c.action == Action::ZeroWait || c.action == Action::Zero) return false;
  return true;
}

// Adds event i of owned slot s's waiting to its places (FixEffects): its call site, and
// its innermost region after the `sites` call sites.
void add_event_wait(const ReplayModel::Side &side, size_t i, const rp::EventTiming &t, size_t sites,
                    std::vector<int64_t> &wait) {
  if (i >= side.labels.size()) return;
  const CallLabels::Label &at = side.labels[i];
  const int64_t w = t.exit - t.nowait_exit;
  if (at.site < sites) wait[at.site] += w;
  if (at.region >= 0 && sites + static_cast<size_t>(at.region) < wait.size())
    wait[sites + static_cast<size_t>(at.region)] += w;
}

// The same for every event of replayed timings (of the ranks `side` describes).
void add_site_wait(const std::vector<rp::TimingColumn> &timings, const std::vector<ReplayModel::Side> &side,
                   size_t sites, std::vector<int64_t> &wait) {
  for (size_t s = 0; s < timings.size() && s < side.size(); ++s)
    for (size_t i = 0; i < timings[s].size(); ++i) add_event_wait(side[s], i, timings[s][i], sites, wait);
}

// The place (FixEffects) a waiting fix names: "zero-wait callsite X" or "zero-wait region R"
// for every rank; -1 for any other question.
int64_t waiting_place(const Question &q, size_t sites, size_t regions) {
  if (q.clauses.size() != 1 || q.clauses[0].action != Action::ZeroWait || !q.clauses[0].sel.ranks.empty()) return -1;
  const Selector &s = q.clauses[0].sel;
  if (s.kind == Selector::Kind::Callsite && s.callsite >= 0 && static_cast<size_t>(s.callsite) < sites)
    return s.callsite;
  if (s.kind == Selector::Kind::Region && s.region_id >= 0 && static_cast<size_t>(s.region_id) < regions)
    return static_cast<int64_t>(sites) + s.region_id;
  return -1;
}

// The standard questions: ideal network, no waiting, and every step region and step balanced (collective).
void add_standard_questions(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                            const std::vector<std::string> &paths, std::vector<Asked> &asked) {
  asked.push_back({"ideal-network", "standard"});
  asked.push_back({"zero-wait all", "standard"});
  const int64_t cap = cfg.get_int("whatif.max_step_questions");
  int64_t used = 0;
  for (const auto &[region, top] : step_regions(ctx, model)) {
    const std::string path = quote_region(paths[static_cast<size_t>(region)]);  // as a question names it
    asked.push_back({"balance steps of " + path, "standard"});
    asked.push_back({"balance-messages steps of " + path, "standard"});
    asked.push_back({"zero-wait region " + path, "standard"});
    for (int64_t k = 0; k <= top && used < cap; ++k, ++used)
      asked.push_back({"balance step " + std::to_string(k) + " of " + path, "standard"});
  }
}

// The questions, baseline first; the same text is asked once. Sets `user_end`.
// `ideal_network`: asked even without the standard questions (a later stage reads its answer).
std::vector<Asked> ask_questions(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                                 const std::vector<std::string> &paths, bool ideal_network, size_t &user_end) {
  std::vector<Asked> asked = {{"baseline", "baseline"}};
  for (const auto &q : cfg.get_list("whatif.questions")) asked.push_back({q, "user"});
  user_end = asked.size();
  if (cfg.get_bool("whatif.standard_questions"))
    add_standard_questions(ctx, cfg, model, paths, asked);
  else if (ideal_network)
    asked.push_back({"ideal-network", "standard"});
  for (const auto &f : ctx.findings)
    if (f.fix) asked.push_back({f.fix->question, "finding", false, fix_words(*f.fix)});
  if (const auto *found = ctx.products().find<Bottlenecks>())
    for (const auto &b : found->items)
      if (b.fix) asked.push_back({b.fix->question, "finding", false, fix_words(*b.fix)});
  std::vector<Asked> unique;
  std::map<std::string, size_t> seen;
  for (auto &a : asked) {
    auto [it, fresh] = seen.emplace(a.text, unique.size());
    if (fresh) unique.push_back(a);
    unique[it->second].fixes_finding = unique[it->second].fixes_finding || a.origin == "finding";
    if (unique[it->second].fix.empty()) unique[it->second].fix = a.fix;
  }
  return unique;
}

// Question k's event sink, when its waiting per place is measured (WhatifResult::effect_of):
// summed as its replay goes, not from 12.5 B per event of recorded timings; none for
// other questions. `model` describes the replayed ranks.
rp::EventSink site_wait_sink(const ReplayModel &model, WhatifResult &r, size_t k) {
  if (!r.effect_of[k]) return {};
  return [&model, &r, k](int32_t s, int64_t i, const rp::EventTiming &t) {
    add_event_wait(model.side[static_cast<size_t>(s)], static_cast<size_t>(i), t, r.sites, r.site_wait[k]);
  };
}

// The questions as the replay scheduler sees them (pipeline/replay/scenario_schedule.h):
// their scenarios, sinks and answers go to and from the stage's result.
class WhatifScenarios final : public ScenarioSource {
 public:
  WhatifScenarios(Context &ctx, const std::vector<Question> &parsed, WhatifResult &r)
      : m_ctx(ctx), m_parsed(parsed), m_r(r) {}
  std::vector<rp::Scenario> build(const std::vector<size_t> &which) override {
    std::vector<rp::Scenario> scenarios;
    if (which.size() == 1) {  // moved, not copied from an initializer list (8 B per owned event)
      scenarios.push_back(build_scenario(&m_ctx, *m_r.model, m_r.params, m_parsed[which[0]], m_r.selected[which[0]]));
      return scenarios;
    }
    std::vector<const Question *> questions;
    for (size_t k : which) questions.push_back(&m_parsed[k]);
    std::vector<int64_t> selected;
    m_ctx.progress().begin("whatif: the scenarios of " + std::to_string(which.size()) + " questions");
    scenarios = build_scenarios(&m_ctx, *m_r.model, m_r.params, questions, selected);
    m_ctx.progress().end();
    for (size_t i = 0; i < which.size(); ++i) m_r.selected[which[i]] = selected[i];
    return scenarios;
  }
  rp::EventSink sink(size_t k) override { return site_wait_sink(*m_r.model, m_r, k); }
  void discard(size_t k) override {
    std::fill(m_r.site_wait[k].begin(), m_r.site_wait[k].end(), 0);
    m_r.predicted[k] = INT64_MIN;
  }
  void answer(size_t k, int64_t makespan_ns, int64_t released) override {
    m_r.predicted[k] = makespan_ns;
    m_r.released[k] = released;
  }
  std::string name(size_t k) const override { return m_r.asked[k].text; }

 private:
  Context &m_ctx;
  const std::vector<Question> &m_parsed;
  WhatifResult &m_r;
};

// Questions [begin, end) replayed distributed, every process advancing its own ranks;
// those before `keep_end` keep their timings: the baseline's are kept (ReplayBaseline),
// and the stored traces'.
void replay_distributed_questions(Context &ctx, const std::vector<Question> &parsed, size_t end, size_t keep_end,
                                  WhatifResult &r, size_t begin = 0) {
  WhatifScenarios source(ctx, parsed, r);
  replay_scenarios(ctx, *r.model, source, {begin, end, keep_end, r.traces, r.keep_state, "whatif"}, r.replays);
}

// The baseline alone, replayed on `whole` (gather_whole) by every process; each keeps its
// own ranks' timings, waiting and, when asked, state: what its distributed replay leaves.
// False, on every process, when that state cannot be rebuilt from the timings: replay it
// distributed then (collective).
bool replay_baseline_whole(Context &ctx, const ReplayModel &whole, const std::vector<Question> &parsed,
                           WhatifResult &r) {
  ctx.progress().begin("whatif: baseline, on the whole run");
  const rp::Scenario whole_sc = build_scenario(nullptr, whole, r.params, parsed[0], r.selected[0]);
  auto o = rp::replay_serial(whole.programs, whole_sc, true);
  ctx.progress().end();
  const ReplayModel &model = *r.model;
  std::vector<rp::TimingColumn> timings(model.programs.size());
  for (size_t w = 0; w < whole.programs.size(); ++w)
    for (size_t s = 0; s < model.programs.size(); ++s)
      if (model.programs[s].rank == whole.programs[w].rank) timings[s] = std::move(o.timings[w]);
  WhatifScenarios source(ctx, parsed, r);
  if (r.keep_state) {
    ctx.progress().begin("whatif: the baseline's state");
    auto snap = snapshot_of_replay(ctx, model, source.build({0})[0], std::move(timings));
    ctx.progress().end();
    if (!snap) return false;
    timings = std::exchange(snap->own_timings, {});
    r.replays.state = std::make_shared<rp::Snapshot>(std::move(*snap));
  }
  add_site_wait(timings, model.side, r.sites, r.site_wait[0]);
  if (r.traces) r.replays.kept.emplace_back(0, timings);
  *r.replays.baseline = std::move(timings);
  r.replays.replayed = true;
  if (r.replays.state) r.replays.state->borrowed_timings = r.replays.baseline.get();
  source.answer(0, o.makespan, o.released);
  return true;
}

// Questions [begin, n) spread over the processes and their threads, each replaying the
// whole run alone: a process's questions that fit one pass (kernels/replay_pass.h)
// together, kQuestionsPerPass at most, the others one by one; the answers meet in
// reductions (collective).
void replay_spread_questions(Context &ctx, const std::vector<Question> &parsed, size_t begin, WhatifResult &r,
                             std::shared_ptr<const ReplayModel> whole = nullptr) {
  const size_t n = parsed.size();
  ctx.progress().begin("whatif: " + std::to_string(n - begin) + " questions spread over " +
                       std::to_string(ctx.nprocs()) + " processes");
  if (!whole) whole = gather_whole(ctx, *r.model);
  std::vector<size_t> mine;
  for (size_t k = begin + static_cast<size_t>(ctx.me()); k < n; k += static_cast<size_t>(ctx.nprocs()))
    mine.push_back(k);
  std::vector<rp::Scenario> sc(mine.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t j = 0; j < mine.size(); ++j)
    sc[j] = build_scenario(nullptr, *whole, r.params, parsed[mine[j]], r.selected[mine[j]]);
  // Passes: runs of consecutive questions that fit one together (a run of one replays alone).
  std::vector<std::pair<size_t, size_t>> passes;
  for (size_t a = 0; a < mine.size();) {
    std::vector<const rp::Scenario *> next;
    for (size_t j = a; j < mine.size() && next.size() < kQuestionsPerPass; ++j) next.push_back(&sc[j]);
    const size_t b = a + std::max<size_t>(1, rp::sharing_a_pass(whole->programs, next));
    passes.emplace_back(a, b);
    a = b;
  }
  const auto alone = [&](size_t j) {
    const size_t k = mine[j];
    const auto o = rp::replay_serial(whole->programs, sc[j], r.effect_of[k] != 0);
    r.predicted[k] = o.makespan;
    r.released[k] = o.released;
    if (r.effect_of[k]) add_site_wait(o.timings, whole->side, r.sites, r.site_wait[k]);
  };
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t p = 0; p < passes.size(); ++p) {
    const auto [a, b] = passes[p];
    if (b - a == 1) {
      alone(a);
      continue;
    }
    std::vector<const rp::Scenario *> pass;
    std::vector<rp::EventSink> sinks;
    for (size_t j = a; j < b; ++j) {
      pass.push_back(&sc[j]);
      sinks.push_back(site_wait_sink(*whole, r, mine[j]));
    }
    if (const auto times = rp::replay_pass_serial(whole->programs, pass, sinks, rp::SinkEvents::Waited)) {
      for (size_t j = a; j < b; ++j) {
        r.predicted[mine[j]] = (*times)[j - a];
        r.released[mine[j]] = 0;
      }
      continue;
    }
    // Blocked for good somewhere: each question alone (what its sink saw goes).
    for (size_t j = a; j < b; ++j) {
      std::fill(r.site_wait[mine[j]].begin(), r.site_wait[mine[j]].end(), 0);
      alone(j);
    }
  }
  for (auto *v : {&r.predicted, &r.selected, &r.released})
    MPI_Allreduce(MPI_IN_PLACE, v->data(), static_cast<int>(n), MPI_INT64_T, MPI_MAX, ctx.comm());
  ctx.progress().end();
}

// A balance fix is masked when another imbalance sets the pace: balancing one region gives
// the ranks that carry the other one more work, and alone it predicts no gain (or a loss)
// although it is real. Each such finding's fix (at most whatif.masked_fixes, in asking
// order) is priced on top of the other findings' balance fixes: "G" against "G and F",
// two more questions each, asked with origin "masked" (collective).
void price_masked_fixes(Context &ctx, const config::Values &cfg, std::vector<Question> &parsed, bool spread,
                        WhatifResult &r) {
  const int64_t cap = cfg.get_int("whatif.masked_fixes");
  const double baseline = static_cast<double>(r.predicted[0]);
  const double no_gain = 1e9 * no_gain_s(1e-9 * baseline);  // ns
  auto is_balance = [&](size_t k) {
    const Question &q = parsed[k];
    return r.asked[k].fixes_finding && !q.baseline && !q.ideal_network && !q.clauses.empty() &&
           std::all_of(q.clauses.begin(), q.clauses.end(), [](const Clause &c) { return c.action == Action::Balance; });
  };
  // Only fixes of one region each: regions apart (neither inside the other) change
  // different computation, so "G and F" adds F's change to G's.
  auto region_of = [&](size_t k) -> const std::string * {
    const Question &q = parsed[k];
    if (q.clauses.size() != 1 || q.clauses[0].sel.kind != Selector::Kind::Region || q.clauses[0].sel.region_id < 0 ||
        static_cast<size_t>(q.clauses[0].sel.region_id) >= r.paths.size() || !q.clauses[0].sel.ranks.empty())
      return nullptr;
    return &r.paths[static_cast<size_t>(q.clauses[0].sel.region_id)];
  };
  auto inside = [](const std::string &a, const std::string &b) {  // a is b or below it
    return a.size() >= b.size() && a.compare(0, b.size(), b) == 0 && (a.size() == b.size() || a[b.size()] == '/');
  };
  auto apart = [&](const std::string &a, const std::string &b) { return !inside(a, b) && !inside(b, a); };
  std::vector<size_t> fixes;
  for (size_t k = 1; k < r.asked.size(); ++k)
    if (is_balance(k) && region_of(k)) fixes.push_back(k);
  const size_t first_new = r.asked.size();
  std::vector<std::pair<size_t, std::string>> masked;  // (question, what it is priced on)
  for (size_t m : fixes) {
    if (static_cast<int64_t>(masked.size()) >= cap) break;
    if (baseline - static_cast<double>(r.predicted[m]) > no_gain) continue;
    std::string others;
    std::vector<const std::string *> taken = {region_of(m)};
    for (size_t g : fixes) {
      const std::string *at = region_of(g);
      if (g == m || !std::all_of(taken.begin(), taken.end(), [&](const std::string *t) { return apart(*at, *t); }))
        continue;
      taken.push_back(at);
      others += (others.empty() ? "" : " and ") + r.asked[g].text;
    }
    if (others.empty()) continue;
    masked.emplace_back(m, others);
    for (const std::string &text : {others, others + " and " + r.asked[m].text})
      if (std::none_of(r.asked.begin(), r.asked.end(), [&](const Asked &a) { return a.text == text; })) {
        r.asked.push_back({text, "masked"});
        parsed.push_back(parse_question(text, r.paths));
      }
  }
  const size_t n = r.asked.size();
  if (masked.empty()) return;
  if (n > first_new) {  // the texts not asked before
    r.predicted.resize(n, INT64_MIN);
    r.selected.resize(n, INT64_MIN);
    r.released.resize(n, INT64_MIN);
    r.effect_of.resize(n, 0);
    r.site_wait.resize(n);
    if (spread)
      replay_spread_questions(ctx, parsed, first_new, r);
    else
      replay_distributed_questions(ctx, parsed, n, 0, r, first_new);
  }
  std::map<std::string, int64_t> predicted;
  for (size_t k = 0; k < n; ++k) predicted[r.asked[k].text] = r.predicted[k];
  for (const auto &[m, others] : masked) {
    const double on_top = static_cast<double>(predicted[others] - predicted[others + " and " + r.asked[m].text]);
    r.masked[r.asked[m].text] = {on_top * 1e-9, others};
  }
}

// Asks and replays every question (collective).
WhatifResult compute_whatif(Context &ctx, const config::Values &cfg) {
  WhatifResult r;
  // The network: the run's own (its messages, its collectives as measured), unless a
  // calibration file overrides the point-to-point parameters; too few messages for one
  // keeps the default. The matched run does not depend on it: its scenarios carry it.
  const std::string params_path = cfg.get_string("whatif.loggps");
  const auto &matched = ctx.products().get<MatchedRun>().model;
  r.network = estimate_run_network(ctx, *matched, ctx.products().get<MatchedMessages>().items, kernels::LogGPS{},
                                   kernels::ParameterOrigin::Defaults);
  if (!params_path.empty()) override_with_file(r.network, read_loggps(params_path));
  r.params = r.network.replay;
  r.model = matched;
  r.paths = region_paths(ctx.store());
  const RunShape shape{r.model->events, r.model->threaded_ranks};
  r.asked = ask_questions(ctx, cfg, *r.model, r.paths, ctx.products().requested<ProgramReplayTimes>(shape), r.user_end);
  r.traces = r.model->events <= cfg.get_int("whatif.trace_max_events");
  r.keep_state = ctx.products().requested<BaselineState>(shape);
  // Questions with stored traces (the baseline, the user's) replay distributed: every
  // process advances its own ranks. The rest are spread over the processes and their
  // threads, each replaying the whole run alone, when it fits (whatif.spread_max_events).
  const size_t n = r.asked.size();
  std::vector<Question> parsed;
  for (const auto &a : r.asked) parsed.push_back(parse_question(a.text, r.paths));
  r.effect_of.assign(n, 0);
  r.site_wait.assign(n, {});
  r.sites = ctx.store().callsites().size();
  const size_t places = r.sites + r.paths.size();
  for (size_t k = 0; k < n; ++k) {
    if (k == 0 || changes_work(r.asked[k], parsed[k])) {
      r.effect_of[k] = 1;
      r.site_wait[k].assign(places, 0);
    }
    if (const int64_t at = waiting_place(parsed[k], r.sites, r.paths.size()); at >= 0)
      r.place_of[r.asked[k].text] = static_cast<size_t>(at);
  }
  r.predicted.assign(n, INT64_MIN);
  r.selected.assign(n, INT64_MIN);
  r.released.assign(n, INT64_MIN);
  const size_t distributed_end = std::max<size_t>(1, r.traces ? r.user_end : 1);
  const bool spread = ctx.nprocs() > 1 && r.model->events <= cfg.get_int("whatif.spread_max_events");
  // The baseline alone, on a run whose exchange rounds would outweigh its replay: on every
  // process's copy, which the spread questions replay on too.
  std::shared_ptr<const ReplayModel> whole;
  if (spread && distributed_end == 1 && rounds_outweigh_replay(ctx, *r.model)) {
    whole = gather_whole(ctx, *r.model);
    if (!replay_baseline_whole(ctx, *whole, parsed, r)) replay_distributed_questions(ctx, parsed, 1, 1, r);
  } else {
    replay_distributed_questions(ctx, parsed, spread ? std::min(distributed_end, n) : n, distributed_end, r);
  }
  if (spread && distributed_end < n) replay_spread_questions(ctx, parsed, distributed_end, r, whole);
  price_masked_fixes(ctx, cfg, parsed, spread, r);
  for (size_t k = 0; k < n; ++k)  // each process holds its ranks' part, or the questions it replayed
    if (r.effect_of[k])
      MPI_Allreduce(MPI_IN_PLACE, r.site_wait[k].data(), static_cast<int>(r.site_wait[k].size()), MPI_INT64_T, MPI_SUM,
                    ctx.comm());
  return r;
}

// /whatif/questions: each question's prediction and gain over the baseline replay.
io::Table questions_table(const WhatifResult &r) {
  io::Table qt;
  qt.description = "what-if questions: predicted run time and gain over the baseline replay";
  auto &q_text = qt.strings("question", "the question as asked");
  auto &q_origin = qt.strings("origin", "baseline, user, standard, or finding (prices a finding)");
  auto &q_fix = qt.strings("fix", "a finding's fix as a thing to do, in the program's terms; else the question");
  auto &q_pred = qt.floats("predicted_s", "s", "predicted run time");
  auto &q_gain = qt.floats("gain_s", "s", "baseline replay minus predicted");
  auto &q_sel = qt.ints("selected", "", "events and computation spans the question changed");
  auto &q_rel = qt.ints("released", "", "dependencies released at a stuck point (crashed ranks, missing messages)");
  const double baseline_s = static_cast<double>(r.predicted[0]) * 1e-9;
  for (size_t k = 0; k < r.asked.size(); ++k) {
    const double pred = static_cast<double>(r.predicted[k]) * 1e-9;
    q_text.push_back(r.asked[k].text);
    q_origin.push_back(r.asked[k].origin);
    q_fix.push_back(r.asked[k].fix.empty() ? r.asked[k].text : r.asked[k].fix);
    q_pred.push_back(pred);
    q_gain.push_back(baseline_s - pred);
    q_sel.push_back(r.selected[k]);
    q_rel.push_back(r.released[k]);
  }
  return qt;
}

// /whatif/trace, rank by rank (the same rows in the same order for any number of
// processes): the measured run (question -1), then each stored prediction.
io::Table trace_table(const WhatifResult &r) {
  const ReplayModel &model = *r.model;
  io::Table trace_rows;
  auto &t_q = trace_rows.ints("question", "", "row of whatif/questions; -1: the measured run");
  auto &t_rank = trace_rows.ints("rank", "", "application rank");
  auto &t_event = trace_rows.ints("event", "", "event index within the rank");
  auto &t_enter = trace_rows.ints("enter_ns", "ns", "predicted call start");
  auto &t_exit = trace_rows.ints("exit_ns", "ns", "predicted call end");
  auto &t_wait =
      trace_rows.ints("wait_ns", "ns", "predicted waiting inside the call; -1: not predicted (the measured run)");
  auto &t_op = trace_rows.ints("op", "", "operation: index into the whatif group's trace_operations");
  auto &t_region = trace_rows.ints("region", "", "innermost region: index into trace_regions");
  trace_rows.description =
      "the measured run and the predicted traces of the baseline and the user's questions (whatif.trace_max_events)";
  auto row = [&](int64_t question, size_t s, size_t i, int64_t enter, int64_t exit, int64_t wait) {
    t_q.push_back(question);
    t_rank.push_back(model.programs[s].rank);
    t_event.push_back(static_cast<int64_t>(i));
    t_enter.push_back(enter);
    t_exit.push_back(exit);
    t_wait.push_back(wait);
    t_op.push_back(model.side[s].labels.op(i));
    t_region.push_back(model.side[s].labels.region(i));
  };
  for (size_t s = 0; s < model.side.size(); ++s) {
    for (size_t i = 0; i < model.side[s].enter.size(); ++i)
      row(-1, s, i, model.side[s].enter[i], model.measured_exit(s, i), -1);
    for (const auto &[question, timings] : r.replays.kept)
      for (size_t i = 0; i < timings[s].size(); ++i) {
        const rp::EventTiming x = timings[s][i];
        row(question, s, i, x.enter, x.exit, x.exit - x.nowait_exit);
      }
  }
  return trace_rows;
}

// /whatif/messages: which calls each message joins — what a timeline of the run draws.
io::Table messages_table(const ReplayModel &model) {
  io::Table links;
  links.description = "matched point-to-point messages: the sending call and the call that completed the receive";
  auto &ls = links.ints("sender", "", "sending rank"),
       &lse = links.ints("send_event", "", "its send call (event index)");
  auto &lr = links.ints("receiver", "", "receiving rank"),
       &lre = links.ints("recv_event", "", "the call that completed the receive");
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &side = model.side[s];
    for (const int32_t ri : matched_receives(model, s)) {
      const auto r = static_cast<size_t>(ri);
      ls.push_back(model.programs[s].recvs[r].src);
      lse.push_back(side.recv_send_event[r]);
      lr.push_back(model.programs[s].rank);
      lre.push_back(side.recv_done[r] >= 0 ? side.recv_done[r] : side.recv_event[r]);
    }
  }
  return links;
}

// The program's time measured, replayed as measured and on an ideal network. MPI_Init is
// replayed as measured and MPI_Finalize's remainder too: outside the program, the replay
// and the run agree, so a replay's program time is its run time less what lies outside.
ProgramReplayTimes program_replay_times(const Context &ctx, const WhatifResult &r) {
  const double measured = static_cast<double>(r.model->measured_ns) * 1e-9;
  const double program = std::min(ctx.program_time_s(), measured), outside = measured - program;
  ProgramReplayTimes t{program, static_cast<double>(r.predicted[0]) * 1e-9 - outside, std::nan("")};
  for (size_t k = 0; k < r.asked.size(); ++k)
    if (r.asked[k].text == "ideal-network" && r.predicted[k] != INT64_MIN)
      t.ideal_network_s = static_cast<double>(r.predicted[k]) * 1e-9 - outside;
  return t;
}

void write_whatif(Context &ctx, const WhatifResult &r, StageOutput &out) {
  const ReplayModel &model = *r.model;
  const double measured = static_cast<double>(model.measured_ns) * 1e-9;
  const double baseline_s = static_cast<double>(r.predicted[0]) * 1e-9;
  for (const auto &[name, value] : loggps_attributes(r.params)) out.attribute(name, value);
  for (const auto &[name, value] : run_network_attributes(r.network)) out.attribute(name, value);
  out.attribute("measured_s", measured);
  out.attribute("baseline_s", baseline_s);
  // The program's error is the run's difference over the program's time (the honest
  // figure when start-up dwarfs a short program).
  const ProgramReplayTimes times = program_replay_times(ctx, r);
  const double program = times.measured_s;
  out.attribute("program_measured_s", program);
  out.attribute("program_baseline_s", times.baseline_s);
  out.attribute("baseline_error", program > 0 ? (baseline_s - measured) / program : 0.0);
  out.attribute("run_error", measured > 0 ? (baseline_s - measured) / measured : 0.0);
  const DescheduledTime waited = descheduled_time(ctx.store());
  out.attribute("descheduled_s", waited.total_s);
  out.attribute("descheduled_max_s", waited.max_s);
  out.attribute("descheduled_max_rank", static_cast<int64_t>(waited.max_rank));
  out.attribute("descheduled_ranks", static_cast<int64_t>(waited.ranks_recorded));
  out.attribute("error_within_descheduled", static_cast<int64_t>(waited.covers(std::abs(baseline_s - measured))));
  out.attribute("events", model.events);
  out.attribute("sends", model.sends);
  out.attribute("receives", model.receives);
  out.attribute("unmatched_sends", model.unmatched_sends);
  out.attribute("unmatched_receives", model.unmatched_receives);
  out.attribute("cancelled_receives", model.cancelled_receives);
  out.attribute("collective_calls", model.collectives);
  out.attribute("local_calls", model.local_events);
  out.attribute("traces_stored", static_cast<int64_t>(r.traces));
  out.table("questions", questions_table(r));
  if (r.traces) {
    out.table_rows("messages", messages_table(model));
    out.table_rows("trace", trace_table(r));
    out.attribute("trace_operations", ctx.store().ops());
    out.attribute("trace_regions", r.paths);
  }
}

// Warns of unmatched messages and prices the findings that stated their fix (predicted_gain_s).
// Ranks with data that never enter `region` (collective: every process asks the same).
std::vector<int32_t> ranks_never_in(const Context &ctx, int32_t region) {
  const auto &visits = ctx.profile(io::kMetricNames[io::kVisits]);
  const size_t nregions = static_cast<size_t>(ctx.nregions());
  std::vector<int32_t> mine;
  for (int32_t r = ctx.first(); r < ctx.last(); ++r) {
    const size_t at = static_cast<size_t>(r - ctx.first()) * nregions + static_cast<size_t>(region);
    if (!ctx.missing(r) && at < visits.size() && !(visits[at] > 0)) mine.push_back(r);
  }
  return ctx.allgatherv(mine);
}

// A balance of region R moves work between the ranks that run R; ranks that never enter it
// have nowhere to take work, so the replay cannot price a fix whose time at stake counts
// them (a receiver idling while another rank computes): its answer is kept as figures,
// not as the fix's payoff.
class UnpricedWhereRanksNeverEnter {
 public:
  UnpricedWhereRanksNeverEnter(const Context &ctx, const WhatifResult &r) : m_ctx(ctx), m_r(r) {}
  // Collective: findings and bottlenecks are the same on every process, in the same order.
  void apply(const std::string &question, double &gain, std::string &text) {
    if (question.empty() || std::isnan(gain)) return;
    auto it = m_outside.find(question);
    if (it == m_outside.end()) {
      const Question q = parse_question(question, m_r.paths);
      std::vector<int32_t> never;
      if (q.clauses.size() == 1 && q.clauses[0].action == Action::Balance &&
          q.clauses[0].sel.kind == Selector::Kind::Region && q.clauses[0].sel.region_id >= 0)
        never = ranks_never_in(m_ctx, q.clauses[0].sel.region_id);
      it = m_outside.emplace(question, std::move(never)).first;
    }
    if (it->second.empty()) return;
    const bool one = it->second.size() == 1;
    text += std::string(one ? "; rank " : "; ranks ") + kernels::format_ranges_brief(kernels::to_ranges(it->second)) +
            (one ? " never enters it" : " never enter it") +
            ", so the replay cannot move work there (balancing among the ranks that run it: " + format_seconds(gain) +
            ")";
    gain = std::nan("");
  }

 private:
  const Context &m_ctx;
  const WhatifResult &m_r;
  std::map<std::string, std::vector<int32_t>> m_outside;  // per balance question
};

void whatif_findings(Context &ctx, const WhatifResult &r) {
  const ReplayModel &model = *r.model;
  if (model.unmatched_sends + model.unmatched_receives > 0)
    ctx.warnings.push_back("whatif: " + std::to_string(model.unmatched_sends) + " sends and " +
                           std::to_string(model.unmatched_receives) +
                           " receives have no partner in the trace; the replay keeps their measured time");
  std::map<std::string, double> gain_of;
  const double baseline_s = static_cast<double>(r.predicted[0]) * 1e-9;
  for (size_t k = 0; k < r.asked.size(); ++k)
    gain_of[r.asked[k].text] = baseline_s - static_cast<double>(r.predicted[k]) * 1e-9;
  for (auto &f : ctx.findings)
    if (auto it = gain_of.find(f.question()); f.fix && it != gain_of.end()) f.predicted_gain_s = it->second;
  // A masked fix: its gain on top of the other fixes, and why alone it shows none.
  auto unmask = [&](const std::string &question, double &gain, std::string &text) {
    const auto it = r.masked.find(question);
    if (it == r.masked.end() || !(it->second.gain_s > gain)) return;
    text += "; masked: alone its fix predicts " + format_seconds(gain) +
            " (another imbalance sets the pace), on top of " + it->second.on_top_of + " it saves " +
            format_seconds(it->second.gain_s);
    gain = it->second.gain_s;
  };
  for (auto &f : ctx.findings) unmask(f.question(), f.predicted_gain_s, f.cause);
  UnpricedWhereRanksNeverEnter unpriced(ctx, r);
  for (auto &f : ctx.findings) unpriced.apply(f.question(), f.predicted_gain_s, f.cause);
  if (auto *found = ctx.products().find<Bottlenecks>())
    for (auto &b : found->items)
      if (auto it = gain_of.find(b.question()); b.fix && it != gain_of.end()) {
        b.predicted_gain_s = it->second;
        unmask(b.question(), b.predicted_gain_s, b.cause);
        unpriced.apply(b.question(), b.predicted_gain_s, b.cause);
      }
}

// What the replay says of each finding's fix: the waiting it leaves per place (fixes that
// change work), and the place a waiting fix clears. The replay was asked by question text.
FixEffects fix_effects(const Context &ctx, const WhatifResult &r) {
  FixEffects effects;
  effects.baseline_wait = r.site_wait[0];
  std::map<std::string, size_t> asked_as;
  for (size_t k = 1; k < r.asked.size(); ++k) asked_as.emplace(r.asked[k].text, k);
  auto add = [&](const Fix &fix) {
    if (auto p = r.place_of.find(fix.question); p != r.place_of.end()) effects.place_of.emplace(fix, p->second);
    if (auto k = asked_as.find(fix.question); k != asked_as.end() && r.effect_of[k->second])
      effects.wait_under.emplace(fix, r.site_wait[k->second]);
  };
  for (const auto &f : ctx.findings)
    if (f.fix) add(*f.fix);
  if (const auto *found = ctx.products().find<Bottlenecks>())
    for (const auto &b : found->items)
      if (b.fix) add(*b.fix);
  return effects;
}

void run_whatif(Context &ctx, const config::Values &cfg, StageOutput &out) {
  WhatifResult result = compute_whatif(ctx, cfg);
  write_whatif(ctx, result, out);
  whatif_findings(ctx, result);
  ctx.products().publish(fix_effects(ctx, result));
  ctx.products().publish(program_replay_times(ctx, result));
  PERFSIFT_CHECK(result.replays.replayed, "the whatif stage ends without its baseline replay");
  ctx.products().publish(ReplayBaseline{result.model, result.params, result.replays.baseline});
  if (result.replays.state)
    ctx.products().publish(BaselineState{result.replays.baseline, std::move(*result.replays.state)});
}

}  // namespace

StageInfo whatif_stage() {
  StageInfo s{
      "whatif",
      "PerWiz's what-if prediction: LogGPS replay of the matched message DAG, the baseline's error against the "
      "measured run, questions (zero-wait, zero, balance, balance-messages, scale, ideal-network; and), and the "
      "simulated payoff of every finding that states its fix",
      {{"loggps", config::Type::String, std::string(""), "",
        "LogGPS parameter file from `perfsift calibrate` (empty: the run's own network, estimated from its messages)"},
       {"questions", config::Type::StringList, std::vector<std::string>{}, "",
        "what-if questions, e.g. \"balance step 1 of composite\", \"zero-wait region solve and ideal-network\""},
       {"standard_questions", config::Type::Bool, true, "",
        "also ask ideal-network, zero-wait all, and balance every step region and step"},
       {"max_step_questions", config::Type::Int, int64_t{64}, "", "at most this many single-step balance questions", 0,
        1e6},
       {"masked_fixes", config::Type::Int, int64_t{6}, "",
        "findings' balance fixes predicting no gain alone that are priced on top of the other balance fixes "
        "(two questions each)",
        0, 1e6},
       {"trace_max_events", config::Type::Int, int64_t{2000000}, "",
        "store predicted traces (baseline and user questions) when the run has at most this many events", 0, 1e12},
       {"spread_max_events", config::Type::Int, int64_t{5000000}, "",
        "runs up to this many events: questions are spread over processes and threads, each replaying the "
        "whole run (every process then holds every rank's program); larger runs replay each question distributed",
        0, 1e12}},
      run_whatif};
  s.requires_products = {product_name<MatchedRun>(), product_name<MatchedMessages>(), product_name<RegionExecutions>()};
  s.uses_products = {product_name<Bottlenecks>()};
  s.provides_products = {product_name<ReplayBaseline>(), product_name<FixEffects>(), product_name<BaselineState>(),
                         product_name<ProgramReplayTimes>()};
  s.check = check_whatif;
  return s;
}

}  // namespace perfsift::pipeline
