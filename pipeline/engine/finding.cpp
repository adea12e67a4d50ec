// Bottlenecks become findings after the last stage, with their root causes.
#include "pipeline/engine/finding.h"

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

}  // namespace perfsift::pipeline
