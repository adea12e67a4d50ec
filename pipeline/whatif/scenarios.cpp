// What-if scenarios: where a selector falls on a rank (its computation and calls), and a
// question turned into a kernels::replay::Scenario. A scenario is built per owned rank in
// one pass over its events (O(events + region executions)); balancing needs one
// reduction of per-group totals across processes.
#include "pipeline/whatif/scenarios.h"

#include <algorithm>
#include <functional>

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {

struct Interval {
  int64_t begin, end;
  int32_t group;
};

bool in_ranks(const kernels::RankRanges &ranks, int32_t r) {
  if (ranks.empty()) return true;
  for (const auto &[a, b] : ranks)
    if (r >= a && r <= b) return true;
  return false;
}

// Whether a selector selects by time intervals (intervals_of): all but call sites and events.
bool selects_intervals(const Selector &sel) {
  return sel.kind != Selector::Kind::Callsite && sel.kind != Selector::Kind::Event;
}

// Each selector's time intervals on one rank, sorted, merged per group: one walk of the
// rank's region executions for all of them (a walk decodes every execution).
std::vector<std::vector<Interval>> intervals_of(const std::vector<Selector> &sels, const ReplayModel::Side &side) {
  std::vector<std::vector<Interval>> all(sels.size());
  std::vector<size_t> walked;
  for (size_t k = 0; k < sels.size(); ++k)
    if (sels[k].kind == Selector::Kind::All)
      all[k].push_back({INT64_MIN / 4, INT64_MAX / 4, 0});
    else if (selects_intervals(sels[k]))
      walked.push_back(k);
  if (!walked.empty())
    for (const auto &x : side.executions)
      for (size_t k : walked) {
        const Selector &sel = sels[k];
        if (x.region != sel.region_id) continue;
        if (sel.kind == Selector::Kind::Step && x.step != sel.step) continue;
        if (sel.kind == Selector::Kind::Steps && x.step < 0) continue;
        all[k].push_back({x.t_begin, x.t_end, sel.kind == Selector::Kind::Steps ? x.step : 0});
      }
  for (size_t k = 0; k < sels.size(); ++k) {
    auto &v = all[k];
    std::sort(v.begin(), v.end(), [](const Interval &a, const Interval &b) { return a.begin < b.begin; });
    // Recursion can nest executions of one region: keep the outermost.
    std::vector<Interval> merged;
    for (const auto &x : v) {
      if (!merged.empty() && x.begin < merged.back().end) {
        merged.back().end = std::max(merged.back().end, x.end);
        continue;
      }
      merged.push_back(x);
    }
    if (sels[k].kind == Selector::Kind::Occurrences)
      for (size_t g = 0; g < merged.size(); ++g) merged[g].group = static_cast<int32_t>(g);
    v = std::move(merged);
  }
  return all;
}

// Whether two selectors have the same intervals on every rank (what intervals_of reads).
bool same_intervals(const Selector &a, const Selector &b) {
  return a.kind == b.kind && a.region_id == b.region_id && a.step == b.step;
}

std::vector<Interval> intervals_of(const Selector &sel, const ReplayModel::Side &side) {
  return std::move(intervals_of(std::vector<Selector>{sel}, side)[0]);
}

// Where one selector is in a scan of a rank's enters: its intervals there (intervals_of)
// and the first one the scan has not passed.
struct IntervalCursor {
  const std::vector<Interval> *iv;
  size_t k = 0;
};

// One scan of a rank's enters for several interval selectors (the questions' clauses on
// that rank share the decoding): on_call(cursor, event, group) for each call a selector
// selects (it starts inside one of its intervals), in event order; with `parts`,
// on_part(cursor, event, group, ns) for the computation before each event inside its
// intervals, by event then group. Stops once every selector is past its last interval.
template <class OnCall, class OnPart>
void scan_intervals(const rp::RankProgram &p, const ReplayModel::Side &side, std::vector<IntervalCursor> &cursors,
                    bool parts, OnCall &&on_call, OnPart &&on_part) {
  size_t open = 0;
  for (const auto &c : cursors) open += c.k < c.iv->size();
  if (open == 0) return;
  // Threads other than the one that initialised MPI (laned programs) run beside it: their
  // calls and computation are not the rank's time in a region; they replay as measured.
  const bool laned = !p.lane.empty();
  side.enter.scan([&](size_t i, int64_t b) {
    if (laned && p.lane[i] != 0) return true;
    const int64_t a = b - std::max<int64_t>(0, p.events[i].gap);
    for (size_t c = 0; c < cursors.size(); ++c) {
      const std::vector<Interval> &iv = *cursors[c].iv;
      size_t &k = cursors[c].k;
      if (k == iv.size()) continue;
      while (k < iv.size() && iv[k].end <= a) ++k;
      if (k == iv.size()) {  // past its last interval: nothing later is selected
        --open;
        continue;
      }
      for (size_t j = k; parts && j < iv.size() && iv[j].begin < b; ++j) {
        const int64_t o = std::min(b, iv[j].end) - std::max(a, iv[j].begin);
        if (o > 0) on_part(c, static_cast<int64_t>(i), iv[j].group, o);
      }
      for (size_t j = k; j < iv.size() && iv[j].begin <= b; ++j)
        if (b < iv[j].end) {
          on_call(c, i, iv[j].group);
          break;
        }
    }
    return open > 0;
  });
}

// The selector's calls on one rank and, with `parts`, the computation it spans, the
// selector's intervals there given (intervals_of): on_call(event, group) for each selected
// call in event order, on_part(event, group, ns) for each part, by event then group (one
// event's parts of a group may come in pieces). Returns whether a call site or event
// selector hit a call (their one group then participates). The caller checks the ranks.
template <class OnCall, class OnPart>
bool visit_selection(const Selector &sel, const rp::RankProgram &p, const ReplayModel::Side &side, bool parts,
                     const std::vector<Interval> &iv, OnCall &&on_call, OnPart &&on_part) {
  if (sel.kind == Selector::Kind::Callsite || sel.kind == Selector::Kind::Event) {
    bool hit_any = false;
    for (size_t i = 0; i < p.events.size(); ++i) {
      const bool hit = sel.kind == Selector::Kind::Callsite
                           ? side.labels.site(i) == static_cast<uint32_t>(sel.callsite)
                           : (p.rank == sel.rank && static_cast<int64_t>(i) == sel.index);
      if (!hit || (!p.lane.empty() && p.lane[i] != 0)) continue;  // other lanes: as in scan_intervals
      on_call(i, 0);
      if (parts && p.events[i].gap > 0) on_part(static_cast<int64_t>(i), 0, p.events[i].gap);
      hit_any = true;
    }
    return hit_any;
  }
  std::vector<IntervalCursor> one = {{&iv}};
  scan_intervals(
      p, side, one, parts, [&](size_t, size_t i, int32_t group) { on_call(i, group); },
      [&](size_t, int64_t i, int32_t group, int64_t ns) { on_part(i, group, ns); });
  return false;
}

// locate with the selector's intervals on this rank given (intervals_of); without `calls`
// Located::call stays empty (4 B per event that a caller of the parts alone never reads).
Located locate_in(const Selector &sel, const rp::RankProgram &p, const ReplayModel::Side &side, int32_t ngroups_hint,
                  bool parts, const std::vector<Interval> &iv, bool calls = true) {
  Located L;
  if (calls) L.call.assign(p.events.size(), -1);
  L.participates.assign(static_cast<size_t>(std::max(1, ngroups_hint)), 0);
  if (!in_ranks(sel.ranks, p.rank)) return L;
  for (const auto &x : iv)
    if (x.group >= 0 && static_cast<size_t>(x.group) < L.participates.size())
      L.participates[static_cast<size_t>(x.group)] = 1;
  const bool hit = visit_selection(
      sel, p, side, parts, iv,
      [&](size_t i, int32_t group) {
        if (calls) L.call[i] = group;
      },
      [&](int64_t i, int32_t group, int64_t ns) {
        if (!L.parts.empty() && L.parts.back().event == i && L.parts.back().group == group)
          L.parts.back().ns += ns;
        else
          L.parts.push_back({i, group, ns});
      });
  if (hit) L.participates[0] = 1;
  return L;
}

}  // namespace

