// What-if questions: parsing and scenarios. A scenario is built per owned rank in one
// pass over its events (O(events + region executions)); balancing needs one reduction
// of per-group totals across processes.
#include "pipeline/replay/questions.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "config/schema.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {

std::vector<std::string> words_of(const std::string &text) {
  std::istringstream is(text);
  std::vector<std::string> w;
  for (std::string x; is >> x;) w.push_back(x);
  return w;
}

int64_t parse_int(const std::string &q, const std::string &w, const char *what) {
  try {
    size_t used = 0;
    const long long v = std::stoll(w, &used);
    if (used == w.size() && v >= 0) return v;
  } catch (const std::exception &) {
  }
  throw QuestionError("what-if question \"" + q + "\": '" + w + "' is not a valid " + what + " (a number >= 0)");
}

}  // namespace

Question parse_question(const std::string &text, const std::vector<std::string> &region_paths) {
  Question q;
  q.text = text;
  const auto w = words_of(text);
  if (w.empty()) throw QuestionError("what-if question is empty: write e.g. \"balance steps of solve\" or \"ideal-network\"");
  static const std::vector<std::string> actions = {"baseline", "ideal-network", "zero-wait", "zero", "balance", "balance-messages", "scale"};
  static const std::vector<std::string> terms = {"all", "region", "step", "steps", "callsite", "event", "ranks", "and"};
  size_t i = 0;
  auto need = [&](const char *what) -> const std::string & {
    if (i >= w.size()) throw QuestionError("what-if question \"" + text + "\" ends early: " + what + " expected");
    return w[i++];
  };
  auto region = [&](const std::string &path) -> int32_t {
    for (size_t k = 0; k < region_paths.size(); ++k)
      if (region_paths[k] == path) return static_cast<int32_t>(k);
    throw QuestionError("what-if question \"" + text + "\": no region '" + path + "' in the store (did you mean '" +
                        config::nearest(path, region_paths) + "'?)");
  };
  while (i < w.size()) {
    const std::string &a = need("an action");
    if (a == "baseline") {
      q.baseline = true;
    } else if (a == "ideal-network") {
      q.ideal_network = true;
    } else {
      Clause c;
      if (a == "zero-wait") c.action = Action::ZeroWait;
      else if (a == "zero") c.action = Action::Zero;
      else if (a == "balance") c.action = Action::Balance;
      else if (a == "balance-messages") c.action = Action::BalanceMessages;
      else if (a == "scale") {
        c.action = Action::Scale;
        const std::string &f = need("a factor");
        try {
          size_t used = 0;
          c.factor = std::stod(f, &used);
          if (used != f.size() || !(c.factor >= 0) || !std::isfinite(c.factor)) throw std::invalid_argument(f);
        } catch (const std::exception &) {
          throw QuestionError("what-if question \"" + text + "\": scale needs a factor >= 0, not '" + f + "'");
        }
      } else {
        throw QuestionError("what-if question \"" + text + "\": unknown action '" + a + "' (did you mean '" +
                            config::nearest(a, actions) + "'? actions: zero-wait, zero, balance, balance-messages, scale F, ideal-network)");
      }
      bool any = false;
      while (i < w.size() && w[i] != "and") {
        const std::string &t = w[i++];
        any = true;
        if (t == "all") {
          c.sel.kind = Selector::Kind::All;
        } else if (t == "region") {
          c.sel.kind = Selector::Kind::Region;
          c.sel.region = need("a region path");
          c.sel.region_id = region(c.sel.region);
        } else if (t == "step") {
          c.sel.kind = Selector::Kind::Step;
          c.sel.step = parse_int(text, need("a step number"), "step number");
          if (i < w.size() && w[i] == "of") ++i;
          c.sel.region = need("the step region");
          c.sel.region_id = region(c.sel.region);
        } else if (t == "steps") {
          c.sel.kind = Selector::Kind::Steps;
          if (i < w.size() && w[i] == "of") ++i;
          c.sel.region = need("the step region");
          c.sel.region_id = region(c.sel.region);
        } else if (t == "callsite") {
          c.sel.kind = Selector::Kind::Callsite;
          c.sel.callsite = parse_int(text, need("a call-site id"), "call-site id");
        } else if (t == "event") {
          c.sel.kind = Selector::Kind::Event;
          const std::string &e = need("RANK:INDEX");
          const auto colon = e.find(':');
          if (colon == std::string::npos) throw QuestionError("what-if question \"" + text + "\": event needs RANK:INDEX, not '" + e + "'");
          c.sel.rank = static_cast<int32_t>(parse_int(text, e.substr(0, colon), "rank"));
          c.sel.index = parse_int(text, e.substr(colon + 1), "event index");
        } else if (t == "ranks") {
          const std::string &r = need("a rank list such as 0-3,7");
          try {
            c.sel.ranks = kernels::to_ranges(kernels::parse_ranks(r, INT32_MAX));
          } catch (const std::exception &) {
            throw QuestionError("what-if question \"" + text + "\": '" + r + "' is not a rank list (write e.g. 0-3,7)");
          }
        } else {
          throw QuestionError("what-if question \"" + text + "\": unknown selector '" + t + "' (did you mean '" +
                              config::nearest(t, terms) + "'? selectors: all, region P, step N of R, steps of R, callsite ID, event R:I, ranks A-B)");
        }
      }
      if (!any) throw QuestionError("what-if question \"" + text + "\": '" + a + "' needs a selector (e.g. all, region P, steps of R)");
      const bool event_sel = c.sel.kind == Selector::Kind::Event;
      if (event_sel && (c.action == Action::Balance || c.action == Action::BalanceMessages))
        throw QuestionError("what-if question \"" + text + "\": balancing needs a region, step, call-site or rank selector, not one event");
      q.clauses.push_back(c);
    }
    if (i < w.size()) {
      if (w[i] != "and") throw QuestionError("what-if question \"" + text + "\": expected 'and' before '" + w[i] + "'");
      ++i;
      if (i == w.size()) throw QuestionError("what-if question \"" + text + "\" ends with 'and'");
    }
  }
  return q;
}

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

