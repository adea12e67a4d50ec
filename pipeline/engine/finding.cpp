// Bottlenecks become findings after the last stage, with their root causes.
#include "pipeline/engine/finding.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace perfsift::pipeline {

const std::string &Finding::question() const {
  static const std::string none;
  return fix ? fix->question : none;
}

const char *action_word(Fix::Action action) {
  switch (action) {
    case Fix::Action::IdealNetwork:
      return "ideal-network";
    case Fix::Action::ZeroWait:
      return "zero-wait";
    case Fix::Action::Balance:
      return "balance";
    case Fix::Action::Scale:
      return "scale";
  }
  return "";
}

const char *target_word(Fix::Target target) {
  switch (target) {
    case Fix::Target::All:
      return "all";
    case Fix::Target::Region:
      return "region";
    case Fix::Target::CallSite:
      return "callsite";
  }
  return "";
}

std::string fix_words(const Fix &f) {
  const std::string region = "region " + f.region_path, site = site_words(f.site);
  switch (f.action) {
    case Fix::Action::IdealNetwork:
      return "make the network ideal (no latency, unlimited bandwidth)";
    case Fix::Action::ZeroWait:
      return f.target == Fix::Target::All      ? "remove all waiting in MPI calls"
             : f.target == Fix::Target::Region ? "remove the waiting in MPI calls in " + region
                                               : "remove the waiting at " + site;
    case Fix::Action::Balance:
      return f.target == Fix::Target::All      ? "balance the computation across ranks"
             : f.target == Fix::Target::Region ? "balance the computation in " + region + " across ranks"
                                               : "balance the computation before " + site + " across ranks";
    case Fix::Action::Scale: {
      char times[48];
      if (f.factor > 0 && f.factor < 1)
        std::snprintf(times, sizeof times, "%.3gx faster", 1 / f.factor);
      else
        std::snprintf(times, sizeof times, "%.3gx as long", f.factor);
      return std::string("make the computation ") +
             (f.target == Fix::Target::All      ? ""
              : f.target == Fix::Target::Region ? "in " + region + " "
                                                : "before " + site + " ") +
             times;
    }
  }
  return f.question;
}

std::vector<Finding> all_findings(std::vector<Finding> findings, const Bottlenecks *bottlenecks,
                                  const RootCauses *causes) {
  if (!bottlenecks) return findings;
  for (const auto &b : bottlenecks->items) {
    Finding f = b;
    if (causes)
      if (auto it = causes->words.find({b.kind, b.place}); it != causes->words.end())
        f.cause += "; root cause: " + it->second;
    findings.push_back(std::move(f));
  }
  return findings;
}

