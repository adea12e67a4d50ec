// Where a problem is, as a type: the program, a region, a call site, a transfer between two
// call sites, or a cause inside a recognised parallel model. Its identity (everything but
// the label) is stable across runs of the same program: regions by path, call sites by
// function and file:line, never by an index into one store's tables.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "io/trace_model.h"
#include "kernels/rank_set.h"
#include "pipeline/format/text.h"

namespace perfsift::pipeline {

// A call site as the source names it.
struct CallSiteName {
  std::string function;  // the function, or the module when the function is unknown
  std::string file;
  int64_t line = 0;    // 0: unknown
  int64_t offset = 0;  // bytes into the function, or into the module when the function is unknown
  auto operator<=>(const CallSiteName &) const = default;
};

// A stripped binary names no function: its call sites differ only by their offset into the
// module, so that offset is theirs (the same binary loads its code at the same offsets).
inline CallSiteName call_site_name(const io::CallSite &c) {
  if (c.function.empty()) return {c.module, c.file, c.line, static_cast<int64_t>(c.offset)};
  return {c.function, c.file, c.line, static_cast<int64_t>(c.fn_offset)};
}

// A call site named by identity, in the program's terms (site_words).
inline std::string site_words(const CallSiteName &s) {
  return site_words(s.function, s.file, s.line, static_cast<uint64_t>(s.offset));
}

struct Place {
  enum class Type : uint8_t {
    Program,     // the whole program (the root region)
    Region,      // region_id, region_path
    CallSite,    // site (in the region region_path when known), the call itself or the computation before it
    Transfer,    // messages from call site `site` to call site `peer`
    ModelCause,  // model_cause of a recognised parallel model, centred on `model_ranks`
  };
  // Which part of a call site.
  enum class Span : uint8_t { Call, ComputationBefore };

  Type type = Type::Program;
  std::string label;  // as the reports print it: a region path, "R > f (file.c:12)", ...
  int32_t region_id = -1;
  std::string region_path;
  CallSiteName site, peer;  // peer: the receiving call site of a transfer
  bool site_known = true;   // false: calls without a call site
  Span span = Span::Call;
  std::string model_cause;          // e.g. "master_bottleneck"
  kernels::RankRanges model_ranks;  // the ranks the model names, e.g. master-worker's masters

  // The identity, without the label (and without region ids, which are one store's).
  auto identity() const { return std::tie(type, region_path, site, peer, site_known, span, model_cause, model_ranks); }
  bool same(const Place &o) const { return identity() == o.identity(); }
  bool before(const Place &o) const { return identity() < o.identity(); }

  static Place program(std::string label) {
    Place p;
    p.type = Type::Program;
    p.region_id = 0;
    p.region_path = label;
    p.label = std::move(label);
    return p;
  }
  // Region 0 is the program.
  static Place region(int32_t id, std::string path) {
    Place p = program(path);
    if (id != 0) p.type = Type::Region;
    p.region_id = id;
    return p;
  }

  // Call site `id` of the store (past its table: calls without a call site).
  static Place call_site(const std::vector<io::CallSite> &sites, uint64_t id, std::string label,
                         Span span = Span::Call) {
    Place p;
    p.type = Type::CallSite;
    p.label = std::move(label);
    p.site_known = id < sites.size();
    if (p.site_known) p.site = call_site_name(sites[id]);
    p.span = span;
    return p;
  }

  // This place is a region strictly inside `outer` (a region, not the program).
  bool strictly_inside(const Place &outer) const {
    return type == Type::Region && outer.type == Type::Region && region_path.size() > outer.region_path.size() + 1 &&
           region_path.compare(0, outer.region_path.size(), outer.region_path) == 0 &&
           region_path[outer.region_path.size()] == '/';
  }
};

}  // namespace perfsift::pipeline
