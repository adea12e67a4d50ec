// What-if questions: parsing and scenarios. A scenario is built per owned rank in one
// pass over its events (O(events + region executions)); balancing needs one reduction
// of per-group totals across processes.
#include "pipeline/replay/questions.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <sstream>

#include "config/schema.h"
#include "io/region_path.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {

// A question's words: whitespace separates them; "..." quotes any bytes (with \" and \\ inside),
// also within a word (outer/"a b"). A word with a quoted part is never a keyword. As a region
// path, a word's unquoted '/' separate names and its quoted ones belong to a name
// (region "io/read" is the top-level region named io/read).
struct Words {
  std::vector<std::string> text;
  std::vector<bool> quoted;
  std::vector<std::string> path;  // the word as a stored region path (io/region_path.h)
};

Words words_of(const std::string &q) {
  Words w;
  size_t i = 0;
  const auto space = [&](size_t k) { return std::isspace(static_cast<unsigned char>(q[k])) != 0; };
  while (i < q.size()) {
    while (i < q.size() && space(i)) ++i;
    if (i == q.size()) break;
    std::string word, name, path;
    bool quoted = false;
    const auto end_name = [&] {
      path = io::child_region_path(path, path.empty(), name);
      name.clear();
    };
    while (i < q.size() && !space(i)) {
      if (q[i] != '"') {
        if (q[i] == '/')
          end_name();
        else
          name += q[i];
        word += q[i++];
        continue;
      }
      quoted = true;
      for (++i;; ++i) {
        if (i >= q.size())
          throw QuestionError("what-if question \"" + q + "\": a quote is not closed (write region \"a b\")");
        if (q[i] == '"') break;
        if (q[i] == '\\' && i + 1 < q.size() && (q[i + 1] == '"' || q[i + 1] == '\\')) ++i;
        word += q[i];
        name += q[i];
      }
      ++i;  // the closing quote
    }
    end_name();
    w.text.push_back(std::move(word));
    w.quoted.push_back(quoted);
    w.path.push_back(std::move(path));
  }
  return w;
}

