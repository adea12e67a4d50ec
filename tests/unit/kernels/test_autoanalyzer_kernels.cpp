// Known answers from the AutoAnalyzer paper (JPDC 2011) and brute force on small inputs.
#include <gtest/gtest.h>

#include <random>

#include "kernels/clustering.h"
#include "kernels/kmeans1d.h"
#include "kernels/rough_set.h"

using namespace perfsift::kernels;

namespace {

DecisionTable table(std::vector<std::vector<int64_t>> rows) {
  DecisionTable t;
  for (size_t a = 0; a + 1 < rows[0].size(); ++a) t.attributes.push_back("a" + std::to_string(a + 1));
  for (auto &r : rows) {
    t.decision.push_back(r.back());
    r.pop_back();
    t.conditions.push_back(r);
  }
  return t;
}

// Minimal transversals of the non-empty discernibility entries, by enumeration.
std::vector<std::vector<int>> brute_reducts(const DecisionTable &t) {
  const auto m = discernibility_matrix(t);
  std::vector<uint32_t> clauses;
  for (const auto &row : m)
    for (uint32_t c : row)
      if (c) clauses.push_back(c);
  const int na = static_cast<int>(t.attributes.size());
  std::vector<uint32_t> hits;
  for (uint32_t s = 0; s < (1u << na); ++s)
    if (std::all_of(clauses.begin(), clauses.end(), [&](uint32_t c) { return (c & s) != 0; })) hits.push_back(s);
  std::vector<std::vector<int>> out;
  for (uint32_t s : hits) {
    bool minimal = std::none_of(hits.begin(), hits.end(), [&](uint32_t o) { return o != s && (o & s) == o; });
    if (!minimal) continue;
    std::vector<int> v;
    for (int a = 0; a < na; ++a)
      if (s >> a & 1u) v.push_back(a);
    out.push_back(v);
  }
  std::sort(out.begin(), out.end(),
            [](const auto &a, const auto &b) { return a.size() != b.size() ? a.size() < b.size() : a < b; });
  return out;
}

}  // namespace

TEST(RoughSet, PaperTable2) {
  // sunny 0 overcast 1; hot 0 cool 1; high 0 low 1; False 0 True 1; N 0 P 1
  auto t = table({{0, 0, 0, 0, 0}, {0, 0, 0, 1, 0}, {1, 0, 0, 0, 1}, {0, 1, 1, 0, 1}});
  auto r = analyse_decision_table(t);
  EXPECT_EQ(r.core, (std::vector<int>{0}));
  EXPECT_EQ(r.reducts, (std::vector<std::vector<int>>{{0, 1}, {0, 2}}));
  auto m = discernibility_matrix(t);  // Fig. 3
  EXPECT_EQ(m[0][2], 0b0001u);
  EXPECT_EQ(m[0][3], 0b0110u);
  EXPECT_EQ(m[1][2], 0b1001u);
  EXPECT_EQ(m[1][3], 0b1110u);
  EXPECT_EQ(m[0][1], 0u);
}

TEST(RoughSet, PaperTable3CoreIsInstructionsRetired) {
  auto t = table({{0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 1, 1},
                  {0, 0, 0, 0, 1, 1},
                  {1, 0, 0, 0, 2, 2},
                  {0, 1, 0, 0, 3, 3},
                  {1, 1, 0, 1, 4, 4},
                  {1, 2, 0, 1, 3, 3},
                  {1, 2, 0, 0, 4, 4}});
  auto r = analyse_decision_table(t);
  EXPECT_EQ(r.core, (std::vector<int>{4}));
  EXPECT_EQ(r.reducts, (std::vector<std::vector<int>>{{4}}));
  EXPECT_TRUE(r.inconsistent.empty());
}

