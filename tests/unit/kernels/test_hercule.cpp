// Hercule's known answers: the thesis's relative-diagnosis arithmetic (Sweep3D, 5.3.2),
// pipeline depths, the master-worker decomposition on a hand-made trace, recognition.
#include <gtest/gtest.h>

#include "kernels/hercule.h"

using namespace perfsift::kernels::hercule;

TEST(Hercule, StrongScalingExpectationOfSweep3D) {
  // Run1 32 ranks, run2 36 ranks with speedup 15.84: run1 is expected to reach 14.08.
  EXPECT_NEAR(expected_strong_scaling(15.84, 32, 36), 14.08, 5e-3);
  EXPECT_NEAR(expected_strong_scaling(19.906, 32, 36), 17.694, 5e-3);  // computation
  EXPECT_NEAR(expected_strong_scaling(1.172, 32, 36), 1.042, 5e-3);    // communication
  EXPECT_NEAR(expected_strong_scaling(20.702, 32, 36), 18.402, 5e-3);  // computation in pipeline
  EXPECT_NEAR(expected_strong_scaling(12.405, 32, 36), 11.03, 5e-3);   // other computation
  // The group slower than expected most: computation 16.035 / 17.694 < communication 1.115 / 1.042.
  EXPECT_LT(16.035 / expected_strong_scaling(19.906, 32, 36), 1.115 / expected_strong_scaling(1.172, 32, 36));
}

TEST(Hercule, WeakScalingDifferencesOfSweep3D) {
  EXPECT_NEAR(difference_percent(11.489, 9.815), 17.055, 5e-3);          // runtime
  EXPECT_NEAR(difference_percent(2.603, 0.924), 181.71, 5e-2);           // communication
  EXPECT_NEAR(difference_percent(1.332, 0.231), 476.62, 5e-2);           // waiting time in pipeline
  EXPECT_NEAR(difference_percent(0.244, 0.017), 1335.29, 5e-2);          // pipeline empty-up
  EXPECT_NEAR(difference_percent(8.886, 8.891) / 100, -5.624e-4, 1e-6);  // the table prints this row as a fraction
  EXPECT_DOUBLE_EQ(difference_percent(12288, 12288), 0);
  // The table's additivity: communication in pipeline = effective + waiting.
  EXPECT_NEAR(0.943 + 1.332, 2.275, 1e-12);
}

TEST(Hercule, PipelineDepth) {
  EXPECT_EQ(pipeline_depth(6, 8), 13);  // the thesis's 48-rank run
  EXPECT_EQ(pipeline_depth(2, 2), 3);   // its 4-rank run
  EXPECT_EQ(pipeline_depth(4, 2), 5);
}

TEST(Hercule, MasterWorkerDecompositionOfAHandMadeTrace) {
  // The master is ready at 5. Worker A asks at 1 and gets its first task at 8 (setup
  // 5..8); asks again at 18, the master serves B until 22, sets A's task up until 25;
  // asks a last time at 35 and gets the stop at 36; enters MPI_Finalize at 37 and leaves
  // at 50. B's last task ends at 40; the master enters MPI_Finalize at 45.
  Worker a;
  a.start = 0;
  a.finish = 35;
  a.end = 50;
  a.mpi = {{1, 8}, {18, 25}, {35, 36}, {37, 50}};
  a.setup = {{5, 8}, {22, 25}};
  a.tasks = 2;
  const Master m{5, 45};
  const Decomposition d = decompose(a, m, 40);
  EXPECT_EQ(d.tasks, 2);
  EXPECT_EQ(d.compute, 22);  // outside MPI: 0..1, 8..18, 25..35, 36..37
  EXPECT_EQ(d.elapsed, 50);
  EXPECT_DOUBLE_EQ(d.efficiency(), 0.44);
  EXPECT_EQ(d.seq, 9);    // 1..5 waiting for the master's start; 40..45 its finalisation
  EXPECT_EQ(d.setup, 6);  // 5..8 and 22..25
  EXPECT_EQ(d.bn, 9);     // 18..22 (B served first) and 45..50
  EXPECT_EQ(d.final, 4);  // 35..36 and 37..40: B still working
  EXPECT_EQ(d.wait(), 28);
  EXPECT_EQ(d.loss(), 28);  // all of A's time in MPI
  // Communication comes out of the waiting, bn first.
  a.comm = 10;
  const Decomposition c = decompose(a, m, 40);
  EXPECT_EQ(c.comm, 10);
  EXPECT_EQ(c.bn, 0);
  EXPECT_EQ(c.setup, 5);
  EXPECT_EQ(c.wait() + c.comm, c.loss());
}

