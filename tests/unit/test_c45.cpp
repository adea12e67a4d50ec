// C4.5 known answers: Quinlan's golf data and the book's pessimistic-error figures.
#include <gtest/gtest.h>

#include "kernels/c45.h"

using namespace perfsift::kernels::c45;

namespace {

// outlook (sunny, overcast, rain), temperature, humidity, windy (false, true) -> Play / Don't.
Dataset golf() {
  Dataset d;
  d.attributes = {"outlook", "temperature", "humidity", "windy"};
  d.nominal = {1, 0, 0, 1};
  d.values = {{"sunny", "overcast", "rain"}, {}, {}, {"false", "true"}};
  d.classes = {"Play", "Don't Play"};
  const double S = 0, O = 1, R = 2, F = 0, T = 1;
  const int P = 0, D = 1;
  const double rows[14][5] = {{S, 85, 85, F, D}, {S, 80, 90, T, D}, {O, 83, 78, F, P}, {R, 70, 96, F, P}, {R, 68, 80, F, P},
                              {R, 65, 70, T, D}, {O, 64, 65, T, P}, {S, 72, 95, F, D}, {S, 69, 70, F, P}, {R, 75, 80, F, P},
                              {S, 75, 70, T, P}, {O, 72, 90, T, P}, {O, 81, 75, F, P}, {R, 71, 80, T, D}};
  for (const auto &r : rows) {
    d.x.insert(d.x.end(), r, r + 4);
    d.y.push_back(static_cast<int32_t>(r[4]));
  }
  return d;
}

}  // namespace

TEST(C45, EntropyAndGainOfTheGolfData) {
  EXPECT_NEAR(entropy({9, 5}), 0.9403, 1e-4);
  // Gain(outlook) = 0.9403 - (5/14 I(2,3) + 4/14 I(4,0) + 5/14 I(3,2)) = 0.2467.
  const double g = entropy({9, 5}) - (5.0 / 14 * entropy({2, 3}) + 4.0 / 14 * entropy({4, 0}) + 5.0 / 14 * entropy({3, 2}));
  EXPECT_NEAR(g, 0.2467, 1e-4);
  EXPECT_NEAR(g / entropy({5, 4, 5}), 0.1564, 1e-4);  // split info 1.5774
  EXPECT_NEAR(entropy({9, 5}) - (8.0 / 14 * entropy({6, 2}) + 6.0 / 14 * entropy({3, 3})), 0.0481, 1e-4);  // windy
}

TEST(C45, PessimisticErrorsAtTheDefaultConfidence) {
  EXPECT_NEAR(deviate(0.25), 0.6925, 1e-9);
  EXPECT_NEAR(add_errors(6, 0, 0.25) / 6, 0.2063, 1e-4);
  EXPECT_NEAR(add_errors(9, 0, 0.25) / 9, 0.1428, 1e-4);
  EXPECT_NEAR(add_errors(1, 0, 0.25) / 1, 0.7500, 1e-4);
  EXPECT_NEAR((1 + add_errors(16, 1, 0.25)) / 16, 0.1567, 1e-4);  // C4.5's approximation (exact binomial: 0.1596)
  // The book's example: the subtree predicts 6 x 0.206 + 9 x 0.143 + 0.750 = 3.273 errors, a
  // leaf of 16 cases with one error 2.51: the subtree is pruned.
  const double subtree = add_errors(6, 0, 0.25) + add_errors(9, 0, 0.25) + add_errors(1, 0, 0.25);
  EXPECT_NEAR(subtree, 3.273, 2e-3);
  EXPECT_LT(1 + add_errors(16, 1, 0.25), subtree);
}

TEST(C45, GolfTreeIsQuinlans) {
  const Dataset d = golf();
  const Tree t = train(d);
  const Node &root = t.nodes[0];
  ASSERT_EQ(root.attribute, 0);  // outlook
  ASSERT_EQ(root.children.size(), 3u);
  const Node &sunny = t.nodes[static_cast<size_t>(root.children[0])];
  EXPECT_EQ(sunny.attribute, 2);  // humidity
  EXPECT_TRUE(sunny.continuous);
  EXPECT_EQ(sunny.threshold, 75);  // a training value, not the midpoint 77.5
  EXPECT_EQ(t.nodes[static_cast<size_t>(sunny.children[0])].label, 0);  // <= 75: Play (2)
  EXPECT_EQ(t.nodes[static_cast<size_t>(sunny.children[1])].label, 1);  // > 75: Don't (3)
  const Node &overcast = t.nodes[static_cast<size_t>(root.children[1])];
  EXPECT_EQ(overcast.attribute, -1);
  EXPECT_EQ(overcast.label, 0);
  EXPECT_EQ(overcast.counts[0], 4);
  const Node &rain = t.nodes[static_cast<size_t>(root.children[2])];
  EXPECT_EQ(rain.attribute, 3);  // windy
  EXPECT_EQ(t.nodes[static_cast<size_t>(rain.children[1])].label, 1);  // true: Don't (2)
  EXPECT_EQ(t.nodes[static_cast<size_t>(rain.children[0])].label, 0);  // false: Play (3)
  EXPECT_EQ(t.leaves(), 5);
  // Every training case is classified right; a pure leaf of 4 has confidence 1 - U(0,4).
  for (size_t c = 0; c < d.cases(); ++c) EXPECT_EQ(t.classify(&d.x[c * 4]), d.y[c]);
  double conf = 0;
  const double overcast_case[4] = {1, 70, 70, 0};
  EXPECT_EQ(t.classify(overcast_case, &conf), 0);
  EXPECT_NEAR(conf, 1 - add_errors(4, 0, 0.25) / 4, 1e-12);
}

TEST(C45, NoiseIsPrunedAway) {
  // One attribute decides the class; a second is noise that fits one mislabelled case.
  Dataset d;
  d.attributes = {"signal", "noise"};
  d.nominal = {0, 0};
  d.values = {{}, {}};
  d.classes = {"a", "b"};
  for (int i = 0; i < 40; ++i) {
    d.x.push_back(i < 20 ? 1.0 : 2.0);
    d.x.push_back(i % 7);
    d.y.push_back(i < 20 ? 0 : 1);
  }
  d.y[3] = 1;  // a mislabelled case
  const Tree pruned = train(d), full = train(d, {0.25, 2, false});
  EXPECT_EQ(pruned.nodes[0].attribute, 0);
  EXPECT_EQ(pruned.leaves(), 2);
  EXPECT_GE(full.leaves(), pruned.leaves());
}