TEST(RoughSet, PaperTable4WithInconsistentRows) {
  auto t = table({{0, 0, 0, 0, 0, 0},
                  {1, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0},
                  {1, 1, 0, 0, 1, 0},
                  {1, 0, 0, 0, 1, 0},
                  {0, 0, 0, 0, 0, 0},
                  {0, 0, 1, 0, 1, 1},
                  {1, 0, 0, 0, 0, 0},
                  {1, 0, 0, 0, 0, 0},
                  {1, 1, 0, 0, 1, 1},
                  {0, 0, 0, 0, 0, 0},
                  {0, 0, 0, 0, 0, 0},
                  {1, 1, 0, 0, 1, 1}});
  auto r = analyse_decision_table(t);
  EXPECT_EQ(r.core, (std::vector<int>{1}));
  EXPECT_EQ(r.reducts, (std::vector<std::vector<int>>{{1, 2}, {0, 1, 4}}));
  EXPECT_EQ(r.minimal_reduct, (std::vector<int>{1, 2}));
  // Region IDs 5/11 and 5/14 (objects 4/10, 4/13): equal attributes, different decisions.
  EXPECT_EQ(r.inconsistent, (std::vector<std::pair<int64_t, int64_t>>{{4, 10}, {4, 13}}));
  // Per bottleneck, the smallest reducts' attributes that are high: region 8 disk I/O (a3),
  // regions 11 and 14 L2 miss rate (a2).
  EXPECT_EQ(explaining_attributes(r, t.conditions[7], 1), (std::vector<int>{2}));
  EXPECT_EQ(explaining_attributes(r, t.conditions[10], 1), (std::vector<int>{1}));
  EXPECT_EQ(explaining_attributes(r, t.conditions[13], 1), (std::vector<int>{1}));
}

TEST(RoughSet, ReductsEqualBruteForceOnRandomTables) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int na = 1 + trial % 6, n = 2 + trial % 13, values = 2 + trial % 3;
    DecisionTable t;
    for (int a = 0; a < na; ++a) t.attributes.push_back("a" + std::to_string(a));
    for (int i = 0; i < n; ++i) {
      std::vector<int64_t> row;
      for (int a = 0; a < na; ++a) row.push_back(rng() % values);
      t.conditions.push_back(row);
      t.decision.push_back(rng() % 3);
    }
    auto r = analyse_decision_table(t);
    EXPECT_EQ(r.reducts, brute_reducts(t)) << "trial " << trial;
  }
}

TEST(KMeans1D, EqualsBruteForce) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + trial % 8, k = 1 + trial % 4;
    std::vector<double> x(n);
    for (auto &v : x) v = static_cast<double>(rng() % 20) / 4;
    auto km = kmeans_1d(x, k);
    // Brute force over every labelling with k labels.
    double best = 1e300;
    std::vector<int> lab(n, 0);
    for (int64_t code = 0, total = static_cast<int64_t>(std::pow(k, n)); code < total; ++code) {
      int64_t c = code;
      for (int i = 0; i < n; ++i) lab[i] = static_cast<int>(c % k), c /= k;
      double sse = 0;
      for (int g = 0; g < k; ++g) {
        double s = 0, cnt = 0;
        for (int i = 0; i < n; ++i)
          if (lab[i] == g) s += x[i], ++cnt;
        if (!cnt) continue;
        for (int i = 0; i < n; ++i)
          if (lab[i] == g) sse += (x[i] - s / cnt) * (x[i] - s / cnt);
      }
      best = std::min(best, sse);
    }
    EXPECT_NEAR(km.sse, best, 1e-9) << "trial " << trial;
    // Clusters are contiguous and ordered by centre.
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (x[i] < x[j]) {
          EXPECT_LE(km.label[i], km.label[j]);
        }
  }
}

TEST(KMeans1D, SeverityCategories) {
  // The paper's Fig. 12 shape: two very high, one high, the rest lower.
  std::vector<double> crnm = {0.01, 0.02, 0.01, 0.0, 0.1, 0.09, 0.01, 0.3, 0.0, 0.01, 0.41, 0.02, 0.01, 0.41};
  auto s = severity_categories(crnm);
  EXPECT_EQ(s[10], 4);
  EXPECT_EQ(s[13], 4);
  EXPECT_EQ(s[7], 3);
  EXPECT_EQ(s[3], 0);
  EXPECT_EQ(severity_categories({1, 1, 1}), (std::vector<int>{0, 0, 0}));
}