// The selector's time intervals on one rank, sorted, merged per group.
std::vector<Interval> intervals_of(const Selector &sel, const ReplayModel::Side &side) {
  std::vector<Interval> v;
  switch (sel.kind) {
    case Selector::Kind::All: v.push_back({INT64_MIN / 4, INT64_MAX / 4, 0}); break;
    case Selector::Kind::Region:
      for (const auto &x : side.executions)
        if (x.region == sel.region_id) v.push_back({x.t_begin, x.t_end, 0});
      break;
    case Selector::Kind::Step:
      for (const auto &x : side.executions)
        if (x.region == sel.region_id && x.step == sel.step) v.push_back({x.t_begin, x.t_end, 0});
      break;
    case Selector::Kind::Steps:
      for (const auto &x : side.executions)
        if (x.region == sel.region_id && x.step >= 0) v.push_back({x.t_begin, x.t_end, x.step});
      break;
    default: break;
  }
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
  return merged;
}

}  // namespace

Located locate(const Selector &sel, const rp::RankProgram &p, const ReplayModel::Side &side, int32_t ngroups_hint) {
  Located L;
  const size_t n = p.events.size();
  L.call.assign(n, -1);
  L.participates.assign(static_cast<size_t>(std::max(1, ngroups_hint)), 0);
  if (!in_ranks(sel.ranks, p.rank)) return L;
  if (sel.kind == Selector::Kind::Callsite || sel.kind == Selector::Kind::Event) {
    for (size_t i = 0; i < n; ++i) {
      const bool hit = sel.kind == Selector::Kind::Callsite ? side.site[i] == static_cast<uint32_t>(sel.callsite)
                                                            : (p.rank == sel.rank && static_cast<int64_t>(i) == sel.index);
      if (!hit) continue;
      L.call[i] = 0;
      if (p.events[i].gap > 0) L.parts.push_back({static_cast<int64_t>(i), 0, p.events[i].gap});
      L.participates[0] = 1;
    }
    return L;
  }
  const auto iv = intervals_of(sel, side);
  for (const auto &x : iv)
    if (x.group >= 0 && static_cast<size_t>(x.group) < L.participates.size()) L.participates[static_cast<size_t>(x.group)] = 1;
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const int64_t b = side.enter[i], a = b - std::max<int64_t>(0, p.events[i].gap);
    while (k < iv.size() && iv[k].end <= a) ++k;
    for (size_t j = k; j < iv.size() && iv[j].begin < b; ++j) {
      const int64_t o = std::min(b, iv[j].end) - std::max(a, iv[j].begin);
      if (o <= 0) continue;
      if (!L.parts.empty() && L.parts.back().event == static_cast<int64_t>(i) && L.parts.back().group == iv[j].group) L.parts.back().ns += o;
      else L.parts.push_back({static_cast<int64_t>(i), iv[j].group, o});
    }
    // The call itself: selected when it starts inside an interval.
    for (size_t j = k; j < iv.size() && iv[j].begin <= b; ++j)
      if (b < iv[j].end) {
        L.call[i] = iv[j].group;
        break;
      }
  }
  return L;
}