Located locate(const Selector &sel, const rp::RankProgram &p, const ReplayModel::Side &side, int32_t ngroups_hint,
               bool parts) {
  const bool walks = selects_intervals(sel) && in_ranks(sel.ranks, p.rank);
  return locate_in(sel, p, side, ngroups_hint, parts, walks ? intervals_of(sel, side) : std::vector<Interval>{});
}

namespace {

// Builds a scenario clause by clause on the model's ranks; a per-rank array of the
// scenario is made when a clause first changes that rank. With a context, collective.
class ScenarioBuilder {
 public:
  ScenarioBuilder(const Context *ctx, const ReplayModel &model)
      : m_ctx(ctx), m_model(model), m_owned(model.programs.size()) {}
  void apply(const Clause &c);
  // A clause that changes each rank on its own (not a balance), how it selects: its
  // selector, group count (collective with a context) and whether it flags calls.
  struct RankClause {
    const Clause *clause;
    Selector sel;
    int32_t ngroups;
    bool flags;
  };
  RankClause rank_clause(const Clause &c) const;
  // The flag a flagging clause sets on the calls it selects.
  static uint8_t flag_of(const Clause &c) { return c.action == Action::ZeroWait ? rp::kZeroWait : rp::kZeroEvent; }
  // Sets `flag` on call i of owned rank s (its flags made at the first).
  void flag_call(size_t s, size_t i, uint8_t flag) {
    flags_of(s)[i] |= flag;
    ++touched;
  }
  // Applies it on owned rank s, the selector's intervals there given (intervals_of).
  void apply_on_rank(const RankClause &rc, size_t s, const std::vector<Interval> &iv);
  static bool changes_each_rank_alone(const Clause &c) {
    return c.action != Action::Balance && c.action != Action::BalanceMessages;
  }