TEST(Hercule, TasksInFlightAreNotCountedTwice) {
  // A task farm keeping two tasks in flight: the worker computes 0..10 and 10..20 on tasks
  // it holds, overlapping replies and requests; its waits are only its time in MPI
  // (20..24, the master setting its task up 21..24, and MPI_Finalize 30..31), and however
  // much communication the model prices, the terms never exceed the lost time.
  Worker a;
  a.start = 0;
  a.finish = 29;
  a.end = 31;
  a.mpi = {{10, 10}, {20, 24}, {29, 29}, {30, 31}, {20, 22}};
  a.setup = {{21, 24}, {0, 3}};
  a.comm = 1000;
  a.tasks = 3;
  const Decomposition d = decompose(a, Master{0, 30}, 29);
  EXPECT_EQ(d.loss(), 5);
  EXPECT_EQ(d.compute, 26);
  EXPECT_EQ(d.comm, 5);
  EXPECT_EQ(d.wait(), 0);
  EXPECT_LE(d.wait() + d.comm, d.loss());
}

TEST(Hercule, TurnsBalanceRequestsAndReplies) {
  // A request, a task and a result per task, then a stop: two messages to the master for
  // one from it, but as many turns each way.
  std::vector<Turn> mw3;
  for (int64_t k = 0; k < 4; ++k)
    for (int32_t w : {1, 2}) {
      mw3.push_back({w, true, 10 * k});
      mw3.push_back({w, false, 10 * k + 2});
      mw3.push_back({w, true, 10 * k + 5});
    }
  for (int32_t w : {1, 2}) mw3.push_back({w, false, 50});  // the stops
  EXPECT_DOUBLE_EQ(turn_balance(mw3), 1.0);
  // A gather: only to the master.
  EXPECT_DOUBLE_EQ(turn_balance({{1, true, 0}, {1, true, 1}, {2, true, 0}}), 0.0);
  int64_t until = INT64_MIN;
  EXPECT_EQ(add_uncovered(until, 0, 10), 10);
  EXPECT_EQ(add_uncovered(until, 0, 12), 2);  // a Waitall's second message: only beyond the first
  EXPECT_EQ(add_uncovered(until, 0, 5), 0);
  EXPECT_EQ(add_uncovered(until, 20, 25), 5);
}

TEST(Hercule, RecognitionFromTheCommunicationMatrix) {
  // Master 2 serving four workers, requests and replies.
  std::vector<PairCount> mw;
  for (int32_t w : {0, 1, 3, 4}) {
    mw.push_back({w, 2, 10});
    mw.push_back({2, w, 10});
  }
  const auto s = score_master_worker(mw, 5);
  EXPECT_EQ(s.master, 2);
  EXPECT_DOUBLE_EQ(s.confidence, 1.0);
  EXPECT_LT(best_grid(mw, 4).neighbour_share, 1.0);
  // A 3 x 2 grid passing data east and south.
  std::vector<PairCount> wf;
  for (int32_t r = 0; r < 6; ++r) {
    if (r % 3 < 2) wf.push_back({r, r + 1, 4});
    if (r / 3 < 1) wf.push_back({r, r + 3, 4});
  }
  const auto g = best_grid(wf, 6);
  EXPECT_EQ(g.px, 3);
  EXPECT_EQ(g.py, 2);
  EXPECT_DOUBLE_EQ(g.neighbour_share, 1.0);
  EXPECT_LT(score_master_worker(wf, 6).confidence, 0.5);
}

TEST(Hercule, ForwardingTellsAPipelineFromAHaloExchange) {
  // Wavefront: receive from west and north, send east and south, per sweep.
  const std::vector<Completion> wave = {{'R', 1}, {'R', 4}, {'S', 3}, {'S', 6}, {'R', 1}, {'R', 4}, {'S', 3}, {'S', 6}};
  EXPECT_EQ(forwarding_blocks(wave), (std::pair<int64_t, int64_t>{2, 2}));
  // Halo: send to and receive from the same neighbours.
  const std::vector<Completion> halo = {{'S', 1}, {'S', 3}, {'R', 1}, {'R', 3}, {'S', 1}, {'S', 3}, {'R', 1}, {'R', 3}};
  EXPECT_EQ(forwarding_blocks(halo), (std::pair<int64_t, int64_t>{0, 1}));
}

TEST(Hercule, ExchangesAreNotForwarding) {
  // Binary swap with Sendrecv: exchanges with one partner, then another.
  const std::vector<Completion> swap = {{'X', -1}, {'X', -1}};
  EXPECT_EQ(forwarding_blocks(swap), (std::pair<int64_t, int64_t>{0, 2}));
}