// "0-3,7" as ranges, never expanded rank by rank ("ranks 0-2147483646" is one range);
// "all": every rank (empty).
kernels::RankRanges parse_rank_ranges(const std::string &q, const std::string &w) {
  kernels::RankRanges out;
  if (w == "all") return out;
  size_t pos = 0;
  for (;;) {
    const size_t comma = std::min(w.find(',', pos), w.size());
    const std::string part = w.substr(pos, comma - pos);
    const size_t dash = part.find('-');
    const auto number = [&](const std::string &s) {
      if (s.empty() || s.size() > 10 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return int64_t{-1};
      const int64_t v = std::stoll(s);
      return v < INT32_MAX ? v : int64_t{-1};  // ranks are below nranks <= INT32_MAX
    };
    const int64_t a = number(part.substr(0, dash)), b = dash == std::string::npos ? a : number(part.substr(dash + 1));
    if (a < 0 || b < a)
      throw QuestionError("what-if question \"" + q + "\": '" + w + "' is not a rank list (bad part '" + part +
                          "'; write e.g. 0-3,7)");
    out.emplace_back(static_cast<int32_t>(a), static_cast<int32_t>(b));
    if (comma == w.size()) break;
    pos = comma + 1;
  }
  return kernels::merge_ranges(std::move(out));
}

int64_t parse_int(const std::string &q, const std::string &w, const char *what) {
  try {
    size_t used = 0;
    const long long v = std::stoll(w, &used);
    if (used == w.size() && v >= 0) return v;
  } catch (const std::exception &) {}
  throw QuestionError("what-if question \"" + q + "\": '" + w + "' is not a valid " + what + " (a number >= 0)");
}

const std::vector<std::string> kActions = {"baseline", "ideal-network",    "zero-wait", "zero",
                                           "balance",  "balance-messages", "scale"};
const std::vector<std::string> kTerms = {"all", "region", "step", "steps", "callsite", "event", "ranks", "and"};

// Reads one question word by word; every error names the question, the word and the fix.
class QuestionParser {
 public:
  QuestionParser(const std::string &text, const std::vector<std::string> &region_paths)
      : m_text(text), m_paths(region_paths), m_split(words_of(text)), m_words(m_split.text) {}
  Question parse();

 private:
  const std::string &need(const char *what);
  int32_t region(size_t k) const;
  void region_term(const char *what, Selector &sel);
  Clause clause(const std::string &action);
  Action action(const std::string &word, double &factor);
  void selector_term(const std::string &term, Selector &sel);

  const std::string &m_text;
  const std::vector<std::string> &m_paths;
  // Whether word k is the keyword `k` (unquoted).
  bool keyword(size_t k, const char *word) const {
    return k < m_words.size() && !m_split.quoted[k] && m_words[k] == word;
  }

  const Words m_split;
  const std::vector<std::string> &m_words;
  size_t m_next = 0;  // the next word
};

Question QuestionParser::parse() {
  Question q;
  q.text = m_text;
  if (m_words.empty())
    throw QuestionError("what-if question is empty: write e.g. \"balance steps of solve\" or \"ideal-network\"");
  while (m_next < m_words.size()) {
    const std::string &a = need("an action");
    if (a == "baseline") {
      q.baseline = true;
    } else if (a == "ideal-network") {
      q.ideal_network = true;
    } else {
      q.clauses.push_back(clause(a));
    }
    if (m_next < m_words.size()) {
      if (!keyword(m_next, "and"))
        throw QuestionError("what-if question \"" + m_text + "\": expected 'and' before '" + m_words[m_next] + "'");
      ++m_next;
      if (m_next == m_words.size()) throw QuestionError("what-if question \"" + m_text + "\" ends with 'and'");
    }
  }
  return q;
}

const std::string &QuestionParser::need(const char *what) {
  if (m_next >= m_words.size())
    throw QuestionError("what-if question \"" + m_text + "\" ends early: " + what + " expected");
  return m_words[m_next++];
}

// The region word k names: a whole path, or a name that only one region has (region work for
// iteration/work). A quoted path ("outer/a b") that names no region is read as a path too.
int32_t QuestionParser::region(size_t k) const {
  const std::string &word = m_words[k], &path = m_split.path[k];
  std::vector<std::string> tried = {path};
  if (m_split.quoted[k] && word.find('/') != std::string::npos) {
    std::string as_path;
    for (size_t b = 0, e = 0; e != std::string::npos; b = e + 1) {
      e = word.find('/', b);
      as_path = io::child_region_path(as_path, b == 0, word.substr(b, e == std::string::npos ? e : e - b));
    }
    tried.push_back(as_path);
  }
  for (const auto &p : tried)
    for (size_t r = 0; r < m_paths.size(); ++r)
      if (m_paths[r] == p) return static_cast<int32_t>(r);
  std::vector<int32_t> by_leaf;
  if (io::region_path_parent_end(path) == std::string::npos) {
    const std::string name = io::region_name_of_component(path);
    for (size_t r = 1; r < m_paths.size(); ++r)
      if (io::region_leaf_name(m_paths[r]) == name) by_leaf.push_back(static_cast<int32_t>(r));
  }
  if (by_leaf.size() == 1) return by_leaf[0];
  if (by_leaf.size() > 1) {
    std::string list;
    for (int32_t r : by_leaf) list += (list.empty() ? "" : ", ") + quote_region(m_paths[static_cast<size_t>(r)]);
    throw QuestionError("what-if question \"" + m_text + "\": '" + word + "' names " + std::to_string(by_leaf.size()) +
                        " regions (" + list + "); write the whole path");
  }
  std::vector<std::string> names = m_paths;  // suggestions from paths and leaf names alike
  for (const auto &p : m_paths) names.push_back(io::region_leaf_name(p));
  throw QuestionError("what-if question \"" + m_text + "\": no region '" + word + "' in the store (did you mean '" +
                      config::nearest(word, names) + "'?)");
}

// The region a selector names, at the next word.
void QuestionParser::region_term(const char *what, Selector &sel) {
  need(what);
  sel.region_id = region(m_next - 1);
  sel.region = m_paths[static_cast<size_t>(sel.region_id)];
}

// An action and its selector terms, up to the next "and".
Clause QuestionParser::clause(const std::string &a) {
  Clause c;
  c.action = action(a, c.factor);
  bool any = false;
  while (m_next < m_words.size() && !keyword(m_next, "and")) {
    const std::string &t = m_words[m_next++];
    any = true;
    selector_term(t, c.sel);
  }
  if (!any)
    throw QuestionError("what-if question \"" + m_text + "\": '" + a +
                        "' needs a selector (e.g. all, region P, steps of R)");
  const bool event_sel = c.sel.kind == Selector::Kind::Event;
  if (event_sel && (c.action == Action::Balance || c.action == Action::BalanceMessages))
    throw QuestionError("what-if question \"" + m_text +
                        "\": balancing needs a region, step, call-site or rank selector, not one event");
  return c;
}

// The action a word names; "scale" reads its factor.
Action QuestionParser::action(const std::string &a, double &factor) {
  if (a == "zero-wait") return Action::ZeroWait;
  if (a == "zero") return Action::Zero;
  if (a == "balance") return Action::Balance;
  if (a == "balance-messages") return Action::BalanceMessages;
  if (a != "scale")
    throw QuestionError("what-if question \"" + m_text + "\": unknown action '" + a + "' (did you mean '" +
                        config::nearest(a, kActions) +
                        "'? actions: zero-wait, zero, balance, balance-messages, scale F, ideal-network)");
  const std::string &f = need("a factor");
  try {
    size_t used = 0;
    factor = std::stod(f, &used);
    if (used != f.size() || !(factor >= 0) || !std::isfinite(factor)) throw std::invalid_argument(f);
  } catch (const std::exception &) {
    throw QuestionError("what-if question \"" + m_text + "\": scale needs a factor >= 0, not '" + f + "'");
  }
  return Action::Scale;
}

// One selector term and the words it takes.
void QuestionParser::selector_term(const std::string &t, Selector &sel) {
  const std::string &text = m_text;
  if (t == "all") {
    sel.kind = Selector::Kind::All;
  } else if (t == "region") {
    sel.kind = Selector::Kind::Region;
    region_term("a region path", sel);
  } else if (t == "step") {
    sel.kind = Selector::Kind::Step;
    sel.step = parse_int(text, need("a step number"), "step number");
    if (keyword(m_next, "of")) ++m_next;
    region_term("the step region", sel);
  } else if (t == "steps") {
    sel.kind = Selector::Kind::Steps;
    if (keyword(m_next, "of")) ++m_next;
    region_term("the step region", sel);
  } else if (t == "callsite") {
    sel.kind = Selector::Kind::Callsite;
    sel.callsite = parse_int(text, need("a call-site id"), "call-site id");
  } else if (t == "event") {
    sel.kind = Selector::Kind::Event;
    const std::string &e = need("RANK:INDEX");
    const auto colon = e.find(':');
    if (colon == std::string::npos)
      throw QuestionError("what-if question \"" + text + "\": event needs RANK:INDEX, not '" + e + "'");
    const int64_t rank = parse_int(text, e.substr(0, colon), "rank");
    if (rank >= INT32_MAX)  // ranks are below nranks <= INT32_MAX
      throw QuestionError("what-if question \"" + text + "\": rank " + std::to_string(rank) + " in '" + e +
                          "' is beyond any run");
    sel.rank = static_cast<int32_t>(rank);
    sel.index = parse_int(text, e.substr(colon + 1), "event index");
  } else if (t == "ranks") {
    sel.ranks = parse_rank_ranges(text, need("a rank list such as 0-3,7"));
  } else {
    throw QuestionError("what-if question \"" + text + "\": unknown selector '" + t + "' (did you mean '" +
                        config::nearest(t, kTerms) +
                        "'? selectors: all, region P, step N of R, steps of R, callsite ID, event R:I, ranks A-B)");
  }
}

}  // namespace

Question parse_question(const std::string &text, const std::vector<std::string> &region_paths) {
  return QuestionParser(text, region_paths).parse();
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
  balance(where, static_cast<size_t>(ngroups), by_bytes);
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

rp::Scenario build_scenario(const Context *ctx, const ReplayModel &model, const Question &q, int64_t &selected) {
  std::vector<int64_t> counts;
  auto scenarios = build_scenarios(ctx, model, {&q}, counts);
  selected = counts[0];
  return std::move(scenarios[0]);
}

std::vector<rp::Scenario> build_scenarios(const Context *ctx, const ReplayModel &model,
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
    built[k].sc.net = model.params;
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

std::string quote_region(const std::string &path) {
  std::string q;
  for (const auto &name : io::split_region_path(path)) {
    const bool plain = !name.empty() && std::none_of(name.begin(), name.end(), [](char c) {
      return c == '"' || c == '\\' || c == '/' || std::isspace(static_cast<unsigned char>(c));
    });
    if (!q.empty()) q += '/';
    if (plain) {
      q += name;
      continue;
    }
    q += '"';
    for (char c : name) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    q += '"';
  }
  return q == "and" || q == "of" ? "\"" + q + "\"" : q;
}

}  // namespace perfsift::pipeline
