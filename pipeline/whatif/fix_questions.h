// The fixes stages propose (pipeline/engine/fix.h), each with the what-if question
// (questions.h) that prices it, so that a fix's question is written in one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/trace_model.h"
#include "pipeline/engine/fix.h"
#include "pipeline/whatif/questions.h"

namespace perfsift::pipeline {

// "ideal-network", "balance all", "zero-wait all".
inline Fix fix_everywhere(Fix::Action action) {
  Fix f;
  f.action = action;
  f.target = Fix::Target::All;
  f.question = action == Fix::Action::IdealNetwork ? action_word(action) : std::string(action_word(action)) + " all";
  return f;
}

// "balance region R", "zero-wait region R", "scale F region R" (F as written: `factor`).
inline Fix region_fix(Fix::Action action, int32_t region_id, const std::string &path, const std::string &factor = "") {
  Fix f;
  f.action = action;
  f.factor = factor.empty() ? 0.0 : std::stod(factor);
  f.target = Fix::Target::Region;
  f.region_id = region_id;
  f.region_path = path;
  f.question =
      std::string(action_word(action)) + (factor.empty() ? "" : " " + factor) + " region " + quote_region(path);
  return f;
}

// "balance callsite K", "zero-wait callsite K", "scale F callsite K" for call site K of the store.
inline Fix callsite_fix(Fix::Action action, const std::vector<io::CallSite> &sites, int64_t site,
                        const std::string &factor = "") {
  Fix f;
  f.action = action;
  f.factor = factor.empty() ? 0.0 : std::stod(factor);
  f.target = Fix::Target::CallSite;
  f.site_id = site;
  if (site >= 0 && static_cast<size_t>(site) < sites.size()) f.site = call_site_name(sites[static_cast<size_t>(site)]);
  f.question =
      std::string(action_word(action)) + (factor.empty() ? "" : " " + factor) + " callsite " + std::to_string(site);
  return f;
}

}  // namespace perfsift::pipeline
