// What stages report: findings (identical on every analysis process), and located
// bottlenecks that become findings after the last stage, completed by their root causes.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace perfsift::pipeline {

// A problem a stage found. Identical on every analysis process.
struct Finding {
  std::string kind;                        // e.g. "load-imbalance"
  std::string where;                       // region path, call site, or "(program)"
  std::string ranks;                       // "0-3,7"
  std::string cause;                       // one sentence, plain words, with figures
  double lost_s = 0;                       // wall time at stake (what a perfect fix could remove at most)
  double predicted_gain_s = std::nan("");  // simulated payoff; NaN until a stage prices it
  std::string stage;
  std::string question;  // the what-if question whose answer prices the fix (empty: none)
};

// A located bottleneck (dissimilarity, disparity): a finding whose cause the rootcause
// stage may complete.
struct Bottleneck {
  std::string kind, where, ranks, symptom;
  double lost_s = 0;
  std::string question{};  // the what-if question that prices its fix (whatif stage)
  double predicted_gain_s = std::nan("");
};

struct Bottlenecks {
  static constexpr std::string_view kProduct = "bottlenecks";
  std::vector<Bottleneck> items;
};

// Which bottleneck a root cause explains.
struct BottleneckKey {
  std::string kind, where;
  auto operator<=>(const BottleneckKey &) const = default;
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
  std::vector<int64_t> baseline_wait;                      // per place
  std::map<std::string, std::vector<int64_t>> wait_under;  // per fix question, per place
  std::map<std::string, size_t> place_of;                  // a waiting finding's fix ("zero-wait ...") -> its place
};

// What one method saw of a problem.
struct Evidence {
  std::string stage, kind, where, ranks;
  double seconds = 0;  // its time at stake
  std::string text;
};

// A problem: findings about one cause (the same place and culprit ranks) merged, with the
// waiting it causes as its symptoms. `head` is the finding whose fix prices it best.
struct Problem {
  Finding head;
  std::vector<Evidence> evidence;  // every method that saw it, the head first
  std::vector<Evidence> symptoms;  // waiting that the cause's fix removes (replay), not name matching
};

// Merges findings into problems. Findings with the same `where` and `ranks`, or the same
// fix (`question`), become one problem; a waiting finding (its fix "zero-wait callsite X" or
// "zero-wait region R") becomes a symptom of the problem whose fix removes at least half of
// the baseline waiting at X (or R) in the replay (the one that removes most), when `effects`
// is known and that fix's own gain is measurable (above no_gain_s(run_s)): a fix that removes
// waiting without shortening the run is not its cause in a reader's sense. Then (fold_model_and_region_findings) a
// region-wide finding (disparity, ranks "all") joins the problem with culprits at the same region, and a recognised
// parallel model's causes are one problem, whose symptoms are the point-to-point waiting (late-sender, late-receiver)
// and the master's own excess (master-worker).
std::vector<Problem> merge_into_problems(std::vector<Finding> findings, const FixEffects *effects, double run_s = 0);

// The gain below which a replayed fix predicts nothing: 0.1 % of the run (at least 1 ns).
double no_gain_s(double run_s);

// A method output that is not a problem, and why.
struct Note {
  Finding finding;
  std::string reason;
};

// Honest ranking: moves out of `problems` what is not a problem — a fix whose replay
// predicts no gain or a loss (at most 0.1 % of the run), or nothing at stake and no priced
// fix — and says, in a priced finding's cause, why its gain differs from its time at stake.
// Gains are at most the run.
std::vector<Note> set_aside_non_problems(std::vector<Problem> &problems, double run_s);

}  // namespace perfsift::pipeline
