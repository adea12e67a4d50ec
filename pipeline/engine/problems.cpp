// The run's problems into the results store (problems.h).
#include "pipeline/engine/problems.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace perfsift::pipeline {

namespace {

const char *place_type_word(Place::Type type) {
  switch (type) {
    case Place::Type::Program:
      return "program";
    case Place::Type::Region:
      return "region";
    case Place::Type::CallSite:
      return "callsite";
    case Place::Type::Transfer:
      return "transfer";
    case Place::Type::ModelCause:
      return "model-cause";
  }
  return "";
}

// The columns naming a call site: function, file, line, offset.
struct SiteColumns {
  io::StringColumn &function, &file;
  io::IntColumn &line, &offset;
  SiteColumns(io::Table &t, const std::string &prefix, const std::string &whose)
      : function(t.strings(prefix + "function", whose + ": function (or module when unknown); empty: none")),
        file(t.strings(prefix + "file", whose + ": source file; empty: unknown")),
        line(t.ints(prefix + "line", "", whose + ": source line; 0: unknown")),
        offset(t.ints(prefix + "offset", "B", whose + ": bytes into the function")) {}
  void push_back(const CallSiteName &s) {
    function.push_back(s.function);
    file.push_back(s.file);
    line.push_back(s.line);
    offset.push_back(s.offset);
  }
};

// A problem's identity, typed: what a comparison of two runs matches problems by.
void add_identity_columns(io::Table &t, const std::vector<Problem> &problems) {
  auto &place = t.strings("place", "program, region, callsite, transfer or model-cause");
  auto &region = t.strings("place_region", "region path (program, region; callsite: its region when known)");
  SiteColumns site(t, "place_", "callsite: the call site; transfer: the sender's");
  auto &span = t.strings("place_span", "callsite: call (the call itself) or computation-before (the work before it)");
  SiteColumns peer(t, "place_peer_", "transfer: the receiver's call site");
  auto &cause = t.strings("place_model_cause", "model-cause: the model's cause, e.g. master_bottleneck");
  auto &model_ranks =
      t.strings("place_model_ranks", "model-cause: the ranks the model names (master-worker's masters)");
  auto &action = t.strings("fix_action", "ideal-network, zero-wait, balance or scale; empty: no fix");
  auto &factor = t.floats("fix_factor", "", "scale: the factor; 0 otherwise");
  auto &target = t.strings("fix_target", "all, region or callsite");
  auto &fix_region = t.strings("fix_region", "region: its path");
  SiteColumns fix_site(t, "fix_", "callsite: the call site");
  for (const auto &p : problems) {
    const Place &w = p.head.place;
    place.push_back(place_type_word(w.type));
    region.push_back(w.region_path);
    site.push_back(w.type == Place::Type::CallSite || w.type == Place::Type::Transfer ? w.site : CallSiteName{});
    span.push_back(w.type != Place::Type::CallSite            ? ""
                   : w.span == Place::Span::ComputationBefore ? "computation-before"
                                                              : "call");
    peer.push_back(w.type == Place::Type::Transfer ? w.peer : CallSiteName{});
    cause.push_back(w.model_cause);
    model_ranks.push_back(kernels::format_ranges(w.model_ranks));
    const Fix none;
    const Fix &f = p.head.fix ? *p.head.fix : none;
    action.push_back(p.head.fix ? action_word(f.action) : "");
    factor.push_back(f.action == Fix::Action::Scale ? f.factor : 0.0);
    target.push_back(p.head.fix ? target_word(f.target) : "");
    fix_region.push_back(f.target == Fix::Target::Region ? f.region_path : "");
    fix_site.push_back(f.target == Fix::Target::CallSite ? f.site : CallSiteName{});
  }
}

}  // namespace

void rank_problems(std::vector<Problem> &problems) {
  std::stable_sort(problems.begin(), problems.end(), [](const Problem &x, const Problem &y) {
    const Finding &a = x.head, &b = y.head;
    const bool ga = !std::isnan(a.predicted_gain_s), gb = !std::isnan(b.predicted_gain_s);
    if (ga != gb) return ga;
    if (ga && a.predicted_gain_s != b.predicted_gain_s) return a.predicted_gain_s > b.predicted_gain_s;
    if (a.lost_s != b.lost_s) return a.lost_s > b.lost_s;
    if (a.kind != b.kind) return kind_id(a.kind) < kind_id(b.kind);
    return a.place.label < b.place.label;
  });
}

