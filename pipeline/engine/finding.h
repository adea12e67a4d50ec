// What stages report: findings (identical on every analysis process), and located
// bottlenecks that become findings after the last stage, completed by their root causes.
// A finding's identity is typed — kind, place, culprit ranks, fix — and stable across
// runs of the same program; its words are for readers only.
#pragma once

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/rank_set.h"
#include "pipeline/engine/fix.h"
#include "pipeline/engine/place.h"
#include "pipeline/engine/problem_kinds.h"

namespace perfsift::pipeline {

// The ranks that cause a problem: a set, or every rank (a region-wide finding).
struct Culprits {
  bool all = false;
  kernels::RankRanges ranks;
  auto operator<=>(const Culprits &) const = default;
  static Culprits every_rank() { return {true, {}}; }
  // "0-3,7", or "all".
  std::string text() const { return all ? "all" : kernels::format_ranges(ranks); }
};

// A problem a stage found, or what one method saw of a problem.
struct Finding {
  ProblemKind kind = ProblemKind::LoadImbalance;
  Place place;
  Culprits culprits;
  std::string cause;                       // why, in plain words with figures
  double lost_s = 0;                       // wall time at stake (what a perfect fix could remove at most)
  double predicted_gain_s = std::nan("");  // simulated payoff; NaN until a stage prices it
  std::optional<Fix> fix;                  // the what-if change that prices it (none: no fix to price)

  std::string_view stage() const { return kind_info(kind).stage; }
  const std::string &question() const;  // the fix's what-if question; empty without a fix
};

// Located bottlenecks (dissimilarity, disparity): findings whose cause the
// rootcause stage may complete.
struct Bottlenecks {
  static constexpr std::string_view kProduct = "bottlenecks";
  std::vector<Finding> items;
};

// Which bottleneck a root cause explains.
struct BottleneckKey {
  ProblemKind kind;
  Place place;
  bool operator<(const BottleneckKey &o) const { return kind != o.kind ? kind < o.kind : place.before(o.place); }
};

struct RootCauses {
  static constexpr std::string_view kProduct = "root causes";
  std::map<BottleneckKey, std::string> words;  // plain words per bottleneck
};

// The findings of the run: every stage's, then each bottleneck with its root cause.
std::vector<Finding> all_findings(std::vector<Finding> findings, const Bottlenecks *bottlenecks,
                                  const RootCauses *causes);

// Product of the whatif stage: the waiting per call site (ns, summed over ranks) in the
// baseline replay and under each priced fix that changes work (balance, scale): the
// replay's answer to "does this fix remove that waiting?".
// Waiting is placed at its call site, and at its innermost region (for waiting whose call
// site is unknown: stores without call sites, imports): places [0, sites) are call sites,
// [sites, sites + regions) regions.
struct FixEffects {
  static constexpr std::string_view kProduct = "fix effects";
  std::vector<int64_t> baseline_wait;                        // per place
  std::map<Fix, std::vector<int64_t>, FixOrder> wait_under;  // per fix, per place
  std::map<Fix, size_t, FixOrder> place_of;                  // a waiting fix (zero-wait at X) -> its place
};

// A problem: findings about one cause (the same place and culprit ranks) merged, with the
// waiting it causes as its symptoms. `head` is the finding whose fix prices it best.
struct Problem {
  Finding head;
  std::vector<Finding> evidence;  // every method that saw it, the head first
  std::vector<Finding> symptoms;  // waiting that the cause's fix removes (replay), not name matching
};

// Merges findings into problems. Findings at the same place with the same culprits, or with
// the same fix, become one problem; a waiting finding (its fix "zero-wait" at a call site X
// or region R) becomes a symptom of the problem whose fix removes at least half of
// the baseline waiting at X (or R) in the replay (the one that removes most), when `effects`
// is known and that fix's own gain is measurable (above no_gain_s(run_s)): a fix that removes
// waiting without shortening the run is not its cause in a reader's sense. Then
// (fold_model_and_region_findings) a region-wide finding (every rank a culprit: disparity)
// joins the problem with culprits at the same region, and a recognised parallel model's
// causes are one problem, whose symptoms are the point-to-point waiting (late sender, late
// receiver) and the master's own excess (master-worker).
std::vector<Problem> merge_into_problems(std::vector<Finding> findings, const FixEffects *effects, double run_s = 0);

// The gain below which a replayed fix predicts nothing: 0.1 % of the run (at least 1 ns).
double no_gain_s(double run_s);
// The least a problem must be worth to be one: a fix that buys less than 1 % of the program
// (or, unpriced, less than that at stake) is a note, whatever the method that found it.
double worth_acting_on_s(double run_s);

// A method output that is not a problem, and why.
struct Note {
  Finding finding;
  std::string reason;
};

// Honest ranking: moves out of `problems` what is not a problem — a fix whose replay
// predicts no gain or a loss (at most 0.1 % of the run), or nothing at stake and no priced
// fix, or less than worth_acting_on_s — and says, in a priced finding's cause, why its gain differs from its time
// at stake. Gains are at most the run.
std::vector<Note> set_aside_non_problems(std::vector<Problem> &problems, double run_s);

}  // namespace perfsift::pipeline