namespace {

// Where a waiting finding's fix removes waiting (a place of `effects`), or -1.
int64_t waiting_place(const Finding &f, const FixEffects &effects) {
  if (!f.fix) return -1;
  const auto it = effects.place_of.find(*f.fix);
  return it == effects.place_of.end() || it->second >= effects.baseline_wait.size() ? -1
                                                                                    : static_cast<int64_t>(it->second);
}

struct PlaceAndCulpritsOrder {
  bool operator()(const std::pair<Place, Culprits> &a, const std::pair<Place, Culprits> &b) const {
    if (a.first.before(b.first)) return true;
    if (b.first.before(a.first)) return false;
    return a.second < b.second;
  }
};

double priced_or(const Finding &f, double otherwise) {
  return std::isnan(f.predicted_gain_s) ? otherwise : f.predicted_gain_s;
}

// Appends `from` to `to` as evidence (or as symptoms), keeping the larger time at stake
// unless `from` is wider than `to` (an enclosing region: its time holds more than the cause).
void fold(Problem &to, Problem &&from, bool as_symptom, bool wider = false) {
  auto &list = as_symptom ? to.symptoms : to.evidence;
  for (auto &e : from.evidence) list.push_back(std::move(e));
  for (auto &e : from.symptoms) to.symptoms.push_back(std::move(e));
  if (!as_symptom && !wider) to.head.lost_s = std::max(to.head.lost_s, from.head.lost_s);
}

bool overlap(const Culprits &a, const Culprits &b) {
  if (a.all || b.all) return true;
  for (const auto &[lo, hi] : a.ranks)
    for (const auto &[lo2, hi2] : b.ranks)
      if (lo <= hi2 && lo2 <= hi) return true;
  return false;
}

// The problem (other than `model`) whose symptoms hold the most point-to-point waiting on
// the model's culprit ranks; problems.size() when none does.
size_t waiting_host(const std::vector<Problem> &problems, const std::vector<uint8_t> &gone, size_t model) {
  size_t host = problems.size();
  double most = 0;
  for (size_t k = 0; k < problems.size(); ++k) {
    if (k == model || gone[k]) continue;
    double waiting = 0;
    for (const auto &s : problems[k].symptoms)
      if (is_point_to_point_wait(s.kind) && overlap(s.culprits, problems[model].head.culprits)) waiting += s.lost_s;
    if (waiting > most) most = waiting, host = k;
  }
  return host;
}

// The program's excess on some ranks (load imbalance at the program) and the same ranks'
// excess at one call site (a dissimilarity of the work before it) are one cause when that
// call site holds at least half the program's excess: in a program without regions (a
// Python solver, an uninstrumented code) every call site lies in the program. A call site
// that holds less is one part of a wider excess, a problem of its own.
bool call_site_holds_programs_excess(const Finding &site, const Finding &program) {
  return site.place.type == Place::Type::CallSite && program.place.type == Place::Type::Program &&
         site.lost_s >= 0.5 * program.lost_s;
}

void fold_model_and_region_findings(std::vector<Problem> &problems) {
  std::vector<uint8_t> gone(problems.size(), 0);
  // A region-wide finding (no culprits) at a region a problem with culprits is at: one cause.
  for (size_t d = 0; d < problems.size(); ++d) {
    if (!problems[d].head.culprits.all) continue;
    for (size_t p = 0; p < problems.size(); ++p)
      if (p != d && !gone[p] && !problems[p].head.culprits.all && problems[p].head.place.same(problems[d].head.place)) {
        fold(problems[p], std::move(problems[d]), false);
        gone[d] = 1;
        break;
      }
  }
  // A problem at a region whose culprits are those of a problem in one of its subregions:
  // the same excess, seen from the enclosing region (scorecard: a dissimilarity at phase00
  // naming the ranks of the imbalance in phase00/kernel03). Evidence of the inner one.
  for (size_t o = 0; o < problems.size(); ++o) {
    if (gone[o] || problems[o].head.culprits.all) continue;
    for (size_t i = 0; i < problems.size(); ++i)
      if (i != o && !gone[i] && problems[i].head.culprits == problems[o].head.culprits &&
          (problems[i].head.place.strictly_inside(problems[o].head.place) ||
           call_site_holds_programs_excess(problems[i].head, problems[o].head))) {
        // The call site's own fix may buy nothing where only the culprits call it (a late
        // sender's send): the program's balance then answers, with the site as its evidence.
        if (call_site_holds_programs_excess(problems[i].head, problems[o].head) &&
            priced_or(problems[o].head, -1) > priced_or(problems[i].head, -1)) {
          fold(problems[o], std::move(problems[i]), false);
          gone[i] = 1;
          continue;
        }
        fold(problems[i], std::move(problems[o]), false, true);
        gone[o] = 1;
        break;
      }
  }
  // A recognised model's causes are one problem (the largest at its head).
  size_t model = problems.size();
  for (size_t k = 0; k < problems.size(); ++k) {
    if (gone[k] || !is_model_kind(problems[k].head.kind)) continue;
    if (model == problems.size()) {
      model = k;
      continue;
    }
    if (problems[k].head.lost_s > problems[model].head.lost_s) std::swap(problems[k], problems[model]);
    fold(problems[model], std::move(problems[k]), false);
    gone[k] = 1;
  }
  if (model < problems.size()) {
    // The model's waiting (a pipeline filling, workers waiting for the master) and the
    // master's own excess are how the model's cause shows: its symptoms. The best priced
    // of them bounds what the model's fix can buy.
    Problem &m = problems[model];
    const kernels::RankRanges &masters = m.head.place.model_ranks;
    const Finding *priced = nullptr;
    std::vector<size_t> symptoms;
    for (size_t k = 0; k < problems.size(); ++k) {
      if (k == model || gone[k]) continue;
      const Finding &f = problems[k].head;
      const bool waiting = is_point_to_point_wait(f.kind);
      const bool master_excess = !masters.empty() && !f.culprits.all && f.culprits.ranks == masters &&
                                 (f.kind == ProblemKind::LoadImbalance || f.kind == ProblemKind::Dissimilarity);
      if (!waiting && !master_excess) continue;
      if (!std::isnan(f.predicted_gain_s) && (!priced || f.predicted_gain_s > priced->predicted_gain_s)) priced = &f;
      symptoms.push_back(k);
    }
    if (priced && std::isnan(m.head.predicted_gain_s)) {
      m.head.fix = priced->fix;
      m.head.predicted_gain_s = priced->predicted_gain_s;
      m.head.cause +=
          "; priced by removing the waiting it causes (" + priced->question() + "): at most what restructuring buys";
    }
    for (size_t k : symptoms) {
      fold(m, std::move(problems[k]), true);
      gone[k] = 1;
    }
    // Unpriced, its waiting already another problem's symptom (the replay credits that
    // problem's fix with removing it): the model is how that cause shows, not a second one.
    if (std::isnan(m.head.predicted_gain_s))
      if (const size_t host = waiting_host(problems, gone, model); host < problems.size()) {
        fold(problems[host], std::move(m), true);
        gone[model] = 1;
      }
  }
  std::vector<Problem> kept;
  for (size_t k = 0; k < problems.size(); ++k)
    if (!gone[k]) kept.push_back(std::move(problems[k]));
  problems = std::move(kept);
}

}  // namespace

double no_gain_s(double run_s) { return std::max(1e-9, 1e-3 * run_s); }

double worth_acting_on_s(double run_s) { return 0.01 * run_s; }

