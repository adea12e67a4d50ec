#include "kernels/rough_set.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace perfsift::kernels {

namespace {

struct Class {
  std::vector<int64_t> values;
  int64_t first_object = 0;
  int64_t decision = 0;  // the first object's
  bool single_decision = true;
};

// Groups classes by their values on `mask`; true when every group is one class or
// classes sharing one decision.
bool discerns(const std::vector<Class> &classes, uint32_t mask, int nattr) {
  std::unordered_map<uint64_t, std::vector<size_t>> groups;
  groups.reserve(classes.size() * 2);
  for (size_t c = 0; c < classes.size(); ++c) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int a = 0; a < nattr; ++a)
      if (mask >> a & 1u) h = (h ^ static_cast<uint64_t>(classes[c].values[a])) * 0x100000001B3ull + a;
    groups[h].push_back(c);
  }
  for (const auto &[h, members] : groups) {
    // Hash groups may merge distinct projections: split them exactly.
    std::map<std::vector<int64_t>, std::vector<size_t>> exact;
    if (members.size() == 1) continue;
    for (size_t c : members) {
      std::vector<int64_t> key;
      for (int a = 0; a < nattr; ++a)
        if (mask >> a & 1u) key.push_back(classes[c].values[a]);
      exact[key].push_back(c);
    }
    for (const auto &[key, cs] : exact) {
      if (cs.size() == 1) continue;
      for (size_t c : cs)
        if (!classes[c].single_decision || classes[c].decision != classes[cs[0]].decision) return false;
    }
  }
  return true;
}

}  // namespace

RoughSetResult analyse_decision_table(const DecisionTable &t) {
  const int nattr = static_cast<int>(t.attributes.size());
  if (nattr > 20) throw std::invalid_argument("rough sets: at most 20 attributes");
  if (t.conditions.size() != t.decision.size())
    throw std::invalid_argument("rough sets: rows and decisions differ in number");
  RoughSetResult out;
  out.objects = static_cast<int64_t>(t.decision.size());
  std::map<std::vector<int64_t>, size_t> index;
  std::vector<Class> classes;
  for (size_t i = 0; i < t.decision.size(); ++i) {
    if (static_cast<int>(t.conditions[i].size()) != nattr) throw std::invalid_argument("rough sets: ragged table");
    auto [it, fresh] = index.emplace(t.conditions[i], classes.size());
    if (fresh)
      classes.push_back({t.conditions[i], static_cast<int64_t>(i), t.decision[i], true});
    else {
      Class &c = classes[it->second];
      if (c.decision != t.decision[i]) {
        c.single_decision = false;
        out.inconsistent.emplace_back(c.first_object, static_cast<int64_t>(i));
      }
    }
  }
  out.classes = static_cast<int64_t>(classes.size());
  const uint32_t full = nattr ? (nattr == 32 ? ~0u : (1u << nattr) - 1) : 0;
  // Subsets by size, then by value: deterministic order of reducts.
  std::vector<uint32_t> subsets;
  for (uint32_t m = 0; m <= full; ++m) {
    subsets.push_back(m);
    if (m == full) break;
  }
  std::stable_sort(subsets.begin(), subsets.end(),
                   [](uint32_t a, uint32_t b) { return __builtin_popcount(a) < __builtin_popcount(b); });
  std::vector<uint32_t> found;
  for (uint32_t m : subsets) {
    if (std::any_of(found.begin(), found.end(), [&](uint32_t r) { return (r & m) == r; })) continue;
    if (discerns(classes, m, nattr)) found.push_back(m);
  }
  auto bits = [&](uint32_t m) {
    std::vector<int> v;
    for (int a = 0; a < nattr; ++a)
      if (m >> a & 1u) v.push_back(a);
    return v;
  };
  for (uint32_t m : found) out.reducts.push_back(bits(m));
  std::sort(out.reducts.begin(), out.reducts.end(),
            [](const auto &a, const auto &b) { return a.size() != b.size() ? a.size() < b.size() : a < b; });
  uint32_t core = found.empty() ? 0 : full;
  for (uint32_t m : found) core &= m;
  out.core = bits(core);
  if (!out.reducts.empty()) out.minimal_reduct = out.reducts.front();
  return out;
}

std::vector<int> explaining_attributes(const RoughSetResult &r, const std::vector<int64_t> &object, int64_t value) {
  std::vector<int> out;
  for (const auto &red : r.reducts)
    if (red.size() == r.minimal_reduct.size())
      for (int a : red)
        if (object[static_cast<size_t>(a)] == value && std::find(out.begin(), out.end(), a) == out.end())
          out.push_back(a);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::vector<uint32_t>> discernibility_matrix(const DecisionTable &t) {
  const size_t n = t.decision.size();
  std::vector<std::vector<uint32_t>> m(n, std::vector<uint32_t>(n, 0));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      if (t.decision[i] == t.decision[j]) continue;
      for (size_t a = 0; a < t.attributes.size(); ++a)
        if (t.conditions[i][a] != t.conditions[j][a]) m[i][j] |= 1u << a;
    }
  return m;
}

}  // namespace perfsift::kernels