  rp::Scenario sc;
  int64_t touched = 0;  // calls and computation spans changed on these ranks

 private:
  // Per rank and group: the rank's total (computation or sent bytes), [slot * ngroups + group];
  // run-wide per group: [group] total, [ngroups + group] participating ranks.
  struct GroupTotals {
    std::vector<int64_t> mine, sums;
  };
  std::vector<int64_t> &gaps_of(size_t s);
  std::vector<uint8_t> &flags_of(size_t s);
  std::vector<int64_t> &bytes_of(size_t s);
  // With every owned rank's intervals of an Occurrences selector: their most, run-wide.
  int64_t groups_of(const Selector &sel, const std::vector<std::vector<Interval>> *occurrences = nullptr) const;
  void scale_parts(size_t s, const std::vector<Located::Part> &parts, const std::function<double(int32_t)> &f);
  GroupTotals group_totals(const std::vector<Located> &where, size_t ng, bool messages) const;
  void balance(const std::vector<Located> &where, size_t ng, bool messages);
  static constexpr int64_t kProgressGroups = 4096;
  size_t regroup_by_progress(const Selector &sel, std::vector<Located> &where) const;

  const Context *m_ctx;
  const ReplayModel &m_model;
  const size_t m_owned;
};

std::vector<int64_t> &ScenarioBuilder::gaps_of(size_t s) {
  if (sc.gaps.empty()) sc.gaps.resize(m_owned);
  if (sc.gaps[s].empty()) {
    sc.gaps[s].reserve(m_model.programs[s].events.size());
    for (const auto &e : m_model.programs[s].events) sc.gaps[s].push_back(e.gap);
  }
  return sc.gaps[s];
}

std::vector<uint8_t> &ScenarioBuilder::flags_of(size_t s) {
  if (sc.event_flags.empty()) sc.event_flags.resize(m_owned);
  if (sc.event_flags[s].empty()) sc.event_flags[s].assign(m_model.programs[s].events.size(), 0);
  return sc.event_flags[s];
}

std::vector<int64_t> &ScenarioBuilder::bytes_of(size_t s) {
  if (sc.send_bytes.empty()) sc.send_bytes.resize(m_owned);
  if (sc.send_bytes[s].empty()) {
    sc.send_bytes[s].reserve(m_model.programs[s].sends.size());
    for (const auto &m : m_model.programs[s].sends) sc.send_bytes[s].push_back(m.bytes);
  }
  return sc.send_bytes[s];
}

// Groups: steps of a region are balanced separately (collective with a context).
int64_t ScenarioBuilder::groups_of(const Selector &sel, const std::vector<std::vector<Interval>> *occurrences) const {
  if (sel.kind == Selector::Kind::Occurrences) {
    int64_t most = 0;
    for (size_t s = 0; s < m_owned; ++s)
      most =
          std::max<int64_t>(most, occurrences ? (*occurrences)[s].size() : intervals_of(sel, m_model.side[s]).size());
    if (m_ctx) MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT64_T, MPI_MAX, m_ctx->comm());
    return std::max<int64_t>(1, most);
  }
  if (sel.kind != Selector::Kind::Steps) return 1;
  int64_t mx = -1;
  for (const auto &side : m_model.side)
    for (const auto &x : side.executions)
      if (x.region == sel.region_id) mx = std::max<int64_t>(mx, x.step);
  if (m_ctx) MPI_Allreduce(MPI_IN_PLACE, &mx, 1, MPI_INT64_T, MPI_MAX, m_ctx->comm());
  return std::max<int64_t>(1, mx + 1);
}