io::Table problems_table(const std::vector<Problem> &problems) {
  io::Table t;
  t.description =
      "the problems: findings about one cause merged (/evidence), ranked: simulated payoff first, then time at stake";
  auto &rank = t.ints("rank", "", "position in the ranking, 1 = most important");
  auto &kind = t.strings("kind", "what kind of problem (docs/results.md lists the kinds)");
  auto &where = t.strings("where", "region path, call site or (program)");
  auto &ranks = t.strings("ranks", "application ranks that cause it, e.g. 0-3,7; all: every rank");
  auto &cause = t.strings("cause", "why, in plain words with figures");
  auto &lost = t.floats("lost_s", "s", "wall time at stake: the most a perfect fix could remove");
  auto &gain = t.floats("predicted_gain_s", "s",
                        "simulated reduction of the run's wall time; NaN (JSON null) until a stage prices it");
  auto &stage = t.strings("stage", "stage that found it");
  auto &question = t.strings("question", "the what-if question that prices the fix; empty: none");
  auto &fix = t.strings("fix", "the fix as a thing to do, in the program's terms; empty: none");
  for (size_t i = 0; i < problems.size(); ++i) {
    const Finding &f = problems[i].head;
    question.push_back(f.question());
    fix.push_back(f.fix ? fix_words(*f.fix) : "");
    rank.push_back(static_cast<int64_t>(i + 1));
    kind.push_back(std::string(kind_id(f.kind)));
    where.push_back(f.place.label);
    ranks.push_back(f.culprits.text());
    cause.push_back(f.cause);
    lost.push_back(f.lost_s);
    gain.push_back(f.predicted_gain_s);
    stage.push_back(std::string(f.stage()));
  }
  add_identity_columns(t, problems);
  return t;
}

io::Table evidence_table(const std::vector<Problem> &problems) {
  io::Table t;
  t.description = "what each method saw of each problem (role evidence) and the waiting it causes (role symptom)";
  auto &problem = t.ints("problem", "", "the problem's rank in /problems");
  auto &role = t.strings("role", "evidence (a method that saw the cause) or symptom (waiting its fix removes)");
  auto &stage = t.strings("stage", "stage that reported it");
  auto &kind = t.strings("kind", "what the method reported");
  auto &where = t.strings("where", "region path, call site or (program)");
  auto &ranks = t.strings("ranks", "application ranks involved");
  auto &lost = t.floats("lost_s", "s", "its time at stake as the method reported it");
  auto &cause = t.strings("cause", "the method's words");
  for (size_t k = 0; k < problems.size(); ++k)
    for (const auto *list : {&problems[k].evidence, &problems[k].symptoms})
      for (const auto &e : *list) {
        problem.push_back(static_cast<int64_t>(k + 1));
        role.push_back(list == &problems[k].evidence ? "evidence" : "symptom");
        stage.push_back(std::string(e.stage()));
        kind.push_back(std::string(kind_id(e.kind)));
        where.push_back(e.place.label);
        ranks.push_back(e.culprits.text());
        lost.push_back(e.lost_s);
        cause.push_back(e.cause);
      }
  return t;
}

io::Table notes_table(const std::vector<Note> &notes) {
  io::Table t;
  t.description = "method outputs that are not problems (a fix that gains nothing, nothing at stake), and why";
  auto &kind = t.strings("kind", "what the method reported");
  auto &where = t.strings("where", "region path, call site or (program)");
  auto &ranks = t.strings("ranks", "application ranks involved, e.g. 0-3,7");
  auto &reason = t.strings("reason", "why it is not a problem");
  auto &lost = t.floats("lost_s", "s", "wall time at stake as the method reported it");
  auto &gain = t.floats("predicted_gain_s", "s", "simulated payoff of its fix; NaN when not priced");
  auto &stage = t.strings("stage", "stage that reported it");
  auto &fix = t.strings("fix", "its fix as a thing to do, in the program's terms; empty: none");
  for (const auto &n : notes) {
    fix.push_back(n.finding.fix ? fix_words(*n.finding.fix) : "");
    kind.push_back(std::string(kind_id(n.finding.kind)));
    where.push_back(n.finding.place.label);
    ranks.push_back(n.finding.culprits.text());
    reason.push_back(n.reason);
    lost.push_back(n.finding.lost_s);
    gain.push_back(n.finding.predicted_gain_s);
    stage.push_back(std::string(n.finding.stage()));
  }
  return t;
}

void write_problems(io::ResultsWriter &writer, Context &ctx) {
  auto findings =
      all_findings(std::move(ctx.findings), ctx.products().find<Bottlenecks>(), ctx.products().find<RootCauses>());
  auto problems = merge_into_problems(std::move(findings), ctx.products().find<FixEffects>(), ctx.program_time_s());
  const auto notes = set_aside_non_problems(problems, ctx.program_time_s());
  rank_problems(problems);
  writer.table("problems", problems_table(problems));
  writer.table("evidence", evidence_table(problems));
  writer.table("notes", notes_table(notes));
  writer.attribute("", "warnings", ctx.warnings);
}

}  // namespace perfsift::pipeline
