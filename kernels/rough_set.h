// Rough-set root causes (AutoAnalyzer section 4.4): decision tables, the
// decision-relative discernibility function, its core and all its reducts.
//
// Scale: objects are first collapsed into equivalence classes (identical condition
// values); the n x n matrix of raw objects is never built. A subset S of attributes
// discerns every pair the full set discerns (S hits every non-empty matrix entry)
// iff grouping the classes by their values on S puts, in every group, either a single
// class or classes that all share one and the same decision. Reducts — the prime
// implicants of the discernibility function — are the minimal such S; all of them are
// found by testing subsets in order of size, skipping supersets of reducts found:
// O(2^attributes x classes). Attributes are limited to 20.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfsift::kernels {

struct DecisionTable {
  std::vector<std::string> attributes;           // names, e.g. "L2 miss rate"
  std::vector<std::vector<int64_t>> conditions;  // [object][attribute]
  std::vector<int64_t> decision;                 // [object]
};

struct RoughSetResult {
  int64_t objects = 0, classes = 0;
  std::vector<std::vector<int>>
      reducts;                      // attribute indices, each sorted; reducts sorted by size then lexicographically
  std::vector<int> core;            // in every reduct (the singleton entries of the matrix)
  std::vector<int> minimal_reduct;  // the first reduct of smallest size
  // Objects equal on every condition but with different decisions: their class's
  // first object and each conflicting object (inconsistent rows, reported, not fatal).
  std::vector<std::pair<int64_t, int64_t>> inconsistent;
};

RoughSetResult analyse_decision_table(const DecisionTable &table);

// Why one object gets its decision: the attributes of the smallest reducts on which the
// object has `value` (e.g. 1 = "high"), sorted. With reducts of different sizes only the
// smallest count, as the paper reports the minimal one.
std::vector<int> explaining_attributes(const RoughSetResult &result, const std::vector<int64_t> &object, int64_t value);

// The decision-relative discernibility matrix of a small table, as attribute bitmasks
// [i][j] (0 when decisions agree): for reports and for testing. O(objects^2).
std::vector<std::vector<uint32_t>> discernibility_matrix(const DecisionTable &table);

}  // namespace perfsift::kernels