TEST(Hercule, AllToAllIsNotDivideAndConquer) {
  // 4 ranks, every pair talking (hpcc's RandomAccess): 2 of 3 partners are bisection
  // partners, but each rank meets 3 partners where recursion meets one per level (2).
  std::vector<PairCount> all;
  for (int32_t a = 0; a < 4; ++a)
    for (int32_t b = 0; b < 4; ++b)
      if (a != b) all.push_back({a, b, 100});
  const auto s = score_divide_and_conquer(all, 4);
  EXPECT_NEAR(s.pow2, 2.0 / 3.0, 1e-12);
  EXPECT_EQ(s.few_partners, 0);
  EXPECT_EQ(s.confidence, 0);
  EXPECT_EQ(s.median_pair_messages, 200);
  // A 2 x 2 halo (row and column partners only), 600 steps: bisection partners only, one
  // per level; what tells it from a recursion is the 1,200 messages per pair (recognise()).
  std::vector<PairCount> halo;
  for (auto [a, b] : std::vector<std::pair<int32_t, int32_t>>{{0, 1}, {2, 3}, {0, 2}, {1, 3}})
    halo.push_back({a, b, 600}), halo.push_back({b, a, 600});
  const auto h = score_divide_and_conquer(halo, 4);
  EXPECT_DOUBLE_EQ(h.confidence, 1.0);
  EXPECT_EQ(h.median_pair_messages, 1200);
}

TEST(Hercule, RecursiveHalvingIsDivideAndConquer) {
  EXPECT_EQ(split_level(5, 4, 8), 0);
  EXPECT_EQ(split_level(1, 5, 8), 2);
  EXPECT_EQ(split_level(1, 2, 8), -1);
  // On 2^k ranks the bisection partners are r XOR 2^l.
  for (int32_t a = 0; a < 16; ++a)
    for (int32_t b = 0; b < 16; ++b) {
      const uint32_t x = static_cast<uint32_t>(a ^ b);
      const int32_t bit = x && !(x & (x - 1)) ? __builtin_ctz(x) : -1;
      EXPECT_EQ(split_level(a, b, 16), bit) << a << " " << b;
    }
  // 6 ranks: [0,6) pairs 0-3, 1-4, 2-5 (level 2); [0,3) pairs 0-1 (or 0-2, rounding up), [3,6) 3-4
  // (or 3-5) (level 1); [1,3) 1-2, [4,6) 4-5 (level 0).
  EXPECT_EQ(split_level(2, 5, 6), 2);
  EXPECT_EQ(split_level(0, 1, 6), 1);
  EXPECT_EQ(split_level(0, 2, 6), 1);
  EXPECT_EQ(split_level(4, 5, 6), 0);
  EXPECT_EQ(split_level(2, 3, 6), -1);
  std::vector<PairCount> six;
  for (auto [a, b] : std::vector<std::pair<int32_t, int32_t>>{{0, 3}, {1, 4}, {2, 5}, {0, 1}, {3, 4}, {1, 2}, {4, 5}})
    six.push_back({a, b, 2}), six.push_back({b, a, 2});
  EXPECT_DOUBLE_EQ(score_divide_and_conquer(six, 6).pow2, 1.0);
  EXPECT_DOUBLE_EQ(score_divide_and_conquer(six, 6).levels, 1.0);
  // 8 ranks splitting at distances 4, 2, 1 (each rank meets one partner per level).
  std::vector<PairCount> dc;
  for (int32_t r = 0; r < 8; ++r)
    for (int32_t d : {4, 2, 1}) dc.push_back({r, r ^ d, 2});
  const auto s = score_divide_and_conquer(dc, 8);
  EXPECT_DOUBLE_EQ(s.pow2, 1.0);
  EXPECT_DOUBLE_EQ(s.levels, 1.0);
  // A ring of 8 has one-bit distances only for even-odd neighbours, at level 0.
  std::vector<PairCount> ring;
  for (int32_t r = 0; r < 8; ++r) ring.push_back({r, (r + 1) % 8, 1});
  EXPECT_LT(score_divide_and_conquer(ring, 8).confidence, 0.3);
}

TEST(Hercule, MappedRegionsReplaceTheDerivedSetupAndCompute) {
  // As the hand-made trace, but the user's regions say the master's setup of A's first
  // task took 2 of the 3 units and A computed 9 of the 10 units of each gap.
  Worker a;
  a.start = 0;
  a.finish = 35;
  a.end = 50;
  a.mpi = {{1, 8}, {18, 25}, {35, 36}, {37, 50}};
  a.setup = {{6, 8}, {22, 25}};
  a.compute = 18;
  a.tasks = 2;
  const Decomposition d = decompose(a, Master{5, 45}, 40);
  EXPECT_EQ(d.setup, 2 + 3);  // mapped, then derived
  EXPECT_EQ(d.bn, 9 + 1);     // the unit the master spent outside its setup region
  EXPECT_EQ(d.compute, 18);
  EXPECT_EQ(d.wait(), 28);  // the split changes, not the total
  EXPECT_EQ(d.loss(), 32);
}
