// A problem's fix as a type: the what-if change that would remove it (pipeline/replay/
// questions.h holds the grammar). Its identity is typed and stable across runs; the
// question text is what the whatif stage asks the replay and what the reports print.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <tuple>

#include "pipeline/engine/place.h"

namespace perfsift::pipeline {

struct Fix {
  enum class Action : uint8_t { IdealNetwork, ZeroWait, Balance, Scale };
  // What it changes: everything, a region, or a call site (the call itself for zero-wait,
  // the computation before it for balance and scale).
  enum class Target : uint8_t { All, Region, CallSite };

  Action action = Action::Balance;
  double factor = 0;  // Scale
  Target target = Target::All;
  int32_t region_id = -1;  // Region: one store's id, for the replay
  std::string region_path;
  int64_t site_id = -1;  // CallSite: one store's id, for the replay
  CallSiteName site;
  std::string question;  // the what-if question, as asked and printed

  auto identity() const { return std::tie(action, factor, target, region_path, site); }
  bool same(const Fix &o) const { return identity() == o.identity(); }
};

// Orders fixes by identity (FixEffects' keys, merging).
struct FixOrder {
  bool operator()(const Fix &a, const Fix &b) const { return a.identity() < b.identity(); }
};

// The action's word in the what-if grammar ("zero-wait", "balance", ...).
const char *action_word(Fix::Action action);
// The target's word in the results store ("all", "region", "callsite").
const char *target_word(Fix::Target target);
// The fix as a thing to do, in the program's terms: "balance the computation before
// solve (cg.c:120) across ranks", "remove the waiting at exchange (halo.c:88)".
std::string fix_words(const Fix &fix);

}  // namespace perfsift::pipeline
