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
  const double rows[14][5] = {{S, 85, 85, F, D}, {S, 80, 90, T, D}, {O, 83, 78, F, P}, {R, 70, 96, F, P},
                              {R, 68, 80, F, P}, {R, 65, 70, T, D}, {O, 64, 65, T, P}, {S, 72, 95, F, D},
                              {S, 69, 70, F, P}, {R, 75, 80, F, P}, {S, 75, 70, T, P}, {O, 72, 90, T, P},
                              {O, 81, 75, F, P}, {R, 71, 80, T, D}};
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
  const double g =
      entropy({9, 5}) - (5.0 / 14 * entropy({2, 3}) + 4.0 / 14 * entropy({4, 0}) + 5.0 / 14 * entropy({3, 2}));
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
  EXPECT_EQ(sunny.threshold, 75);                                       // a training value, not the midpoint 77.5
  EXPECT_EQ(t.nodes[static_cast<size_t>(sunny.children[0])].label, 0);  // <= 75: Play (2)
  EXPECT_EQ(t.nodes[static_cast<size_t>(sunny.children[1])].label, 1);  // > 75: Don't (3)
  const Node &overcast = t.nodes[static_cast<size_t>(root.children[1])];
  EXPECT_EQ(overcast.attribute, -1);
  EXPECT_EQ(overcast.label, 0);
  EXPECT_EQ(overcast.counts[0], 4);
  const Node &rain = t.nodes[static_cast<size_t>(root.children[2])];
  EXPECT_EQ(rain.attribute, 3);                                        // windy
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

// ---- Vetter's features, normalisation and training figures (kernels/message_class.h)

#include "kernels/message_class.h"

namespace vt = perfsift::kernels::vetter;

TEST(Vetter, MessageDurationFormulas) {
  // Blocking receive: Msg Dur = (Recv.TS + Recv.DUR) - Send.TS.
  vt::TransferTiming t;
  t.send_enter = 1000, t.send_exit = 1300;
  t.recv_enter = 500, t.recv_exit = 2100;
  t.bytes = 64;
  EXPECT_EQ(vt::send_duration(t), 300);
  EXPECT_EQ(vt::send_wait_duration(t), 0);  // blocking: no completion
  EXPECT_EQ(vt::recv_duration(t), 1600);
  EXPECT_EQ(vt::recv_wait_duration(t), 0);
  EXPECT_EQ(vt::message_duration(t), 1100);
  // Nonblocking receive: Msg Dur = (Wait.TS + Wait.DUR) - Send.TS; Isend's wait counts too.
  t.send_nonblocking = true, t.send_wait_enter = 1400, t.send_wait_exit = 1900;
  t.recv_nonblocking = true, t.recv_exit = 600, t.recv_wait_enter = 3000, t.recv_wait_exit = 3250;
  EXPECT_EQ(vt::send_wait_duration(t), 500);
  EXPECT_EQ(vt::recv_wait_duration(t), 250);
  EXPECT_EQ(vt::message_duration(t), 2250);
  const auto f = vt::raw_features(t);
  EXPECT_EQ(f[vt::kSendType], 1);
  EXPECT_EQ(f[vt::kRecvType], 1);
  EXPECT_EQ(f[vt::kMsgSize], 64);
  EXPECT_EQ(f[vt::kMsgDur], 2250);
}