void ScenarioBuilder::apply(const Clause &c) {
  if (changes_each_rank_alone(c)) {
    // One rank's selection held at a time (a scale's or zero's parts), not every owned rank's.
    const RankClause rc = rank_clause(c);
    for (size_t s = 0; s < m_owned; ++s)
      apply_on_rank(rc, s, selects_intervals(rc.sel) ? intervals_of(rc.sel, m_model.side[s]) : std::vector<Interval>{});
    return;
  }
  // Balancing a region balances its k-th executions across ranks together, as steps: one
  // run-wide mean per rank would move work between iterations that never overlap.
  Selector sel = c.sel;
  if (sel.kind == Selector::Kind::Region) sel.kind = Selector::Kind::Occurrences;
  const bool by_bytes = c.action == Action::BalanceMessages;  // reads the selected calls only
  // Each rank's intervals, one walk of its executions: they give the group count too.
  std::vector<std::vector<Interval>> iv(m_owned);
  if (selects_intervals(sel))
    for (size_t s = 0; s < m_owned; ++s) iv[s] = intervals_of(sel, m_model.side[s]);
  const int64_t ngroups = groups_of(sel, &iv);
  std::vector<Located> where(m_owned);
  for (size_t s = 0; s < m_owned; ++s) {
    where[s] =
        locate_in(sel, m_model.programs[s], m_model.side[s], static_cast<int32_t>(ngroups), !by_bytes, iv[s], by_bytes);
    iv[s] = {};
  }
  const size_t by_progress =
      sel.kind == Selector::Kind::All || sel.kind == Selector::Kind::Callsite ? regroup_by_progress(sel, where) : 0;
  balance(where, by_progress ? by_progress : static_cast<size_t>(ngroups), by_bytes);
}

// The k-th of G shares of each rank's selection (every event for all computation, the
// calls of a call site) balanced across ranks together: the work a balanced run moves to a
// rank lands in the same phase of the program, as a region's k-th executions do, where one
// run-wide factor per rank would stretch the light rank's computation wherever it happens
// to have some (a rank that only waits computes a little before each reply; scaled up,
// that little delays everyone). G: the fewest a participating rank has, at most
// kProgressGroups. Collective with a context. Returns G (0: nothing selected anywhere).
size_t ScenarioBuilder::regroup_by_progress(const Selector &sel, std::vector<Located> &where) const {
  // Per owned rank: each event's ordinal in the selection (-1 outside) and their count.
  std::vector<std::vector<int64_t>> ordinal(m_owned);
  std::vector<int64_t> count(m_owned, 0);
  int64_t fewest = INT64_MAX;
  for (size_t s = 0; s < m_owned; ++s) {
    const auto &p = m_model.programs[s];
    if (!in_ranks(sel.ranks, p.rank)) continue;
    auto &o = ordinal[s];
    o.assign(p.events.size(), -1);
    for (size_t i = 0; i < p.events.size(); ++i)
      if (sel.kind == Selector::Kind::All || m_model.side[s].labels.site(i) == static_cast<uint32_t>(sel.callsite))
        o[i] = count[s]++;
    if (count[s] > 0) fewest = std::min(fewest, count[s]);
  }
  if (m_ctx) MPI_Allreduce(MPI_IN_PLACE, &fewest, 1, MPI_INT64_T, MPI_MIN, m_ctx->comm());
  if (fewest == INT64_MAX) return 0;
  const int64_t groups = std::min<int64_t>(fewest, kProgressGroups);
  for (size_t s = 0; s < m_owned; ++s) {
    Located &L = where[s];
    L.participates.assign(static_cast<size_t>(groups), count[s] > 0 ? 1 : 0);
    if (count[s] == 0) continue;
    const auto share = [&](int64_t event) {
      const int64_t k = ordinal[s][static_cast<size_t>(event)];
      return static_cast<int32_t>(std::min<int64_t>(groups - 1, k * groups / count[s]));
    };
    for (auto &part : L.parts) part.group = share(part.event);
    for (size_t i = 0; i < L.call.size(); ++i)
      if (L.call[i] >= 0) L.call[i] = share(static_cast<int64_t>(i));
  }
  return static_cast<size_t>(groups);
}

