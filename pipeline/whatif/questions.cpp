// What-if questions: their grammar (pipeline/whatif/questions.h), parsed against the
// store's region paths, and region paths quoted as a question names them.
#include "pipeline/whatif/questions.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "config/schema.h"
#include "io/region_path.h"

namespace perfsift::pipeline {

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