TEST(Vetter, NormalisationByTheNormalClassPerSize) {
  vt::Normalizer n;
  auto normal = [&](double bytes, double sdur, double rdur) {
    std::array<double, vt::kFeatures> r{};
    r[vt::kMsgSize] = bytes, r[vt::kSendDur] = sdur, r[vt::kRecvDur] = rdur, r[vt::kMsgDur] = rdur;
    n.add_normal(r);
  };
  normal(4, 100, 200);
  normal(4, 300, 200);  // mean send dur at 4 B: 200
  normal(16, 400, 800);
  n.finish();
  EXPECT_DOUBLE_EQ(n.baseline(vt::kSendDur, 0, 4), 200);
  EXPECT_DOUBLE_EQ(n.baseline(vt::kSendDur, 0, 8), 300);        // halfway in log2(size) between 4 and 16
  EXPECT_DOUBLE_EQ(n.baseline(vt::kSendDur, 0, 1 << 20), 400);  // clamped above
  EXPECT_DOUBLE_EQ(n.baseline(vt::kSendDur, 1, 4), 0);          // no isend measured
  std::array<double, vt::kFeatures> app{};
  app[vt::kMsgSize] = 16, app[vt::kSendDur] = 1200, app[vt::kRecvDur] = 400, app[vt::kRecvWaitDur] = 50;
  const auto f = n.normalise(app);
  EXPECT_DOUBLE_EQ(f[vt::kSendDur], 3.0);
  EXPECT_DOUBLE_EQ(f[vt::kRecvDur], 0.5);
  EXPECT_DOUBLE_EQ(f[vt::kRecvWaitDur], 0);  // a blocking receive's wait has no baseline
  EXPECT_DOUBLE_EQ(f[vt::kMsgSize], 16);     // raw, as in the paper
}

TEST(Vetter, ConfusionMatrixArithmeticOfTable2) {
  // The paper's Table 2 (training data), rows actual, columns predicted, in its order:
  // normal, late send, late rcv, late rcv post, late rcv wait, late send post, late send wait.
  const int64_t t2[7][7] = {{786, 4, 3, 3, 2, 14, 28}, {13, 406, 0, 0, 0, 0, 0},   {21, 0, 399, 0, 0, 0, 0},
                            {48, 1, 0, 314, 55, 0, 2}, {48, 0, 0, 127, 245, 0, 1}, {20, 0, 0, 0, 0, 397, 3},
                            {16, 0, 1, 0, 0, 9, 394}};
  vt::ConfusionMatrix m(7);
  for (size_t i = 0; i < 7; ++i)
    for (size_t j = 0; j < 7; ++j) m.n[i][j] = t2[i][j];
  EXPECT_EQ(m.total(), 3360);
  EXPECT_EQ(m.correct(), 2941);
  EXPECT_NEAR(m.accuracy(), 0.8753, 1e-4);  // the paper's 87.5 %
  const double recall[7] = {0.936, 0.969, 0.950, 0.748, 0.582, 0.945, 0.938};
  const double precision[7] = {0.826, 0.988, 0.990, 0.707, 0.811, 0.945, 0.921};
  const int64_t columns[7] = {952, 411, 403, 444, 302, 420, 428};
  for (size_t c = 0; c < 7; ++c) {
    EXPECT_NEAR(m.recall(c), recall[c], 5e-4) << c;
    EXPECT_NEAR(m.precision(c), precision[c], 5e-4) << c;
    EXPECT_EQ(m.column_total(c), columns[c]) << c;
  }
  EXPECT_EQ(m.row_total(0), 840);
}

TEST(Vetter, CrossValidationOfASeparableSetIsPerfect) {
  // Late sends are long receives; normal ones are not: every fold must learn that.
  auto d = vt::empty_dataset();
  for (int i = 0; i < 60; ++i) {
    const bool late = i % 3 == 0;
    const double row[vt::kFeatures] = {0,
                                       1.0 + (i % 5) * 0.01,
                                       0,
                                       0,
                                       late ? 20.0 + i : 1.0 + (i % 4) * 0.02,
                                       0,
                                       4.0 * (1 << (i % 6)),
                                       late ? 1.0 : 1.1};
    d.x.insert(d.x.end(), row, row + vt::kFeatures);
    d.y.push_back(late ? vt::kLateSend : vt::kNormal);
  }
  const auto cv = vt::cross_validate(d, 10);
  EXPECT_EQ(cv.total(), 60);
  EXPECT_EQ(cv.correct(), 60);
  EXPECT_EQ(cv.row_total(vt::kLateSend), 20);
}