ScenarioBuilder::RankClause ScenarioBuilder::rank_clause(const Clause &c) const {
  return {&c, c.sel, static_cast<int32_t>(groups_of(c.sel)),
          c.action == Action::ZeroWait || (c.action == Action::Zero && !selects_intervals(c.sel))};
}

void ScenarioBuilder::apply_on_rank(const RankClause &rc, size_t s, const std::vector<Interval> &iv) {
  const Clause &c = *rc.clause;
  if (rc.flags) {
    // Flagged as the scan finds them: no per-event selection held (4 B per event and clause).
    if (!in_ranks(rc.sel.ranks, m_model.programs[s].rank)) return;
    visit_selection(
        rc.sel, m_model.programs[s], m_model.side[s], false, iv,
        [&, flag = flag_of(c)](size_t i, int32_t) { flag_call(s, i, flag); }, [](int64_t, int32_t, int64_t) {});
    return;
  }
  const Located L = locate_in(rc.sel, m_model.programs[s], m_model.side[s], rc.ngroups, true, iv, false);
  const double f = c.action == Action::Zero ? 0.0 : c.factor;
  scale_parts(s, L.parts, [f](int32_t) { return f; });
}

// Scales the selected parts of the gaps: each part p of gap i becomes p * f(group).
// Parts were measured on the measured gap; an earlier clause may have scaled the gap,
// and the parts shrink with it.
void ScenarioBuilder::scale_parts(size_t s, const std::vector<Located::Part> &parts,
                                  const std::function<double(int32_t)> &f) {
  if (parts.empty()) return;
  auto &g = gaps_of(s);
  size_t k = 0;
  while (k < parts.size()) {
    const size_t i = static_cast<size_t>(parts[k].event);
    const int64_t measured = m_model.programs[s].events[i].gap;
    const double share = measured > 0 ? static_cast<double>(g[i]) / static_cast<double>(measured) : 0.0;
    double change = 0;
    for (; k < parts.size() && parts[k].event == static_cast<int64_t>(i); ++k)
      change += static_cast<double>(parts[k].ns) * share * (1.0 - f(parts[k].group));
    g[i] = std::max<int64_t>(0, g[i] - std::llround(change));
    ++touched;
  }
}

ScenarioBuilder::GroupTotals ScenarioBuilder::group_totals(const std::vector<Located> &where, size_t ng,
                                                           bool messages) const {
  GroupTotals t{std::vector<int64_t>(m_owned * ng, 0), std::vector<int64_t>(2 * ng, 0)};
  for (size_t s = 0; s < m_owned; ++s) {
    const auto &L = where[s];
    if (messages) {
      const auto &side = m_model.side[s];
      for (size_t k = 0; k < m_model.programs[s].sends.size(); ++k) {
        const auto i = static_cast<size_t>(side.send_event[k]);
        if (L.call[i] >= 0) t.mine[s * ng + static_cast<size_t>(L.call[i])] += m_model.programs[s].sends[k].bytes;
      }
    } else {
      for (const auto &part : L.parts) t.mine[s * ng + static_cast<size_t>(part.group)] += part.ns;
    }
    for (size_t g = 0; g < ng; ++g)
      if (L.participates[g]) {
        t.sums[g] += t.mine[s * ng + g];
        ++t.sums[ng + g];
      }
  }
  if (m_ctx) m_ctx->allreduce_sum(t.sums);
  return t;
}

