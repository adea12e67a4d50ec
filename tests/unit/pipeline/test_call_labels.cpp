// The replay model's per-event labels (pipeline/replay/call_labels.h): every event reads
// back the region, call site and operation it was given, before and after the codes widen
// past 65,536 distinct triples, and after packing its parts and unpacking them.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "pipeline/replay/call_labels.h"

using perfsift::pipeline::CallLabels;

namespace {

struct Given {
  int32_t region;
  uint32_t site;
  uint16_t op;
};

void expect_all(const CallLabels &labels, const std::vector<Given> &given) {
  ASSERT_EQ(labels.size(), given.size());
  for (size_t i = 0; i < given.size(); ++i) {
    ASSERT_EQ(labels.region(i), given[i].region) << "event " << i;
    ASSERT_EQ(labels.site(i), given[i].site) << "event " << i;
    ASSERT_EQ(labels.op(i), given[i].op) << "event " << i;
  }
}

// A loop's few triples, then `distinct` more each used once, then the loop again: the
// codes widen midway when `distinct` passes 65,536.
std::vector<Given> events(size_t distinct, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Given> out;
  const Given loop[] = {{3, 10, 7}, {3, 11, 8}, {-1, 0, 0}, {3, 10, 9}, {4, 0xFFFFFFFFu, 0xFFFF}};
  for (int i = 0; i < 1000; ++i) out.push_back(loop[rng() % 5]);
  // Triples told apart by their operation alone.
  for (uint16_t op = 0; op < 2000 && op < distinct; ++op) out.push_back({5, 77, op});
  for (size_t k = 0; k < distinct; ++k)
    out.push_back({static_cast<int32_t>(rng() % 1000) - 1, static_cast<uint32_t>(k), static_cast<uint16_t>(rng())});
  for (int i = 0; i < 1000; ++i) out.push_back(loop[rng() % 5]);
  return out;
}

CallLabels labelled(const std::vector<Given> &given) {
  CallLabels labels;
  labels.reserve(given.size());
  for (const Given &g : given) labels.push_back(g.region, g.site, g.op);
  labels.seal();
  return labels;
}

TEST(CallLabels, EveryEventReadsBackItsTriple) {
  for (size_t distinct : {size_t{0}, size_t{100}, size_t{65536 - 5}, size_t{65536}, size_t{70000}}) {
    const auto given = events(distinct, static_cast<uint32_t>(distinct));
    expect_all(labelled(given), given);
  }
}

TEST(CallLabels, PackedPartsUnpackToTheSameLabels) {
  const auto given = events(70000, 7);
  const CallLabels labels = labelled(given);
  std::vector<std::vector<char>> parts;
  CallLabels::each_part(labels, [&](const auto &v) {
    const char *p = reinterpret_cast<const char *>(v.data());
    parts.emplace_back(p, p + v.size() * sizeof(v[0]));
  });
  CallLabels back;
  size_t k = 0;
  CallLabels::each_part(back, [&](auto &v) {
    v.resize(parts[k].size() / sizeof(v[0]));
    if (!v.empty()) std::memcpy(static_cast<void *>(v.data()), parts[k].data(), parts[k].size());
    ++k;
  });
  expect_all(back, given);
}

}  // namespace