rp::Scenario build_scenario(const Context *ctx, const ReplayModel &model, const Question &q, int64_t &selected) {
  rp::Scenario sc;
  sc.net = model.params;
  sc.ideal_network = q.ideal_network;
  const size_t owned = model.programs.size();
  int64_t touched = 0;
  auto gaps_of = [&](size_t s) -> std::vector<int64_t> & {
    if (sc.gaps.empty()) sc.gaps.resize(owned);
    if (sc.gaps[s].empty())
      for (const auto &e : model.programs[s].events) sc.gaps[s].push_back(e.gap);
    return sc.gaps[s];
  };
  auto flags_of = [&](size_t s) -> std::vector<uint8_t> & {
    if (sc.event_flags.empty()) sc.event_flags.resize(owned);
    if (sc.event_flags[s].empty()) sc.event_flags[s].assign(model.programs[s].events.size(), 0);
    return sc.event_flags[s];
  };
  auto bytes_of = [&](size_t s) -> std::vector<int64_t> & {
    if (sc.send_bytes.empty()) sc.send_bytes.resize(owned);
    if (sc.send_bytes[s].empty())
      for (const auto &m : model.programs[s].sends) sc.send_bytes[s].push_back(m.bytes);
    return sc.send_bytes[s];
  };
  // Scales the selected parts of the gaps: each part p of gap i becomes p * f(group).
  // Parts were measured on the measured gap; an earlier clause may have scaled the gap,
  // and the parts shrink with it.
  auto scale_parts = [&](size_t s, const std::vector<Located::Part> &parts, const std::function<double(int32_t)> &f) {
    if (parts.empty()) return;
    auto &g = gaps_of(s);
    size_t k = 0;
    while (k < parts.size()) {
      const size_t i = static_cast<size_t>(parts[k].event);
      const int64_t measured = model.programs[s].events[i].gap;
      const double share = measured > 0 ? static_cast<double>(g[i]) / static_cast<double>(measured) : 0.0;
      double change = 0;
      for (; k < parts.size() && parts[k].event == static_cast<int64_t>(i); ++k)
        change += static_cast<double>(parts[k].ns) * share * (1.0 - f(parts[k].group));
      g[i] = std::max<int64_t>(0, g[i] - std::llround(change));
      ++touched;
    }
  };

  for (const Clause &c : q.clauses) {
    // Groups: steps of a region are balanced separately.
    int64_t ngroups = 1;
    if (c.sel.kind == Selector::Kind::Steps) {
      int64_t mx = -1;
      for (const auto &side : model.side)
        for (const auto &x : side.executions)
          if (x.region == c.sel.region_id) mx = std::max<int64_t>(mx, x.step);
      if (ctx) MPI_Allreduce(MPI_IN_PLACE, &mx, 1, MPI_INT64_T, MPI_MAX, ctx->comm());
      ngroups = std::max<int64_t>(1, mx + 1);
    }
    std::vector<Located> where(owned);
    for (size_t s = 0; s < owned; ++s) where[s] = locate(c.sel, model.programs[s], model.side[s], static_cast<int32_t>(ngroups));
    const bool event_level = c.sel.kind == Selector::Kind::Callsite || c.sel.kind == Selector::Kind::Event;

    if (c.action == Action::ZeroWait || (c.action == Action::Zero && event_level)) {
      for (size_t s = 0; s < owned; ++s)
        for (size_t i = 0; i < where[s].call.size(); ++i)
          if (where[s].call[i] >= 0) {
            flags_of(s)[i] |= c.action == Action::ZeroWait ? rp::kZeroWait : rp::kZeroEvent;
            ++touched;
          }
    } else if (c.action == Action::Zero || c.action == Action::Scale) {
      const double f = c.action == Action::Zero ? 0.0 : c.factor;
      for (size_t s = 0; s < owned; ++s) scale_parts(s, where[s].parts, [f](int32_t) { return f; });
    } else {
      // Balance: every participating rank gets the group's mean (computation or bytes).
      const bool messages = c.action == Action::BalanceMessages;
      const size_t ng = static_cast<size_t>(ngroups);
      std::vector<int64_t> totals(owned * ng, 0);
      std::vector<int64_t> sums(2 * ng, 0);  // [group] total, [ng + group] participating ranks
      for (size_t s = 0; s < owned; ++s) {
        const auto &L = where[s];
        if (messages) {
          const auto &side = model.side[s];
          for (size_t k = 0; k < model.programs[s].sends.size(); ++k) {
            const auto i = static_cast<size_t>(side.send_event[k]);
            if (L.call[i] >= 0) totals[s * ng + static_cast<size_t>(L.call[i])] += model.programs[s].sends[k].bytes;
          }
        } else {
          for (const auto &part : L.parts) totals[s * ng + static_cast<size_t>(part.group)] += part.ns;
        }
        for (size_t g = 0; g < ng; ++g)
          if (L.participates[g]) {
            sums[g] += totals[s * ng + g];
            ++sums[ng + g];
          }
      }
      if (ctx) ctx->allreduce_sum(sums);
      for (size_t s = 0; s < owned; ++s) {
        const auto &L = where[s];
        auto factor = [&](int32_t g) {
          const int64_t mine = totals[s * ng + static_cast<size_t>(g)];
          const int64_t count = sums[ng + static_cast<size_t>(g)];
          if (mine <= 0 || count <= 0) return 1.0;
          return static_cast<double>(sums[static_cast<size_t>(g)]) / static_cast<double>(count) / static_cast<double>(mine);
        };
        if (messages) {
          const auto &side = model.side[s];
          for (size_t k = 0; k < model.programs[s].sends.size(); ++k) {
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
  }
  std::vector<int64_t> t = {touched};
  if (ctx) ctx->allreduce_sum(t);
  selected = t[0];
  return sc;
}

}  // namespace perfsift::pipeline
