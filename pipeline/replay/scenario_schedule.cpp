// The replay scheduler (scenario_schedule.h). Each scenario's own replay costs O(owned
// events) per process plus one exchange round per cross-owner dependency level; a pass or
// a round shared by several scenarios costs their sum in work but one exchange.
#include "pipeline/replay/scenario_schedule.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <omp.h>

#include "pipeline/engine/heap.h"
#include "pipeline/replay/distributed_replay.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {

class Schedule {
 public:
  Schedule(Context &ctx, const ReplayModel &model, ScenarioSource &source, const ScheduleOptions &opt,
           KeptReplays &kept)
      : m_ctx(ctx),
        m_model(model),
        m_source(source),
        m_opt(opt),
        m_kept(kept),
        m_width(static_cast<size_t>(std::max(1, omp_get_max_threads()))) {
    if (opt.begin == 0 && opt.end > 0) m_order.push_back(0);
    for (size_t k = std::max<size_t>(opt.begin, 1); k < opt.end; ++k) m_order.push_back(k);
  }

  void run() {
    while (m_at < m_order.size()) {
      // The baseline first with scenarios after it: it leads their pass, when one forms.
      const bool lead = m_order[m_at] == 0 && m_at + 1 < m_order.size();
      if (replay_together(lead)) continue;
      if (lead) {
        // No pass formed with the baseline: it replays last, alone.
        m_order.erase(m_order.begin() + static_cast<std::ptrdiff_t>(m_at));
        m_order.push_back(0);
        continue;
      }
      replay_alone(m_order[m_at++]);
    }
    std::sort(m_kept.kept.begin(), m_kept.kept.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  }

 private:
  // Scenarios that keep no timings replay together.
  bool side_by_side(size_t k) const { return k > 0 && k >= m_opt.keep_end; }
  rp::Scenario take_scenario(size_t k);
  void build_together(size_t from, size_t to);
  std::string names(size_t n) const;
  bool replay_together(bool lead);
  bool replay_pass(bool lead, size_t pass_width, std::vector<rp::Scenario> &scenarios,
                   std::vector<rp::EventSink> &sinks);
  void keep_first(size_t n, std::vector<rp::Scenario> &scenarios, std::vector<rp::EventSink> &sinks);
  bool adopt_baseline_of_pass(const rp::Scenario &baseline, std::vector<rp::TimingColumn> timings);
  void replay_alone(size_t k);

  Context &m_ctx;
  const ReplayModel &m_model;
  ScenarioSource &m_source;
  const ScheduleOptions &m_opt;
  KeptReplays &m_kept;
  const size_t m_width;  // threads: engines side by side
  std::vector<size_t> m_order;
  size_t m_at = 0;              // m_order[m_at, ...) are left to replay
  bool m_pass_blocked = false;  // a one-pass replay met ranks blocked for good: so would every other
  // Each scenario is built once (collective; a balance question's holds 8 B per owned
  // event), a window's together (build_together), then moved to its replay.
  std::map<size_t, rp::Scenario> m_built;
};

rp::Scenario Schedule::take_scenario(size_t k) {
  auto it = m_built.find(k);
  if (it == m_built.end()) return std::move(m_source.build({k})[0]);
  rp::Scenario sc = std::move(it->second);
  m_built.erase(it);
  return sc;
}

// The scenarios of m_order[from, to) not built yet, built together.
void Schedule::build_together(size_t from, size_t to) {
  std::vector<size_t> fresh;
  for (size_t j = from; j < to; ++j)
    if (!m_built.contains(m_order[j])) fresh.push_back(m_order[j]);
  if (fresh.size() < 2) return;
  auto scenarios = m_source.build(fresh);
  for (size_t i = 0; i < fresh.size(); ++i) m_built.emplace(fresh[i], std::move(scenarios[i]));
}

// The names of the next n scenarios, for a progress line.
std::string Schedule::names(size_t n) const {
  std::string t;
  for (size_t j = m_at; j < m_at + n; ++j) t += (j > m_at ? ", " : "") + m_source.name(m_order[j]);
  return t;
}

// The first n of the window replay now; the others go back, built, for a later round.
void Schedule::keep_first(size_t n, std::vector<rp::Scenario> &scenarios, std::vector<rp::EventSink> &sinks) {
  for (size_t j = n; j < scenarios.size(); ++j) m_built.emplace(m_order[m_at + j], std::move(scenarios[j]));
  scenarios.resize(n);
  sinks.resize(n);
}

// The window of scenarios from m_at that replay together: in one pass when they can, else
// side by side. False when none formed (nothing replayed).
bool Schedule::replay_together(bool lead) {
  const size_t pass_width = lead ? rp::kPassWidth : kQuestionsPerPass;  // the baseline's lane too
  size_t stop = m_at + (lead ? 1 : 0);
  const size_t window = lead ? pass_width : m_pass_blocked ? m_width : std::max(m_width, pass_width);
  while (stop < m_order.size() && stop - m_at < window && side_by_side(m_order[stop])) ++stop;
  if (stop - m_at <= 1) return false;
  build_together(m_at, stop);
  std::vector<rp::Scenario> scenarios;
  std::vector<rp::EventSink> sinks;
  for (size_t j = m_at; j < stop; ++j) {
    scenarios.push_back(take_scenario(m_order[j]));
    sinks.push_back(m_source.sink(m_order[j]));
  }
  if (!m_pass_blocked && replay_pass(lead, pass_width, scenarios, sinks)) return true;
  if (!lead && m_width > 1) {
    const size_t n = std::min(m_width, scenarios.size());
    keep_first(n, scenarios, sinks);
    m_ctx.progress().begin(m_opt.stage + ": " + names(n));
    std::vector<int64_t> released;
    const auto times = replay_distributed(m_ctx, m_model, scenarios, sinks, &released);
    m_ctx.progress().end();
    for (size_t j = m_at; j < m_at + n; ++j) m_source.answer(m_order[j], times[j - m_at], released[j - m_at]);
    m_at += n;
    return true;
  }
  keep_first(0, scenarios, sinks);
  return false;
}

// The window's first scenarios that share a pass replayed in one. False when fewer than
// two share it, or the pass met ranks blocked for good (then every scenario replays on its
// own: what the pass's sinks saw goes).
bool Schedule::replay_pass(bool lead, size_t pass_width, std::vector<rp::Scenario> &scenarios,
                           std::vector<rp::EventSink> &sinks) {
  const size_t n = std::min(questions_sharing_a_pass(m_ctx, m_model, scenarios), pass_width);
  if (n <= 1) return false;
  keep_first(n, scenarios, sinks);
  m_ctx.progress().begin(m_opt.stage + ": " + names(n));
  std::vector<rp::TimingColumn> timings;
  const auto times = replay_one_pass(m_ctx, m_model, scenarios, sinks, lead ? &timings : nullptr);
  m_ctx.progress().end();
  if (!times) {
    for (size_t j = m_at; j < m_at + n; ++j) m_source.discard(m_order[j]);
    m_pass_blocked = true;
    return false;
  }
  for (size_t j = m_at; j < m_at + n; ++j) m_source.answer(m_order[j], (*times)[j - m_at], 0);
  if (lead) {
    const rp::Scenario baseline = std::move(scenarios[0]);
    scenarios.clear();
    hand_back_freed_pages();  // the scenarios' freed tables would sit beside what outlives the replays
    if (!adopt_baseline_of_pass(baseline, std::move(timings))) m_order.push_back(0);
  }
  m_at += n;
  return true;
}

// The baseline's pass replayed: its timings are kept (and stored); its state, when kept,
// is rebuilt from them. False when that state cannot be rebuilt: the baseline then
// replays alone after all.
bool Schedule::adopt_baseline_of_pass(const rp::Scenario &baseline, std::vector<rp::TimingColumn> timings) {
  if (m_opt.keep_state) {
    m_ctx.progress().begin(m_opt.stage + ": the baseline's state");
    auto snap = snapshot_of_replay(m_ctx, m_model, baseline, std::move(timings));
    m_ctx.progress().end();
    if (!snap) {
      m_source.discard(0);
      return false;
    }
    timings = std::exchange(snap->own_timings, {});
    m_kept.state = std::make_shared<rp::Snapshot>(std::move(*snap));
  }
  if (m_opt.store) m_kept.kept.emplace_back(0, timings);
  *m_kept.baseline = std::move(timings);
  m_kept.replayed = true;
  if (m_kept.state) m_kept.state->borrowed_timings = m_kept.baseline.get();
  return true;
}

// Scenario k replayed on its own (m_at already past it); the baseline's state, when kept,
// comes from this replay.
void Schedule::replay_alone(size_t k) {
  const rp::Scenario sc = take_scenario(k);
  const bool keep = k < m_opt.keep_end;
  if (k == 0 && m_opt.keep_state) m_kept.state = std::make_shared<rp::Snapshot>();
  // The baseline's timings (and state) outlive the replays: the others' freed tables
  // would sit beside them (at 10^7 events, K = 1, 0.5 GB of 1.3).
  if (k == 0 && m_at > 1) hand_back_freed_pages();
  m_ctx.progress().begin(m_opt.stage + ": " + m_source.name(k));
  ReplayOutcome o =
      replay_distributed(m_ctx, m_model, sc, keep || k == 0, m_source.sink(k), k == 0 ? m_kept.state.get() : nullptr);
  m_ctx.progress().end();
  m_source.answer(k, o.makespan_ns, o.released);
  const bool stored = keep && m_opt.store;
  if (k == 0) {
    *m_kept.baseline = stored ? o.timings : std::move(o.timings);  // a copy only when stored too
    m_kept.replayed = true;
    if (m_kept.state) m_kept.state->borrowed_timings = m_kept.baseline.get();
  }
  if (stored) m_kept.kept.emplace_back(static_cast<int64_t>(k), std::move(o.timings));
}

}  // namespace

void replay_scenarios(Context &ctx, const ReplayModel &model, ScenarioSource &source, const ScheduleOptions &opt,
                      KeptReplays &kept) {
  Schedule(ctx, model, source, opt, kept).run();
}

}  // namespace perfsift::pipeline
