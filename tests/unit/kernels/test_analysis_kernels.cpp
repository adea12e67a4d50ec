#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kernels/exact_sum.h"
#include "kernels/rank_set.h"
#include "pipeline/format/json_writer.h"

using namespace perfsift;

TEST(FixedSum, OrderDoesNotChangeTheResult) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> d(-1e3, 1e4);
  std::vector<double> v(10000);
  for (auto &x : v) x = d(rng) * (rng() % 2 ? 1e-6 : 1.0);
  kernels::FixedSum a, b, c1, c2;
  for (double x : v) a.add(x);
  std::shuffle(v.begin(), v.end(), rng);
  for (double x : v) b.add(x);
  for (size_t i = 0; i < v.size(); ++i) (i % 3 ? c1 : c2).add(v[i]);
  c2.merge(c1);
  EXPECT_EQ(a.value(), b.value());  // bit-identical, unlike a double sum
  EXPECT_EQ(a.value(), c2.value());
  long double ref = 0;
  for (double x : v) ref += x;
  EXPECT_NEAR(a.value(), static_cast<double>(ref), 1e-6);
}

TEST(FixedSum, NegativeAndFractionalValues) {
  kernels::FixedSum s;
  s.add(-2.5);
  s.add(0.25);
  EXPECT_EQ(s.value(), -2.25);
  s.add(std::nan(""));  // ignored
  EXPECT_EQ(s.value(), -2.25);
}

TEST(Summary, MergeIsOrderIndependentWithTiesToLowerRank) {
  kernels::Summary a, b, all;
  const double vals[] = {3, 1, 5, 5, 1};
  for (int r = 0; r < 5; ++r) (r < 2 ? a : b).add(vals[r], r), all.add(vals[r], r);
  kernels::Summary ab = a, ba = b;
  ab.merge(b);
  ba.merge(a);
  for (const auto *s : {&ab, &ba, &all}) {
    EXPECT_EQ(s->count, 5);
    EXPECT_EQ(s->min, 1);
    EXPECT_EQ(s->min_rank, 1);  // ranks 1 and 4 tie: the lower wins
    EXPECT_EQ(s->max, 5);
    EXPECT_EQ(s->max_rank, 2);
    EXPECT_DOUBLE_EQ(s->mean(), 3.0);
    EXPECT_DOUBLE_EQ(s->imbalance(), 5.0 / 3.0 - 1);
  }
}

TEST(RankSet, FormatsAndParses) {
  EXPECT_EQ(kernels::format_ranges(kernels::to_ranges({7, 0, 1, 2, 3, 12, 13, 9, 10})), "0-3,7,9,10,12,13");
  EXPECT_EQ(kernels::format_ranges(kernels::merge_ranges({{4, 6}, {0, 3}, {9, 9}})), "0-6,9");
  EXPECT_EQ(kernels::count_ranks(kernels::to_ranges({1, 2, 3, 8})), 4);
  EXPECT_EQ(kernels::parse_ranks("0-2,5", 8), (std::vector<int32_t>{0, 1, 2, 5}));
  EXPECT_EQ(kernels::parse_ranks("all", 3), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_THROW(kernels::parse_ranks("3-1", 8), std::invalid_argument);
  EXPECT_THROW(kernels::parse_ranks("9", 8), std::invalid_argument);
  EXPECT_THROW(kernels::parse_ranks("x", 8), std::invalid_argument);
}

TEST(JsonWriter, NestedValuesNullForNaNAndEscapes) {
  pipeline::JsonWriter j;
  j.begin_object();
  j.key("a").value(int64_t{1});
  j.key("b").value(std::nan(""));
  j.key("c").values(std::vector<double>{0.1, 2});
  j.key("d").value("q\"\n");
  j.key("e").begin_array().end_array();
  j.end_object();
  EXPECT_EQ(j.take(), "{\n  \"a\": 1,\n  \"b\": null,\n  \"c\": [0.1, 2],\n  \"d\": \"q\\\"\\n\",\n  \"e\": []\n}\n");
}