// Balance: every participating rank gets the group's mean (computation or bytes).
void ScenarioBuilder::balance(const std::vector<Located> &where, size_t ng, bool messages) {
  const GroupTotals t = group_totals(where, ng, messages);
  for (size_t s = 0; s < m_owned; ++s) {
    const auto &L = where[s];
    auto factor = [&](int32_t g) {
      const int64_t mine = t.mine[s * ng + static_cast<size_t>(g)];
      const int64_t count = t.sums[ng + static_cast<size_t>(g)];
      if (mine <= 0 || count <= 0) return 1.0;
      return static_cast<double>(t.sums[static_cast<size_t>(g)]) / static_cast<double>(count) /
             static_cast<double>(mine);
    };
    if (messages) {
      const auto &side = m_model.side[s];
      for (size_t k = 0; k < m_model.programs[s].sends.size(); ++k) {
        const auto i = static_cast<size_t>(side.send_event[k]);
        if (L.call[i] < 0) continue;
        auto &b = bytes_of(s);
        b[k] = std::llround(static_cast<double>(b[k]) * factor(L.call[i]));
        ++touched;
      }
    } else {
      scale_parts(s, L.parts, factor);
    }
  }
}

}  // namespace

rp::Scenario build_scenario(const Context *ctx, const ReplayModel &model, const kernels::LogGPS &net, const Question &q,
                            int64_t &selected) {
  std::vector<int64_t> counts;
  auto scenarios = build_scenarios(ctx, model, net, {&q}, counts);
  selected = counts[0];
  return std::move(scenarios[0]);
}

std::vector<rp::Scenario> build_scenarios(const Context *ctx, const ReplayModel &model, const kernels::LogGPS &net,
                                          const std::vector<const Question *> &questions,
                                          std::vector<int64_t> &selected) {
  std::vector<ScenarioBuilder> built;
  built.reserve(questions.size());
  // The clauses of questions that change each rank on its own go rank by rank, all
  // together: one walk of a rank's region executions gives every selector its intervals.
  struct Pending {
    size_t question;
    ScenarioBuilder::RankClause rc;
    size_t selector;  // in `selectors`, or SIZE_MAX: a call site or an event
  };
  std::vector<Pending> pending;
  std::vector<Selector> selectors;  // the distinct ones the pending clauses select by
  for (size_t k = 0; k < questions.size(); ++k) {
    const Question &q = *questions[k];
    built.emplace_back(ctx, model);
    built[k].sc.net = net;
    built[k].sc.ideal_network = q.ideal_network;
    if (!std::all_of(q.clauses.begin(), q.clauses.end(), ScenarioBuilder::changes_each_rank_alone)) {
      for (const Clause &c : q.clauses) built[k].apply(c);  // balances: every rank's totals (collective)
      continue;
    }
    for (const Clause &c : q.clauses) {
      Pending p{k, built[k].rank_clause(c), SIZE_MAX};
      if (selects_intervals(c.sel)) {
        const auto same = std::find_if(selectors.begin(), selectors.end(),
                                       [&](const Selector &w) { return same_intervals(w, c.sel); });
        p.selector = static_cast<size_t>(same - selectors.begin());
        if (same == selectors.end()) selectors.push_back(c.sel);
      }
      pending.push_back(p);
    }
  }
  const std::vector<Interval> none;
  for (size_t s = 0; s < model.programs.size() && !pending.empty(); ++s) {
    const auto iv = intervals_of(selectors, model.side[s]);
    // The clauses that flag calls by intervals share one scan of the rank's enters: per
    // cursor, the scenario it flags and its flag.
    std::vector<IntervalCursor> cursors;
    std::vector<std::pair<ScenarioBuilder *, uint8_t>> flagging;
    for (const Pending &p : pending)
      if (p.rc.flags && p.selector != SIZE_MAX) {
        if (!in_ranks(p.rc.sel.ranks, model.programs[s].rank)) continue;
        cursors.push_back({&iv[p.selector]});
        flagging.emplace_back(&built[p.question], ScenarioBuilder::flag_of(*p.rc.clause));
      } else {
        built[p.question].apply_on_rank(p.rc, s, p.selector == SIZE_MAX ? none : iv[p.selector]);
      }
    scan_intervals(
        model.programs[s], model.side[s], cursors, false,
        [&](size_t c, size_t i, int32_t) { flagging[c].first->flag_call(s, i, flagging[c].second); },
        [](size_t, int64_t, int32_t, int64_t) {});
  }
  std::vector<int64_t> t;
  for (const auto &b : built) t.push_back(b.touched);
  if (ctx) ctx->allreduce_sum(t);
  selected = t;
  std::vector<rp::Scenario> out;
  for (auto &b : built) out.push_back(std::move(b.sc));
  return out;
}

}  // namespace perfsift::pipeline
