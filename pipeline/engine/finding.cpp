// Bottlenecks become findings after the last stage, with their root causes.
#include "pipeline/engine/finding.h"

#include <algorithm>
#include <cstdio>

namespace perfsift::pipeline {

std::vector<Finding> all_findings(std::vector<Finding> findings, const Bottlenecks *bottlenecks,
                                  const RootCauses *causes) {
  if (!bottlenecks) return findings;
  for (const auto &b : bottlenecks->items) {
    Finding f;
    f.kind = b.kind;
    f.where = b.where;
    f.ranks = b.ranks;
    f.lost_s = b.lost_s;
    f.stage = b.kind;
    f.question = b.question;
    f.predicted_gain_s = b.predicted_gain_s;
    f.cause = b.symptom;
    if (causes)
      if (auto it = causes->words.find({b.kind, b.where}); it != causes->words.end())
        f.cause += "; root cause: " + it->second;
    findings.push_back(std::move(f));
  }
  return findings;
}

namespace {

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g ms", s * 1e3);
  return b;
}

}  // namespace

std::vector<Note> set_aside_non_problems(std::vector<Finding> &findings, double run_s) {
  std::vector<Note> notes;
  std::vector<Finding> kept;
  const double no_gain = std::max(1e-9, 1e-3 * run_s);
  for (auto &f : findings) {
    const bool priced = !std::isnan(f.predicted_gain_s);
    if (priced) f.predicted_gain_s = std::min(f.predicted_gain_s, run_s);
    if (priced && f.predicted_gain_s <= no_gain) {
      notes.push_back({f, "the replay of its fix (" + f.question + ") predicts " +
                              (f.predicted_gain_s < 0 ? "a loss of " + ms(-f.predicted_gain_s)
                                                      : "no measurable gain (" + ms(f.predicted_gain_s) + ")")});
      continue;
    }
    if (!priced && !(f.lost_s > 0)) {
      notes.push_back({f, "nothing at stake: no time to gain from it"});
      continue;
    }
    if (priced && f.predicted_gain_s > 1.2 * f.lost_s + 1e-4)
      f.cause += "; the fix gains more than the time at stake: ranks that wait for these ranks finish earlier too";
    else if (priced && f.predicted_gain_s < 0.5 * f.lost_s)
      f.cause += "; the fix gains less than the time at stake: other ranks' work or messages then set the pace";
    kept.push_back(std::move(f));
  }
  findings = std::move(kept);
  return notes;
}

}  // namespace perfsift::pipeline