TEST(SimplifiedOptics, GroupsAndIsolatedPoints) {
  RowMatrix p(6, 2);
  p << 10, 10, 10.2, 10, 10, 10.1, 20, 20, 20.5, 20, 50, 0;
  PivotDistances pd(p, {1, 1});
  auto lab = simplified_optics(pd, iota_ids(6), {}, {0.1, 0}, LocalReducer{p});
  EXPECT_EQ(lab, (std::vector<int64_t>{0, 0, 0, 3, 3, 5}));
  // count > 1 needs two neighbours: the pair at 20 splits into isolated points.
  PivotDistances pd2(p, {1, 1});
  lab = simplified_optics(pd2, iota_ids(6), {}, {0.1, 1}, LocalReducer{p});
  EXPECT_EQ(lab, (std::vector<int64_t>{0, 0, 0, 3, 4, 5}));
  // count > 2 needs three: every point is isolated.
  PivotDistances pd3(p, {1, 1});
  lab = simplified_optics(pd3, iota_ids(6), {}, {0.1, 2}, LocalReducer{p});
  EXPECT_EQ(lab, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
}

TEST(PivotDistances, UpdatesEqualRecomputation) {
  std::mt19937 rng(3);
  std::normal_distribution<double> d(0, 1);
  RowMatrix p(50, 7);
  for (int i = 0; i < 50; ++i)
    for (int j = 0; j < 7; ++j) p(i, j) = d(rng);
  std::vector<uint8_t> base = {1, 1, 1, 1, 0, 0, 1};
  PivotDistances pd(p, base);
  std::vector<double> pivot(p.row(3).data(), p.row(3).data() + 7);
  ColumnChange ch{{1}, {5}};
  auto got = pd.distances(3, pivot, ch);
  for (int i = 0; i < 50; ++i) {
    double s = 0;
    for (int j : {0, 2, 3, 5, 6}) s += (p(i, j) - pivot[j]) * (p(i, j) - pivot[j]);
    EXPECT_NEAR(got[i], s, 1e-9);
  }
  auto tile = squared_distance_tile(p, p);
  EXPECT_NEAR(tile(3, 7), (p.row(3) - p.row(7)).squaredNorm(), 1e-9);
  EXPECT_NEAR(tile(5, 5), 0.0, 1e-9);
}

TEST(FullOptics, ReachabilityOrderingAndExtraction) {
  RowMatrix p(6, 2);
  p << 10, 10, 10.2, 10, 10, 10.1, 20, 20, 20.5, 20, 50, 0;
  OpticsOrdering ord;
  auto lab = full_optics(p, {1, 1}, iota_ids(6), FullOpticsParams{2, 1.0}, LocalReducer{p}, &ord);
  EXPECT_EQ(lab, (std::vector<int64_t>{0, 0, 0, 3, 3, 5}));
  EXPECT_EQ(ord.order, (std::vector<int64_t>{0, 2, 1, 3, 4, 5}));  // nearest first, ties to the lower id
  EXPECT_TRUE(std::isinf(ord.reachability[0]));
  EXPECT_NEAR(ord.reachability[1], 0.1, 1e-12);
  // A radius below every distance: all isolated; above all: one cluster.
  EXPECT_EQ(full_optics(p, {1, 1}, iota_ids(6), FullOpticsParams{2, 0.05}, LocalReducer{p}),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(full_optics(p, {1, 1}, iota_ids(6), FullOpticsParams{2, 100}, LocalReducer{p}),
            (std::vector<int64_t>(6, 0)));
}

// Ranks that behave alike group whatever their vectors' length: two nearly idle ranks
// 0.019 apart whose vectors are short (an unbalanced LAMMPS box) split under the paper's
// radius (a share of the pivot's or the mean length) but group under a radius that is a
// share of the spread of the vectors; the busy ranks stay apart from them.
TEST(SimplifiedOptics, SpreadRadiusGroupsShortVectors) {
  RowMatrix pts(4, 2);
  pts << 0.150, 0.020, 0.155, 0.025, 0.010, 0.004, 0.022, 0.019;
  const std::vector<uint8_t> base(2, 1);
  const auto ids = iota_ids(4);
  OpticsParams paper{0.1, 0};
  paper.length_floor = 0.085;  // the mean length
  PivotDistances pd1(pts, base);
  const auto split = simplified_optics(pd1, ids, {}, paper, LocalReducer{pts});
  EXPECT_EQ(split, (std::vector<int64_t>{0, 0, 2, 3}));
  OpticsParams scale_free = paper;
  scale_free.min_radius = 0.3 * 0.0754;  // spread_fraction x the largest distance from the mean
  PivotDistances pd2(pts, base);
  const auto grouped = simplified_optics(pd2, ids, {}, scale_free, LocalReducer{pts});
  EXPECT_EQ(grouped, (std::vector<int64_t>{0, 0, 2, 2}));
}