std::vector<Problem> merge_into_problems(std::vector<Finding> findings, const FixEffects *effects, double run_s) {
  // Same place, same culprits: one problem; so are findings whose fix is the same change
  // (one what-if question: one gain, which two problems would count twice). The head is the
  // member whose fix gains most.
  std::vector<Problem> problems;
  std::map<std::pair<Place, Culprits>, size_t, PlaceAndCulpritsOrder> at;
  std::map<Fix, size_t, FixOrder> fixed_by;  // a fix -> its problem
  for (auto &f : findings) {
    auto [it, fresh] = at.emplace(std::make_pair(f.place, f.culprits), problems.size());
    if (fresh && f.fix)
      if (auto q = fixed_by.find(*f.fix); q != fixed_by.end()) it->second = q->second, fresh = false;
    if (fresh) {
      if (f.fix) fixed_by.emplace(*f.fix, problems.size());
      problems.push_back({f, {f}, {}});
      continue;
    }
    Problem &p = problems[it->second];
    if (f.fix) fixed_by.emplace(*f.fix, it->second);
    p.evidence.push_back(f);
    const double lost = std::max(p.head.lost_s, f.lost_s);
    if (priced_or(f, -1) > priced_or(p.head, -1)) {
      std::swap(p.evidence.front(), p.evidence.back());
      p.head = f;
    }
    p.head.lost_s = lost;
  }
  if (!effects) {
    fold_model_and_region_findings(problems);
    return problems;
  }
  // Waiting whose removal the replay credits to another problem's fix is that problem's symptom.
  std::vector<uint8_t> is_symptom(problems.size(), 0);
  const double no_gain = no_gain_s(run_s);
  for (size_t w = 0; w < problems.size(); ++w) {
    const int64_t site = waiting_place(problems[w].head, *effects);
    if (site < 0) continue;
    const int64_t before = effects->baseline_wait[static_cast<size_t>(site)];
    if (before <= 0) continue;
    size_t cause = problems.size();
    int64_t best = before / 2;  // at least half of it must go
    for (size_t c = 0; c < problems.size(); ++c) {
      if (c == w || is_symptom[c] || waiting_place(problems[c].head, *effects) >= 0) continue;
      if (!(priced_or(problems[c].head, -1) > no_gain)) continue;
      if (!problems[c].head.fix) continue;
      auto it = effects->wait_under.find(*problems[c].head.fix);
      if (it == effects->wait_under.end() || static_cast<size_t>(site) >= it->second.size()) continue;
      const int64_t removed = before - it->second[static_cast<size_t>(site)];
      if (removed >= best) best = removed, cause = c;
    }
    if (cause == problems.size()) continue;
    is_symptom[w] = 1;
    for (const auto &e : problems[w].evidence) problems[cause].symptoms.push_back(e);
  }
  std::vector<Problem> kept;
  for (size_t k = 0; k < problems.size(); ++k)
    if (!is_symptom[k]) kept.push_back(std::move(problems[k]));
  fold_model_and_region_findings(kept);
  return kept;
}

std::vector<Note> set_aside_non_problems(std::vector<Problem> &problems, double run_s) {
  std::vector<Note> notes;
  std::vector<Problem> kept;
  const double no_gain = no_gain_s(run_s);
  for (auto &p : problems) {
    Finding &f = p.head;
    const bool priced = !std::isnan(f.predicted_gain_s);
    if (priced) f.predicted_gain_s = std::min(f.predicted_gain_s, run_s);
    if (priced && f.predicted_gain_s <= no_gain) {
      notes.push_back(
          {f, "the replay of its fix (" + (f.fix ? fix_words(*f.fix) : f.question()) + ") predicts " +
                  (f.predicted_gain_s < 0 ? "a loss of " + format_seconds(-f.predicted_gain_s)
                                          : "no measurable gain (" + format_seconds(f.predicted_gain_s) + ")")});
      continue;
    }
    if (!priced && !(f.lost_s > 0)) {
      notes.push_back({f, "nothing at stake: no time to gain from it"});
      continue;
    }
    const double worth = worth_acting_on_s(run_s);
    if (priced && f.predicted_gain_s < worth) {
      notes.push_back({f, "its fix (" + (f.fix ? fix_words(*f.fix) : f.question()) + ") is predicted to save " +
                              format_seconds(f.predicted_gain_s) + ", under 1 % of the program: not worth acting on"});
      continue;
    }
    if (!priced && f.lost_s < worth) {
      notes.push_back({f, format_seconds(f.lost_s) + " at stake, under 1 % of the program: not worth acting on"});
      continue;
    }
    if (priced && f.predicted_gain_s > 1.2 * f.lost_s + 1e-4)
      f.cause += "; the fix gains more than the time at stake: ranks that wait for these ranks finish earlier too";
    else if (priced && f.predicted_gain_s < 0.5 * f.lost_s)
      f.cause += "; the fix gains less than the time at stake: other ranks' work or messages then set the pace";
    kept.push_back(std::move(p));
  }
  problems = std::move(kept);
  return notes;
}

}  // namespace perfsift::pipeline
