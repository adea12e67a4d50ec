// Known-answer tests of the LogGPS replay: hand-built DAGs whose predicted times follow
// by hand from L, o, g, G, S and s (figures worked out in the comments).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "kernels/replay.h"
#include "kernels/replay_cuts.h"
#include "kernels/replay_pass.h"

using namespace perfsift::kernels;
using namespace perfsift::kernels::replay;

namespace {

// The tests' generator of deterministic programs: a 64-bit LCG, rnd(m) in [0, m).
struct Lcg {
  uint64_t x;
  int64_t operator()(int64_t m) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((x >> 33) % static_cast<uint64_t>(m));
  }
};

// L = 1000, os = 100 + 1/byte, or = 200, g = 50, G = 2/byte, S = s = 1000.
LogGPS params() {
  LogGPS p;
  p.L = 1000;
  p.os0 = 100;
  p.os1 = 1;
  p.or0 = 200;
  p.or1 = 0;
  p.g = 50;
  p.G = 2;
  p.S = 1000;
  p.s = 1000;
  return p;
}

Scenario base() {
  Scenario sc;
  sc.net = params();
  return sc;
}

// params() for pairs of one node; between nodes L = 5000, os = 300 + 1/byte, or = 400,
// g = 700, G = 3/byte. Ranks alternate between two nodes unless `node_of` says otherwise.
LogGPS two_level(int32_t ranks, std::vector<int32_t> node_of = {}) {
  LogGPS off = params();
  off.L = 5000;
  off.os0 = 300;
  off.or0 = 400;
  off.g = 700;
  off.G = 3;
  if (node_of.empty())
    for (int32_t r = 0; r < ranks; ++r) node_of.push_back(r % 2);
  return two_level_network(params(), off, node_of);
}

// `sc` with event `i` of rank `r` not waiting; with a snapshot, resumed from it at the
// event's start (and stopped once back on it when `stop`).
Scenario zero_waited(const Scenario &sc, int r, size_t i, const Snapshot *snap = nullptr, bool stop = false) {
  Scenario z = sc;
  z.zero_wait_rank = r;
  z.zero_wait_event = static_cast<int64_t>(i);
  if (snap) {
    z.resume = snap;
    z.resume_at = snap->timings()[static_cast<size_t>(r)][i].enter;
    z.stop_when_converged = stop;
  }
  return z;
}

// Whether a replay under `sc` stopped early, back on its snapshot.
bool stops_early(const std::vector<RankProgram> &ranks, const Scenario &sc, int32_t nranks) {
  Engine engine(ranks, sc, nranks, false);
  while (!engine.finished()) {
    engine.advance();
    if (!engine.finished()) engine.release_stuck();
  }
  return engine.converged();
}

}  // namespace

TEST(LogGPS, CostFormulas) {
  const LogGPS p = params();
  EXPECT_EQ(p.send_overhead(100), 200);
  EXPECT_EQ(p.flight(100), 200 + 1000 + 200);          // os(100) + L + 100 G
  EXPECT_EQ(p.flight(2000), 2100 + 1000 + 4000 + 50);  // two packets: one extra g
  EXPECT_EQ(p.injection_gap(100), 250);
  EXPECT_EQ(collective_rounds(3, false), 2);
  EXPECT_EQ(collective_rounds(8, false), 3);
  EXPECT_EQ(collective_rounds(8, true), 7);
  EXPECT_EQ(collective_cost(p, 2, 8), 2 * (100 + 200 + 1000) + 16);
}

TEST(ProgramBuilder, FillsTheColumnsTheEngineReads) {
  ProgramBuilder b(2);
  auto [si, ri] = b.message(0, 1, 300);
  RankProgramBuilder &r0 = b.rank(0);
  const int32_t slot = r0.add_request_slot();
  const int32_t coll = r0.add_collective(collective_call(instance_id(3, 1), 2, CollectiveFlow::FromRoot, 1, 8, true));
  EXPECT_EQ(r0.event(10, {}, 77), 0);  // local: keeps its measured duration
  r0.begin_event(20);
  r0.post_send(si, slot);
  EXPECT_EQ(r0.items_in_event(), 1u);
  EXPECT_EQ(r0.end_event(), 1);
  EXPECT_EQ(r0.event(30, {{ItemType::Complete, slot}, {ItemType::Collective, coll}}), 2);
  b.rank(1).event(5, {{ItemType::Recv, ri}});
  const int32_t lost = b.rank(1).add_recv(44);  // unmatched: keeps its measured duration
  b.rank(1).event(6, {{ItemType::Recv, lost}});
  const std::vector<RankProgram> p = b.finish();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].rank, 0);
  EXPECT_EQ(p[1].rank, 1);
  ASSERT_EQ(p[0].events.size(), 3u);
  EXPECT_EQ(p[0].events[0].items, 0);
  EXPECT_EQ(p[0].owns[static_cast<size_t>(p[0].events[0].first_item)], 77);
  EXPECT_EQ(p[0].events[1].gap, 20);
  EXPECT_EQ(p[0].events[1].first_item, 0);
  EXPECT_EQ(p[0].events[2].first_item, 1);
  EXPECT_EQ(p[0].events[2].items, 2);
  EXPECT_EQ(p[0].items[0].type, ItemType::PostSend);
  EXPECT_EQ(p[0].items[0].slot, slot);
  EXPECT_EQ(p[0].request_slots, 1);
  EXPECT_EQ(p[0].sends[0].dst, 1);
  EXPECT_EQ(p[0].sends[0].recv_index, ri);
  EXPECT_EQ(p[1].recvs[0].src, 0);
  EXPECT_EQ(p[1].recvs[0].bytes(), 300);
  EXPECT_EQ(p[1].recvs[1].own_unmatched(), 44);
  EXPECT_EQ(p[0].colls[0].rounds, collective_rounds(2, true));
  EXPECT_EQ(p[0].colls[0].root, 1);
  EXPECT_FALSE(p[0].laned());
}

TEST(ProgramBuilder, LanesFromTheFirstEventOffLaneZero) {
  RankProgram p;
  RankProgramBuilder b(p, 4);
  b.event(1, {}, 1);
  b.event(2, {}, 1);
  EXPECT_FALSE(b.laned_so_far());
  b.event(3, {}, 1, 2);
  EXPECT_EQ(p.lane, (std::vector<uint8_t>{0, 0, 2}));
  for (int64_t e = 0; e < 3; ++e) b.add_step(e, false);
  EXPECT_EQ(p.steps.capacity(), 6u);           // two per event, reserved at the first step
  EXPECT_THROW(b.finish(), std::logic_error);  // a completion step per event missing
  for (int64_t e = 0; e < 3; ++e) b.add_step(e, true);
  b.finish();
  EXPECT_EQ(p.steps, (std::vector<int32_t>{0, 2, 4, 1, 3, 5}));
  EXPECT_TRUE(p.laned());
  EXPECT_EQ(p.rank, 4);
}

TEST(ProgramBuilder, RefusesItemsOutsideAnEvent) {
  RankProgram p;
  RankProgramBuilder b(p, 0);
  EXPECT_THROW(b.complete(0), std::logic_error);
  EXPECT_THROW(b.end_event(), std::logic_error);
  b.begin_event(0);
  EXPECT_THROW(b.begin_event(0), std::logic_error);
  EXPECT_THROW(b.finish(), std::logic_error);
  b.end_event(5);
  b.finish();
  EXPECT_EQ(p.events.size(), 1u);
}

TEST(Replay, EagerMessageLateReceiverDoesNotWait) {
  ProgramBuilder b(2);
  auto [si, ri] = b.message(0, 1, 100);
  b.rank(0).event(1000, {{ItemType::Send, si}});
  b.rank(1).event(5000, {{ItemType::Recv, ri}});
  auto r = replay_serial(b.programs(), base(), true);
  // sender: starts 1000, returns after os(100) = 200 -> 1200. Arrival 1000 + 1400 = 2400 < 5000,
  // so the receiver returns at 5000 + or = 5200 without waiting.
  EXPECT_EQ(r.end_times[0], 1200);
  EXPECT_EQ(r.end_times[1], 5200);
  EXPECT_EQ(r.timings[1][0].exit - r.timings[1][0].nowait_exit, 0);
  EXPECT_EQ(r.makespan, 5200);
}

TEST(Replay, EagerMessageEarlyReceiverWaits) {
  ProgramBuilder b(2);
  auto [si, ri] = b.message(0, 1, 100);
  b.rank(0).event(1000, {{ItemType::Send, si}});
  b.rank(1).event(500, {{ItemType::Recv, ri}});
  auto r = replay_serial(b.programs(), base(), true);
  // receiver posts at 500, data arrives at 2400: exit 2600, waited 1900.
  EXPECT_EQ(r.end_times[1], 2600);
  EXPECT_EQ(r.timings[1][0].exit - r.timings[1][0].nowait_exit, 1900);
}

TEST(Replay, RendezvousSenderWaitsForTheReceiver) {
  ProgramBuilder b(2);
  auto [si, ri] = b.message(0, 1, 2000);  // > S: synchronous
  b.rank(0).event(1000, {{ItemType::Send, si}});
  b.rank(1).event(5000, {{ItemType::Recv, ri}});
  auto r = replay_serial(b.programs(), base(), true);
  // handshake reaches the receiver at 1000 + os0 + L = 2100 < 5000, so h = 5000.
  // sender: h + L + os(2000) = 5000 + 1000 + 2100 = 8100.
  // receiver: h + L + flight(2000) + or = 5000 + 1000 + 7150 + 200 = 13350.
  EXPECT_EQ(r.end_times[0], 8100);
  EXPECT_EQ(r.end_times[1], 13350);
  // The sender waited h - (start + handshake) = 5000 - 2100.
  EXPECT_EQ(r.timings[0][0].exit - r.timings[0][0].nowait_exit, 2900);
}

TEST(Replay, PairwiseSendrecvOfLargeMessagesDoesNotDeadlock) {
  ProgramBuilder b(2);
  auto [s01, r01] = b.message(0, 1, 2000);
  auto [s10, r10] = b.message(1, 0, 2000);
  b.rank(0).event(1000, {{ItemType::Send, s01}, {ItemType::Recv, r10}});
  b.rank(1).event(3000, {{ItemType::Send, s10}, {ItemType::Recv, r01}});
  auto r = replay_serial(b.programs(), base(), false);
  // 0 -> 1: h = max(1000 + 1100, 3000) = 3000; receive at 1 ends 3000 + 1000 + 7150 + 200 = 11350.
  // 1 -> 0: h = max(3000 + 1100, 1000) = 4100; receive at 0 ends 4100 + 8350 = 12450.
  EXPECT_EQ(r.end_times[0], 12450);
  EXPECT_EQ(r.end_times[1], 11350);
  EXPECT_EQ(r.released, 0);
}

TEST(Replay, NonblockingMessagesCompleteInTheWait) {
  ProgramBuilder b(2);
  auto [si, ri] = b.message(0, 1, 100);
  const int32_t send_slot = b.rank(0).add_request_slot(), recv_slot = b.rank(1).add_request_slot();
  b.rank(0).event(0, {{ItemType::PostSend, si, send_slot}});
  b.rank(0).event(100, {{ItemType::Complete, send_slot}});
  b.rank(1).event(0, {{ItemType::PostRecv, ri, recv_slot}});
  b.rank(1).event(300, {{ItemType::Complete, recv_slot}});
  auto r = replay_serial(b.programs(), base(), true);
  // Isend at 0: returns after os0 = 100; the wait at 200 finds the eager send done (200).
  EXPECT_EQ(r.end_times[0], 200);
  // Irecv at 0 returns at 200 (or0); the wait enters at 500; data arrived at 1400 -> 1600.
  EXPECT_EQ(r.timings[1][0].exit, 200);
  EXPECT_EQ(r.end_times[1], 1600);
}

TEST(Replay, OffNodeMessagesTravelOnTheOffNodeParameters) {
  // Rank 0 sends 100 bytes to rank 2 (another node), then to rank 1 (its own node).
  ProgramBuilder b(3);
  auto [s2, r2] = b.message(0, 2, 100);
  auto [s1, r1] = b.message(0, 1, 100);
  b.rank(0).event(1000, {{ItemType::Send, s2}});
  b.rank(0).event(0, {{ItemType::Send, s1}});
  b.rank(1).event(0, {{ItemType::Recv, r1}});
  b.rank(2).event(0, {{ItemType::Recv, r2}});
  Scenario sc = base();
  sc.net = two_level(3, {0, 0, 1});
  auto r = replay_serial(b.programs(), sc, true);
  // Off-node send at 1000: returns after os' = 300 + 100 = 400 (1400); the next injection
  // no earlier than 1000 + g' + G' 100 = 2000. Rank 2's data arrives 1000 + 400 + L' 5000
  // + G' 100 = 6700, taken by 6700 + or' 400 = 7100.
  EXPECT_EQ(r.timings[0][0].exit, 1400);
  EXPECT_EQ(r.end_times[2], 7100);
  // The on-node send starts at 2000 and costs os = 200 (2200); its data arrives at
  // 2000 + 200 + L 1000 + G 200 = 3400, taken by 3600.
  EXPECT_EQ(r.end_times[0], 2200);
  EXPECT_EQ(r.end_times[1], 3600);
  // All on one node: every message on params() (rank 2 by 2600, rank 1 by 2850).
  const auto one = replay_serial(b.programs(), base(), true);
  EXPECT_EQ(one.end_times[2], 2600);
  EXPECT_EQ(one.end_times[1], 2850);
  // The one-pass replay prices each pair alike, beside the one-level network.
  Scenario flat = base();
  const auto pass = replay_pass_serial(b.programs(), {&sc, &flat});
  ASSERT_TRUE(pass.has_value());
  EXPECT_EQ((*pass)[0], 7100);
  EXPECT_EQ((*pass)[1], 2850);
  // A collective's rounds cross nodes: priced on the off-node parameters.
  EXPECT_EQ(collective_cost(sc.net, 2, 0), 2 * (300 + 400 + 5000));
  EXPECT_EQ(collective_cost(base().net, 2, 0), 2 * (100 + 200 + 1000));
  EXPECT_EQ(LogGPS::ideal().between(0, 2).L, 0);
}

TEST(Replay, CollectivesSynchroniseByFlow) {
  ProgramBuilder b(3);
  const int64_t gaps[3] = {100, 300, 200};
  for (int r = 0; r < 3; ++r) {
    int32_t all = b.rank(r).add_collective(collective_call(instance_id(0, 0), 3, CollectiveFlow::All, -1, 8));
    int32_t bcast = b.rank(r).add_collective(collective_call(instance_id(0, 1), 3, CollectiveFlow::FromRoot, 2, 8));
    int32_t reduce = b.rank(r).add_collective(collective_call(instance_id(0, 2), 3, CollectiveFlow::ToRoot, 0, 8));
    b.rank(r).event(gaps[r], {{ItemType::Collective, all}});
    b.rank(r).event(r == 2 ? 1000 : 0, {{ItemType::Collective, bcast}});
    b.rank(r).event(r == 1 ? 5000 : 0, {{ItemType::Collective, reduce}});
  }
  auto res = replay_serial(b.programs(), base(), true);
  // Allreduce: all leave at max enter 300 + 2 rounds * 1300 + 8 G = 2916.
  for (int r = 0; r < 3; ++r) EXPECT_EQ(res.timings[r][0].exit, 2916);
  // Bcast from 2 (enters 3916): the root leaves at 3916 + 2616; the others wait for it.
  for (int r = 0; r < 3; ++r) EXPECT_EQ(res.timings[r][1].exit, 3916 + 2616);
  // Reduce to 0: non-roots leave after os(8) = 108; the root waits for rank 1 (6532 + 5000).
  EXPECT_EQ(res.timings[2][2].exit, 6532 + 108);
  EXPECT_EQ(res.timings[1][2].exit, 11532 + 108);
  EXPECT_EQ(res.timings[0][2].exit, 11532 + 2616);
}

TEST(Replay, ZeroWaitAndZeroEvent) {
  ProgramBuilder b(2);
  auto [si, ri] = b.message(0, 1, 100);
  b.rank(0).event(1000, {{ItemType::Send, si}});
  b.rank(1).event(500, {{ItemType::Recv, ri}});
  b.rank(1).event(100, {}, 50);
  Scenario sc = base();
  sc.zero_wait_rank = 1;
  sc.zero_wait_event = 0;
  auto r = replay_serial(b.programs(), sc, false);
  EXPECT_EQ(r.end_times[1], 500 + 200 + 100 + 50);
  Scenario z = base();
  z.event_flags = {{}, {kZeroEvent, 0}};
  r = replay_serial(b.programs(), z, false);
  EXPECT_EQ(r.end_times[1], 500 + 100 + 50);
}

TEST(Replay, BalancedStepFollowsTheArithmetic) {
  // Two ranks compute 10 and 30 units then meet in a barrier: balancing the step
  // (both compute 20) moves the barrier from 30 to 20.
  ProgramBuilder b(2);
  for (int r = 0; r < 2; ++r)
    b.rank(r).event(r == 0 ? 10000 : 30000,
                    {{ItemType::Collective,
                      b.rank(r).add_collective(collective_call(instance_id(0, 0), 2, CollectiveFlow::All, -1, 0))}});
  Scenario sc = base();
  sc.net = LogGPS::ideal();
  auto before = replay_serial(b.programs(), sc, false);
  sc.gaps = {{20000}, {20000}};
  auto after = replay_serial(b.programs(), sc, false);
  EXPECT_EQ(before.makespan, 30000);
  EXPECT_EQ(after.makespan, 20000);
}

TEST(Replay, MissingPartnerIsReleasedNotHung) {
  ProgramBuilder b(2);
  // Rank 1 waits in a collective rank 0 never reaches (it crashed).
  b.rank(0).event(100, {}, 10);
  b.rank(1).event(100, {{ItemType::Collective,
                         b.rank(1).add_collective(collective_call(instance_id(0, 0), 2, CollectiveFlow::All, -1, 0))}});
  auto r = replay_serial(b.programs(), base(), false);
  EXPECT_EQ(r.released, 1);
  EXPECT_EQ(r.end_times[1], 100 + 1300);
}

TEST(Replay, SplitOwnershipGivesTheSerialAnswer) {
  // A ring of 4 ranks, each sending to the next and receiving from the previous, three
  // rounds, then an allreduce: two engines owning {0,1} and {2,3} exchange outboxes.
  ProgramBuilder b(4);
  for (int round = 0; round < 3; ++round)
    for (int r = 0; r < 4; ++r) {
      auto [si, ri] = b.message(r, (r + 1) % 4, round == 1 ? 900 : 64);
      (void)ri;
      b.rank(r).event(1000 * (r + 1) + round * 7, {{ItemType::Send, si}});
    }
  // Receives after the sends (indices follow message order: recv k of rank r came from r-1).
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 3; ++k) b.rank(r).event(10, {{ItemType::Recv, k}});
  for (int r = 0; r < 4; ++r)
    b.rank(r).event(5, {{ItemType::Collective,
                         b.rank(r).add_collective(collective_call(instance_id(0, 0), 4, CollectiveFlow::All, -1, 8))}});
  const auto serial = replay_serial(b.programs(), base(), true);
  ASSERT_EQ(serial.released, 0);

  std::vector<RankProgram> lo(b.programs().begin(), b.programs().begin() + 2),
      hi(b.programs().begin() + 2, b.programs().end());
  Scenario sc = base();
  Engine e1(lo, sc, 4, true, true), e2(hi, sc, 4, true, true);
  for (int round = 0; round < 100 && !(e1.finished() && e2.finished()); ++round) {
    e1.advance();
    e2.advance();
    auto o1 = e1.take_outbox(), o2 = e2.take_outbox();
    for (auto &p : o1.sends) e2.apply(p);
    for (auto &p : o1.recvs) e2.apply(p);
    for (auto &a : o1.arrivals) e2.apply(a);
    for (auto &p : o2.sends) e1.apply(p);
    for (auto &p : o2.recvs) e1.apply(p);
    for (auto &a : o2.arrivals) e1.apply(a);
  }
  ASSERT_TRUE(e1.finished() && e2.finished())
      << e1.unfinished() << " " << e2.unfinished() << " serial released " << serial.released;
  EXPECT_EQ(e1.end_times()[0], serial.end_times[0]);
  EXPECT_EQ(e1.end_times()[1], serial.end_times[1]);
  EXPECT_EQ(e2.end_times()[0], serial.end_times[2]);
  EXPECT_EQ(e2.end_times()[1], serial.end_times[3]);
  EXPECT_EQ(e2.timings()[1].back().exit, serial.timings[3].back().exit);
}

TEST(Replay, ThreadsRunSideBySideOnTheirOwnClocks) {
  // Rank 0: its main thread (lane 0) receives from rank 1 while its second thread (lane 1)
  // sends rank 1 the message rank 1 waits for before it answers. One stream per rank
  // would deadlock (the receive first, the send behind it); lanes run side by side.
  ProgramBuilder b(2);
  auto [s01, r01] = b.message(0, 1, 100);
  auto [s10, r10] = b.message(1, 0, 100);
  // Event A on lane 0; event B on lane 1, its first call, from lane 0's entry (1000).
  const int64_t a = b.rank(0).event(1000, {{ItemType::Recv, r10}}, 0, 0);
  const int64_t c = b.rank(0).event(2000, {{ItemType::Send, s01}}, 0, 1);
  // As measured: post A, post B, end B, end A.
  b.rank(0).add_step(a, false);
  b.rank(0).add_step(c, false);
  b.rank(0).add_step(c, true);
  b.rank(0).add_step(a, true);
  b.rank(1).event(500, {{ItemType::Recv, r01}});
  b.rank(1).event(8000, {{ItemType::Send, s10}});
  const auto r = replay_serial(b.programs(), base(), true);
  EXPECT_EQ(r.released, 0);
  // Lane 1 sends at 3000 (exit 3200); arrival 3000 + 1400 = 4400; rank 1 exits its receive
  // at 4600 (waited 3900), sends at 12600; rank 0's receive exits at 14000 + 200.
  EXPECT_EQ(r.timings[0][1].enter, 3000);
  EXPECT_EQ(r.timings[0][1].exit, 3200);
  EXPECT_EQ(r.timings[1][0].exit, 4600);
  EXPECT_EQ(r.timings[1][0].exit - r.timings[1][0].nowait_exit, 3900);
  EXPECT_EQ(r.timings[0][0].enter, 1000);
  EXPECT_EQ(r.timings[0][0].exit, 14200);
  EXPECT_EQ(r.end_times[0], 14200);
  // Split over two engines (the distributed replay), the same times.
  std::vector<RankProgram> lo(b.programs().begin(), b.programs().begin() + 1),
      hi(b.programs().begin() + 1, b.programs().end());
  Scenario sc = base();
  Engine e1(lo, sc, 2, true, true), e2(hi, sc, 2, true, true);
  for (int round = 0; round < 20 && !(e1.finished() && e2.finished()); ++round) {
    e1.advance();
    e2.advance();
    auto o1 = e1.take_outbox(), o2 = e2.take_outbox();
    for (auto &p : o1.sends) e2.apply(p);
    for (auto &p : o1.recvs) e2.apply(p);
    for (auto &p : o2.sends) e1.apply(p);
    for (auto &p : o2.recvs) e1.apply(p);
  }
  ASSERT_TRUE(e1.finished() && e2.finished());
  EXPECT_EQ(e1.timings()[0][0].exit, 14200);
  EXPECT_EQ(e1.end_times()[0], 14200);
}

#include "kernels/domino.h"

TEST(Domino, PaperFigure4PathRunsBackThroughTwoProcesses) {
  // p sends late to q; q, after waiting, computes and sends to r; r waits and ends last
  // (ideal network: times are the computation alone). Events are 0-based here; the
  // paper's e_{q,3} is q's event 2.
  ProgramBuilder b(3);
  const int P = 0, Q = 1, R = 2;
  auto [s_pq, r_pq] = b.message(P, Q, 8);
  auto [s_qr, r_qr] = b.message(Q, R, 8);
  b.rank(P).event(100, {{ItemType::Send, s_pq}});
  b.rank(P).event(0, {}, 10);
  b.rank(Q).event(10, {{ItemType::Recv, r_pq}});
  b.rank(Q).event(0, {}, 5);
  b.rank(Q).event(50, {{ItemType::Send, s_qr}});
  b.rank(R).event(20, {{ItemType::Recv, r_qr}});
  b.rank(R).event(0, {}, 10);
  Scenario sc;
  sc.net = LogGPS::ideal();
  const auto base = replay_serial(b.programs(), sc, true);
  ASSERT_EQ(base.makespan, 165);  // r: receives at 155, computes 10
  const auto partners = domino::program_partners(b.programs(), base.timings);
  const auto rest = domino::rest_bounds(b.programs(), base.timings);
  const auto res =
      domino::find_paths(b.programs(), base.timings, partners, domino::serial_evaluator(b.programs(), sc, rest));
  EXPECT_EQ(res.baseline, 165);
  EXPECT_EQ(res.best, 110);  // q no longer waits for p: p's own 110 remains
  ASSERT_FALSE(res.paths.empty());
  // The path ending at r: e_{r,1} <- e_{q,3}, then e_{q,1} <- e_{p,1} (the paper's naming).
  const domino::Path *from_r = nullptr;
  for (const auto &p : res.paths)
    if (p.rank == R) from_r = &p;
  ASSERT_NE(from_r, nullptr);
  ASSERT_EQ(from_r->steps.size(), 2u);
  EXPECT_EQ(from_r->steps[0].event, (domino::EventRef{R, 0}));
  EXPECT_EQ(from_r->steps[0].partner, (domino::EventRef{Q, 2}));
  EXPECT_EQ(from_r->steps[0].predicted, 155);
  EXPECT_EQ(from_r->steps[1].event, (domino::EventRef{Q, 0}));
  EXPECT_EQ(from_r->steps[1].partner, (domino::EventRef{P, 0}));
  EXPECT_EQ(from_r->steps[1].predicted, 110);
  EXPECT_EQ(from_r->predicted, 110);
  // The longest wait (r's, 135) buys less: 155.
  EXPECT_EQ(res.longest_wait.event, (domino::EventRef{R, 0}));
  EXPECT_EQ(res.longest_wait.wait, 135);
  EXPECT_EQ(res.longest_wait.predicted, 155);
}

namespace {

// A ring of blocking exchanges (even ranks send first), each rank computing `work` ns a
// round with a little jitter.
ProgramBuilder balanced_ring(int P, int rounds, int64_t work) {
  ProgramBuilder b(P);
  Lcg rnd{777};
  auto jitter = [&] { return rnd(40); };
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::pair<int32_t, int32_t>> to_next(static_cast<size_t>(P));
    for (int r = 0; r < P; ++r) to_next[static_cast<size_t>(r)] = b.message(r, (r + 1) % P, 64);
    for (int r = 0; r < P; ++r) {
      const int64_t gap = work + jitter();
      const int32_t send = to_next[static_cast<size_t>(r)].first;
      const int32_t recv = to_next[static_cast<size_t>((r + P - 1) % P)].second;
      if (r % 2 == 0) {
        b.rank(r).event(gap, {{ItemType::Send, send}});
        b.rank(r).event(0, {{ItemType::Recv, recv}});
      } else {
        b.rank(r).event(gap, {{ItemType::Recv, recv}});
        b.rank(r).event(0, {{ItemType::Send, send}});
      }
    }
  }
  return b;
}

domino::Result paths_of(const ProgramBuilder &b, int64_t min_gain) {
  const Scenario sc = base();
  const auto baseline = replay_serial(b.programs(), sc, true);
  const auto partners = domino::program_partners(b.programs(), baseline.timings);
  const auto rest = domino::rest_bounds(b.programs(), baseline.timings);
  domino::Options opt;
  opt.min_gain = min_gain;
  return domino::find_paths(b.programs(), baseline.timings, partners, domino::serial_evaluator(b.programs(), sc, rest),
                            opt);
}

}  // namespace

TEST(Domino, BalancedRingCostsNoReplayBelowTheMeasurableGain) {
  // Every wait of a balanced ring is jitter: no path can gain 0.1 % of the run, and the
  // search replays nothing to say so (it replayed candidate after candidate for gains of
  // nanoseconds, a collective exchange each when distributed).
  const auto ring = balanced_ring(4, 300, 20000);
  const auto all = paths_of(ring, 0);
  EXPECT_GT(all.replays, 50);  // what an unbounded search spends for nothing
  EXPECT_LT(all.baseline - all.best, all.baseline / 1000);
  const auto bounded = paths_of(ring, all.baseline / 1000);
  EXPECT_EQ(bounded.replays, 0);
  EXPECT_TRUE(bounded.paths.empty());
  EXPECT_EQ(bounded.best, bounded.baseline);
  // The longest wait, named for comparison, gains nothing measurable either.
  EXPECT_EQ(bounded.longest_wait.event, all.longest_wait.event);
  EXPECT_LT(all.baseline - all.longest_wait.predicted, all.baseline / 1000);
  EXPECT_EQ(bounded.longest_wait.predicted, bounded.baseline);
}

#include "kernels/message_match.h"

TEST(MessageMatch, NonOvertakingPerTagWithResolvedWildcards) {
  // Rank 0 sends tags 1, 2, 1 to rank 1. Rank 1 posts MPI_ANY_TAG (the status said 2),
  // then two receives of tag 1: each send meets the receive its (tag, number) names.
  MessageCounter sends, recvs;
  ReceiveIndex<int> posted;
  posted.add(recvs.next(0, 0, 1, 2), 0);  // the wildcard receive, resolved to tag 2
  posted.add(recvs.next(0, 0, 1, 1), 1);
  posted.add(recvs.next(0, 0, 1, 1), 2);
  posted.add(recvs.next(0, 0, 1, 9), 3);  // a receive no send meets
  EXPECT_EQ(posted.take(sends.next(0, 0, 1, 1)), 1);
  EXPECT_EQ(posted.take(sends.next(0, 0, 1, 2)), 0);
  EXPECT_EQ(posted.take(sends.next(0, 0, 1, 1)), 2);
  EXPECT_FALSE(posted.take(sends.next(0, 0, 1, 1)).has_value());  // a third tag-1 send: unmatched
  EXPECT_FALSE(posted.take(sends.next(5, 0, 1, 2)).has_value());  // another communicator
  EXPECT_EQ(posted.unmatched(), 1u);
}

// A snapshot borrows the posting events its programs' keeper lends (the replay model's)
// instead of holding its own: the same tables, and a lent table that is not the
// program's stops the snapshot rather than resuming from wrong events.
TEST(Replay, SnapshotBorrowsLentPostingEventsAndRefusesWrongOnes) {
  ProgramBuilder b(3);
  for (int round = 0; round < 3; ++round) {
    for (int r = 0; r < 3; ++r) b.message(r, (r + 1) % 3, 64);
    for (int r = 0; r < 3; ++r) b.rank(r).event(100 * (r + round), {{ItemType::Send, round}, {ItemType::Recv, round}});
    for (int r = 0; r < 3; ++r)
      b.rank(r).event(50, {{ItemType::Collective, b.rank(r).add_collective(collective_call(
                                                      instance_id(0, round), 3, CollectiveFlow::All, -1, 8))}});
  }
  const Scenario sc = base();
  const Snapshot own = replay_snapshot(b.programs(), sc);
  ASSERT_FALSE(own.send_event.borrowed());
  std::vector<std::vector<int32_t>> sends, recvs, colls;
  for (size_t s = 0; s < b.programs().size(); ++s) {
    sends.push_back(own.send_event[s]);
    recvs.push_back(own.recv_event[s]);
    colls.push_back(own.coll_event[s]);
  }
  auto lend = [](const std::vector<std::vector<int32_t>> &t) {
    PostingEvents::Borrowed out;
    for (const auto &v : t) out.push_back(&v);
    return out;
  };
  const auto snapshot_lent = [&] {
    Engine engine(b.programs(), sc, 3, true);
    engine.lend_posting_events(lend(sends), lend(recvs), lend(colls));
    while (!engine.finished()) engine.advance();
    return engine.take_snapshot();
  };
  const Snapshot borrowed = snapshot_lent();
  ASSERT_TRUE(borrowed.send_event.borrowed());
  for (size_t s = 0; s < b.programs().size(); ++s) {
    EXPECT_EQ(borrowed.send_event[s], own.send_event[s]);
    EXPECT_EQ(borrowed.recv_event[s], own.recv_event[s]);
    EXPECT_EQ(borrowed.coll_event[s], own.coll_event[s]);
    EXPECT_EQ(&borrowed.recv_event[s], &recvs[s]) << "held, not borrowed";
    EXPECT_EQ(borrowed.send_partner_exit_max[s], own.send_partner_exit_max[s]);
    EXPECT_EQ(borrowed.open_lag[s], own.open_lag[s]);
  }
  ++recvs[1][0];
  EXPECT_THROW(snapshot_lent(), std::logic_error);
  --recvs[1][0];
  colls[2].pop_back();
  EXPECT_THROW(snapshot_lent(), std::logic_error);
}

TEST(Replay, ResumingFromTheBaselineGivesTheFullReplay) {
  // Every event of a ring with rendezvous and eager messages and a collective, zero-waited
  // once by a full replay and once resumed from the baseline at the event's start.
  ProgramBuilder b(4);
  for (int round = 0; round < 4; ++round) {
    for (int r = 0; r < 4; ++r) {
      auto [si, ri] = b.message(r, (r + 1) % 4, round % 2 ? 2000 : 64);
      (void)si;
      (void)ri;
    }
    for (int r = 0; r < 4; ++r)
      b.rank(r).event(700 * ((r * 3 + round) % 5), {{ItemType::Send, round}, {ItemType::Recv, round}});
    for (int r = 0; r < 4; ++r)
      b.rank(r).event(100 * r, {{ItemType::Collective, b.rank(r).add_collective(collective_call(
                                                           instance_id(0, round), 4, CollectiveFlow::All, -1, 8))}});
  }
  const Scenario sc = base();
  const auto snap = replay_snapshot(b.programs(), sc);
  ASSERT_EQ(replay_serial(b.programs(), sc, false).released, 0);
  int checked = 0;
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < b.rank(r).program().events.size(); ++i) {
      const Scenario full = zero_waited(sc, r, i), resumed = zero_waited(sc, r, i, &snap);
      const auto a = replay_serial(b.programs(), full, true), c = replay_serial(b.programs(), resumed, true);
      ASSERT_EQ(c.released, 0) << "rank " << r << " event " << i;
      ASSERT_EQ(a.makespan, c.makespan) << "rank " << r << " event " << i;
      for (int q = 0; q < 4; ++q)
        for (size_t k = 0; k < a.timings[q].size(); ++k)
          ASSERT_EQ(a.timings[q][k].exit, c.timings[q][k].exit)
              << "event " << q << ":" << k << " zero-waiting " << r << ":" << i << " at " << resumed.resume_at
              << " baseline exit " << snap.timings()[q][k].exit;
      ++checked;
    }
  EXPECT_EQ(checked, 32);
  // Stopping once back on the snapshot gives the same run time for every event.
  int stopped_early = 0;
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < b.rank(r).program().events.size(); ++i) {
      const Scenario full = zero_waited(sc, r, i), quick = zero_waited(sc, r, i, &snap, true);
      stopped_early += stops_early(b.programs(), quick, 4);
      ASSERT_EQ(replay_serial(b.programs(), quick, false).makespan, replay_serial(b.programs(), full, false).makespan)
          << "zero-waiting " << r << ":" << i;
    }
  EXPECT_GT(stopped_early, 0);
  std::printf("%d of 32 candidates stopped once back on the baseline\n", stopped_early);
}

TEST(Replay, StoppingOnTheBaselineKeepsEveryAnswerOnANonblockingRing) {
  // Irecv / Isend / Waitall rounds with uneven computation, large and small messages,
  // and an allreduce every third round: every event zero-waited, full replay against the
  // resumed replay that stops once back on the baseline.
  const int P = 5, rounds = 9;
  ProgramBuilder b(P);
  Lcg rnd{12345};
  for (int round = 0; round < rounds; ++round) {
    for (int r = 0; r < P; ++r) b.message(r, (r + 1) % P, round % 4 == 1 ? 3000 : 100);
    for (int r = 0; r < P; ++r) {
      RankProgramBuilder &p = b.rank(r);
      const int32_t s0 = p.add_request_slot(), s1 = p.add_request_slot();
      b.rank(r).event(rnd(5000), {{ItemType::PostRecv, round, s0}});
      b.rank(r).event(rnd(300), {{ItemType::PostSend, round, s1}});
      b.rank(r).event(rnd(2000), {{ItemType::Complete, s0}, {ItemType::Complete, s1}});
      if (round % 3 == 2)
        b.rank(r).event(
            rnd(1000), {{ItemType::Collective, b.rank(r).add_collective(collective_call(instance_id(0, round), P,
                                                                                        CollectiveFlow::All, -1, 8))}});
    }
  }
  const Scenario sc = base();
  const auto snap = replay_snapshot(b.programs(), sc);
  int n = 0, stopped = 0;
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < b.rank(r).program().events.size(); ++i) {
      const Scenario full = zero_waited(sc, r, i), quick = zero_waited(sc, r, i, &snap, true);
      stopped += stops_early(b.programs(), quick, P);
      ASSERT_EQ(replay_serial(b.programs(), quick, false).makespan, replay_serial(b.programs(), full, false).makespan)
          << "zero-waiting " << r << ":" << i;
      ++n;
    }
  std::printf("%d of %d candidates stopped once back on the baseline\n", stopped, n);
  EXPECT_GT(stopped, 0);
}

namespace {

// A random program of blocking exchanges (send and receive in one call, eager or
// rendezvous), nonblocking rounds completed by one Waitall, in the same round or some
// rounds later (across collectives), all-to-all, rooted and to-root collectives, and local
// calls, with uneven computation.
ProgramBuilder random_program(int P, int rounds, uint64_t seed) {
  ProgramBuilder b(P);
  Lcg rnd{seed};
  int64_t coll = 0;
  std::vector<std::vector<Item>> open(static_cast<size_t>(P));  // completions of requests left open
  auto complete_open = [&] {
    for (int r = 0; r < P; ++r) {
      auto &o = open[static_cast<size_t>(r)];
      if (!o.empty()) b.rank(r).event(rnd(500), o);
      o.clear();
    }
  };
  for (int round = 0; round < rounds; ++round) {
    if (rnd(3) == 0) complete_open();
    const int kind = static_cast<int>(rnd(6));
    const int shift = 1 + static_cast<int>(rnd(P - 1));
    const int64_t bytes = rnd(2) ? 3000 : 100;
    if (kind == 0 || kind == 1) {
      std::vector<std::pair<int32_t, int32_t>> out(static_cast<size_t>(P)), in(static_cast<size_t>(P));
      for (int r = 0; r < P; ++r) {
        auto [si, ri] = b.message(r, (r + shift) % P, bytes);
        out[static_cast<size_t>(r)].first = si;
        in[static_cast<size_t>((r + shift) % P)].second = ri;
      }
      for (int r = 0; r < P; ++r) {
        const int32_t si = out[static_cast<size_t>(r)].first, ri = in[static_cast<size_t>(r)].second;
        if (kind == 0) {
          b.rank(r).event(rnd(4000), {{ItemType::Send, si}, {ItemType::Recv, ri}});
        } else {
          RankProgramBuilder &p = b.rank(r);
          const int32_t s0 = p.add_request_slot(), s1 = p.add_request_slot();
          b.rank(r).event(rnd(3000), {{ItemType::PostRecv, ri, s0}});
          b.rank(r).event(rnd(300), {{ItemType::PostSend, si, s1}});
          b.rank(r).event(rnd(2000), {}, rnd(500));
          b.rank(r).event(rnd(1000), {{ItemType::Complete, s0}, {ItemType::Complete, s1}});
        }
      }
    } else if (kind == 2 || kind == 3) {
      const CollectiveFlow flow =
          kind == 2 ? CollectiveFlow::All : (rnd(2) ? CollectiveFlow::FromRoot : CollectiveFlow::ToRoot);
      const int32_t root = kind == 2 ? -1 : static_cast<int32_t>(rnd(P));
      const int64_t id = instance_id(0, coll++);
      for (int r = 0; r < P; ++r)
        b.rank(r).event(rnd(5000),
                        {{ItemType::Collective, b.rank(r).add_collective(collective_call(id, P, flow, root, 8))}});
    } else if (kind == 5) {
      // An exchange whose requests stay open across what follows.
      std::vector<int32_t> ri(static_cast<size_t>(P));
      std::vector<int32_t> si(static_cast<size_t>(P));
      for (int r = 0; r < P; ++r) {
        auto [s_, r_] = b.message(r, (r + shift) % P, bytes);
        si[static_cast<size_t>(r)] = s_;
        ri[static_cast<size_t>((r + shift) % P)] = r_;
      }
      for (int r = 0; r < P; ++r) {
        RankProgramBuilder &p = b.rank(r);
        const int32_t s0 = p.add_request_slot(), s1 = p.add_request_slot();
        b.rank(r).event(rnd(1000), {{ItemType::PostRecv, ri[static_cast<size_t>(r)], s0}});
        b.rank(r).event(rnd(300), {{ItemType::PostSend, si[static_cast<size_t>(r)], s1}});
        open[static_cast<size_t>(r)].push_back({ItemType::Complete, s0});
        open[static_cast<size_t>(r)].push_back({ItemType::Complete, s1});
      }
    } else {
      for (int r = 0; r < P; ++r) b.rank(r).event(rnd(2000), {}, rnd(800));
    }
  }
  complete_open();
  return b;
}

// `snap` restricted to the ranks `slots` (program order): what their owner holds.
Snapshot owned_part(const Snapshot &whole, const std::vector<RankProgram> &all, const std::vector<size_t> &slots) {
  Snapshot snap = whole;
  snap.hold_partner_values(all);  // a part's partners may be elsewhere
  Snapshot o;
  auto pick = [&](auto &to, const auto &from) {
    for (size_t s : slots) to.push_back(from[s]);
  };
  pick(o.own_timings, snap.timings());
  pick(o.exit_max, snap.exit_max);
  pick(o.send_start, snap.send_start);
  pick(o.recv_post, snap.recv_post);
  pick(o.recv_send_start, snap.recv_send_start);
  pick(o.send_event.own(), snap.send_event);
  pick(o.recv_event.own(), snap.recv_event);
  pick(o.coll_event.own(), snap.coll_event);
  pick(o.slot_event, snap.slot_event);
  pick(o.slot_ref, snap.slot_ref);
  pick(o.recv_consumer, snap.recv_consumer);
  pick(o.send_consumer, snap.send_consumer);
  pick(o.coll_consumer, snap.coll_consumer);
  pick(o.coll_max_enter, snap.coll_max_enter);
  pick(o.coll_root_enter, snap.coll_root_enter);
  pick(o.send_partner_exit_max, snap.send_partner_exit_max);
  pick(o.recv_partner_exit_max, snap.recv_partner_exit_max);
  pick(o.open_lag, snap.open_lag);
  pick(o.end, snap.end);
  o.run_end = snap.run_end;  // global, as the pipeline makes it
  std::vector<int32_t> owned_slot(all.size(), -1);
  for (size_t k = 0; k < slots.size(); ++k) owned_slot[slots[k]] = static_cast<int32_t>(k);
  for (Snapshot::Member m : snap.coll_members)
    if (owned_slot[static_cast<size_t>(m.slot)] >= 0) {
      m.slot = owned_slot[static_cast<size_t>(m.slot)];
      o.coll_members.push_back(m);
    }
  o.index_members();
  return o;
}

// One round's outboxes of `owners` engines (rank r on engine r % owners) delivered to the
// engines owning their ranks, as the pipeline's rounds do; whether anything was delivered.
template <class Replay>
bool exchange_outboxes(std::vector<std::unique_ptr<Replay>> &e, int owners) {
  bool moved = false;
  std::vector<typename Replay::Outbox> box;
  for (auto &x : e) box.push_back(x->take_outbox());
  for (int k = 0; k < owners; ++k)
    for (int j = 0; j < owners; ++j) {
      if (j == k) continue;
      const auto &o = box[static_cast<size_t>(j)];
      Replay &to = *e[static_cast<size_t>(k)];
      for (const auto &p : o.sends)
        if (p.dst % owners == k) to.apply(p), moved = true;
      for (const auto &p : o.recvs)
        if (p.src % owners == k) to.apply(p), moved = true;
      for (const auto &a : o.arrivals) to.apply(a), moved = true;
      if constexpr (requires { o.pulls; })
        for (const auto &p : o.pulls)
          if (p.rank % owners == k) to.apply(p), moved = true;
    }
  return moved;
}

// A full replay on `owners` engines (rank r on engine r % owners) run to its end in rounds;
// false when it got stuck before.
bool finish_split(std::vector<std::unique_ptr<Engine>> &e, int owners) {
  for (int round = 0; round < 100000; ++round) {
    bool moved = false, done = true;
    for (auto &x : e) moved |= x->advance();
    moved |= exchange_outboxes(e, owners);
    for (auto &x : e) done = done && x->finished();
    if (done) return true;
    if (!moved) return false;
  }
  return false;
}

// A resumed, stopping replay of zero-waited `e` on `owners` engines (rank r owned by
// r % owners), exchanging outboxes in rounds as the pipeline does between processes.
int64_t split_resumed_makespan(const std::vector<RankProgram> &all, const Snapshot &snap, const Scenario &zw,
                               int owners, int64_t *rounds_out = nullptr) {
  const int P = static_cast<int>(all.size());
  std::vector<std::vector<RankProgram>> part(static_cast<size_t>(owners));
  std::vector<std::vector<size_t>> slots(static_cast<size_t>(owners));
  for (int r = 0; r < P; ++r) {
    part[static_cast<size_t>(r % owners)].push_back(all[static_cast<size_t>(r)]);
    slots[static_cast<size_t>(r % owners)].push_back(static_cast<size_t>(r));
  }
  std::vector<Snapshot> snaps;
  std::vector<std::vector<BlockDeltaColumn>> rests(static_cast<size_t>(owners));  // by owned slot
  std::vector<std::vector<std::vector<int64_t>>> cuts(static_cast<size_t>(owners));
  std::vector<Scenario> scs;
  for (int k = 0; k < owners; ++k) snaps.push_back(owned_part(snap, all, slots[static_cast<size_t>(k)]));
  for (int k = 0; k < owners; ++k) {
    scs.push_back(zw);
    scs.back().resume = &snaps[static_cast<size_t>(k)];
    if (zw.rest) {
      for (size_t s : slots[static_cast<size_t>(k)]) rests[static_cast<size_t>(k)].push_back((*zw.rest)[s]);
      scs.back().rest = &rests[static_cast<size_t>(k)];
    }
    if (zw.cuts) {
      for (size_t s : slots[static_cast<size_t>(k)]) cuts[static_cast<size_t>(k)].push_back((*zw.cuts)[s]);
      scs.back().cuts = &cuts[static_cast<size_t>(k)];
    }
  }
  std::vector<std::unique_ptr<Engine>> e;
  for (int k = 0; k < owners; ++k)
    e.push_back(std::make_unique<Engine>(part[static_cast<size_t>(k)], scs[static_cast<size_t>(k)], P, false, true));
  for (int64_t round = 0; round < 100000; ++round) {
    bool moved = false;
    for (auto &x : e) moved |= x->advance();
    moved |= exchange_outboxes(e, owners);
    // The reports summed over owners; every owner decides alike (as the pipeline's rounds).
    Engine::RoundReport sum = e[0]->round_report(moved);
    for (size_t k = 1; k < e.size(); ++k) Engine::combine(sum, e[k]->round_report(moved));
    if (rounds_out) *rounds_out = round + 1;
    for (auto &x : e)
      if (x->conflict()) return INT64_MIN;
    int64_t t = 0;
    switch (e[0]->round_end(sum)) {
      case Engine::RoundEnd::Continue:
        continue;
      case Engine::RoundEnd::Abort:
        return INT64_MAX;
      case Engine::RoundEnd::Stuck: {
        int64_t released = 0;
        for (auto &x : e) released += x->release_stuck();
        if (released > 0) continue;
        break;
      }
      case Engine::RoundEnd::Shifted:
        for (auto &x : e) x->stop_shifted(sum.shift_low);
        return e[0]->shifted_makespan();
      case Engine::RoundEnd::Converged:
      case Engine::RoundEnd::Finished:
        for (auto &x : e)
          if (x->aborted()) return INT64_MAX;
        break;
    }
    for (auto &x : e) t = std::max(t, x->converged_makespan());
    return t;
  }
  return -1;
}

}  // namespace

// A baseline replayed split over owners (rank r on r % owners, outboxes exchanged in
// rounds): each owner's snapshot reads every value about a message end whose partner it
// owns as the whole run's snapshot does, whether it holds the rank's values (a partner
// elsewhere) or reads them from the partner (all partners its own).
TEST(Replay, SplitSnapshotsReadPartnerValuesAsTheWholeOne) {
  int compared = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const int P = 4 + static_cast<int>(seed % 4);
    const ProgramBuilder b = random_program(P, 16, seed);
    const Scenario sc = base();
    if (replay_serial(b.programs(), sc, false).released) continue;
    const Snapshot whole = replay_snapshot(b.programs(), sc);
    std::vector<int32_t> whole_slot(static_cast<size_t>(P));
    for (int r = 0; r < P; ++r) whole_slot[static_cast<size_t>(r)] = r;
    for (int owners : {1, 2, 3}) {
      std::vector<std::vector<RankProgram>> part(static_cast<size_t>(owners));
      for (int r = 0; r < P; ++r) part[static_cast<size_t>(r % owners)].push_back(b.programs()[static_cast<size_t>(r)]);
      std::vector<std::unique_ptr<Engine>> e;
      for (int k = 0; k < owners; ++k)
        e.push_back(std::make_unique<Engine>(part[static_cast<size_t>(k)], sc, P, true, owners > 1));
      ASSERT_TRUE(finish_split(e, owners)) << "seed " << seed << ", " << owners << " owners: stuck";
      for (int k = 0; k < owners; ++k) {
        const Snapshot snap = e[static_cast<size_t>(k)]->take_snapshot();
        const auto &prog = part[static_cast<size_t>(k)];
        std::vector<int32_t> slot_of(static_cast<size_t>(P), -1);
        for (size_t s = 0; s < prog.size(); ++s) slot_of[static_cast<size_t>(prog[s].rank)] = static_cast<int32_t>(s);
        for (size_t s = 0; s < prog.size(); ++s) {
          const auto g = static_cast<size_t>(prog[s].rank);
          for (size_t i = 0; i < prog[s].sends.size(); ++i) {
            const int32_t dst = prog[s].sends[i].dst;
            if (dst < 0 || dst % owners != k) continue;
            ASSERT_EQ(snap.send_partner_exit_max_at(prog, slot_of, s, i),
                      whole.send_partner_exit_max_at(b.programs(), whole_slot, g, i))
                << "seed " << seed << ", rank " << g << " send " << i << ", " << owners << " owners";
            ++compared;
          }
          for (size_t i = 0; i < prog[s].recvs.size(); ++i) {
            const int32_t src = prog[s].recvs[i].src;
            if (src < 0 || src % owners != k) continue;
            ASSERT_EQ(snap.recv_partner_exit_max_at(prog, slot_of, s, i),
                      whole.recv_partner_exit_max_at(b.programs(), whole_slot, g, i))
                << "seed " << seed << ", rank " << g << " receive " << i << ", " << owners << " owners";
            ASSERT_EQ(snap.recv_send_start_at(prog, slot_of, s, i),
                      whole.recv_send_start_at(b.programs(), whole_slot, g, i))
                << "seed " << seed << ", rank " << g << " receive " << i << ", " << owners << " owners";
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 100);
}

namespace {
// Every field of two snapshots of the same owned ranks, the first difference named.
std::string snapshot_difference(const Snapshot &a, const Snapshot &b) {
  const auto timings_equal = [](const std::vector<TimingColumn> &x, const std::vector<TimingColumn> &y) {
    if (x.size() != y.size()) return false;
    for (size_t s = 0; s < x.size(); ++s) {
      if (x[s].size() != y[s].size()) return false;
      for (size_t i = 0; i < x[s].size(); ++i) {
        const EventTiming p = x[s][i], q = y[s][i];
        if (p.enter != q.enter || p.exit != q.exit || p.nowait_exit != q.nowait_exit) return false;
      }
    }
    return true;
  };
  const auto posting = [](const PostingEvents &x, const PostingEvents &y) {
    if (x.size() != y.size()) return false;
    for (size_t s = 0; s < x.size(); ++s)
      if (x[s] != y[s]) return false;
    return true;
  };
  const auto members = [](const Snapshot &x) {
    std::vector<std::tuple<int64_t, int32_t, int32_t, int64_t, int64_t, int64_t, bool, bool>> v;
    for (const auto &m : x.coll_members)
      v.emplace_back(m.instance, m.slot, m.index, m.enter, m.posted_by, m.used_by, m.root, m.has_user);
    return v;
  };
  if (!timings_equal(a.timings(), b.timings())) return "timings";
  if (a.exit_max != b.exit_max) return "exit_max";
  if (a.send_start != b.send_start) return "send_start";
  if (a.recv_post != b.recv_post) return "recv_post";
  if (a.recv_send_start != b.recv_send_start) return "recv_send_start";
  if (!posting(a.send_event, b.send_event) || !posting(a.recv_event, b.recv_event) ||
      !posting(a.coll_event, b.coll_event))
    return "posting events";
  if (a.slot_event != b.slot_event) return "slot_event";
  if (a.slot_ref != b.slot_ref) return "slot_ref";
  if (a.recv_consumer != b.recv_consumer || a.send_consumer != b.send_consumer || a.coll_consumer != b.coll_consumer)
    return "consumers";
  if (a.coll_max_enter != b.coll_max_enter) return "coll_max_enter";
  if (a.coll_root_enter != b.coll_root_enter) return "coll_root_enter";
  if (a.send_partner_exit_max != b.send_partner_exit_max || a.recv_partner_exit_max != b.recv_partner_exit_max)
    return "partner exit_max";
  if (members(a) != members(b) || a.member_instances != b.member_instances || a.member_begin != b.member_begin)
    return "collective members";
  if (a.open_lag != b.open_lag) return "open_lag";
  if (a.end != b.end) return "end";
  if (a.run_end != b.run_end) return "run_end";
  return "";
}
}  // namespace

// The state of a finished replay rebuilt from its timings (a pass records no engine state)
// is the engine's own, field by field: on one owner and split over 2 or 3 (what each owner
// delivered to the others routed to them as a replay round routes it), for the baseline
// and for a question that changes computation and message sizes.
TEST(Replay, SnapshotFromTimingsIsTheEnginesOwn) {
  int compared = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const int P = 3 + static_cast<int>(seed % 5);
    const ProgramBuilder b = random_program(P, 18, seed * 31);
    Scenario changed = base();
    changed.net.L = 2100;
    changed.net.G = 2;
    if (seed % 2 == 0) changed.net = two_level(P);
    changed.gaps.resize(static_cast<size_t>(P));
    changed.send_bytes.resize(static_cast<size_t>(P));
    for (int r = 0; r < P; ++r) {
      for (const Event &e : b.programs()[static_cast<size_t>(r)].events)
        changed.gaps[static_cast<size_t>(r)].push_back(e.gap / 2 + 7 * r);
      for (const SendMessage &m : b.programs()[static_cast<size_t>(r)].sends)
        changed.send_bytes[static_cast<size_t>(r)].push_back(m.bytes * 3 / 2);
    }
    for (const Scenario &sc : {base(), changed}) {
      if (replay_serial(b.programs(), sc, false).released) continue;
      for (int owners : {1, 2, 3}) {
        std::vector<std::vector<RankProgram>> part(static_cast<size_t>(owners));
        std::vector<Scenario> own_sc(static_cast<size_t>(owners), sc);
        for (auto &x : own_sc) x.gaps.clear(), x.send_bytes.clear();
        for (int r = 0; r < P; ++r) {
          const size_t k = static_cast<size_t>(r % owners);
          part[k].push_back(b.programs()[static_cast<size_t>(r)]);
          if (!sc.gaps.empty()) own_sc[k].gaps.push_back(sc.gaps[static_cast<size_t>(r)]);
          if (!sc.send_bytes.empty()) own_sc[k].send_bytes.push_back(sc.send_bytes[static_cast<size_t>(r)]);
        }
        std::vector<std::unique_ptr<Engine>> e;
        for (int k = 0; k < owners; ++k)
          e.push_back(std::make_unique<Engine>(part[static_cast<size_t>(k)], own_sc[static_cast<size_t>(k)], P, true,
                                               owners > 1));
        ASSERT_TRUE(finish_split(e, owners)) << "seed " << seed << ", " << owners << " owners: stuck";
        std::vector<Snapshot> want;
        std::vector<std::vector<std::vector<int64_t>>> starts;
        std::vector<Engine::Outbox> delivered;
        for (int k = 0; k < owners; ++k) {
          const auto &prog = part[static_cast<size_t>(k)];
          want.push_back(e[static_cast<size_t>(k)]->take_snapshot());
          starts.push_back(replayed_send_starts(prog, want.back().timings(), own_sc[static_cast<size_t>(k)]));
          delivered.push_back(
              delivered_elsewhere(prog, want.back().timings(), starts.back(), P, own_sc[static_cast<size_t>(k)]));
        }
        for (int k = 0; k < owners; ++k) {
          Engine::Outbox in;  // what the other owners delivered to this one's ranks
          for (int j = 0; j < owners; ++j) {
            if (j == k) continue;
            for (const auto &x : delivered[static_cast<size_t>(j)].sends)
              if (x.dst % owners == k) in.sends.push_back(x);
            for (const auto &x : delivered[static_cast<size_t>(j)].recvs)
              if (x.src % owners == k) in.recvs.push_back(x);
            for (const auto &x : delivered[static_cast<size_t>(j)].arrivals) in.arrivals.push_back(x);
          }
          const Snapshot &w = want[static_cast<size_t>(k)];
          const auto got =
              snapshot_from_timings(part[static_cast<size_t>(k)], w.timings(), starts[static_cast<size_t>(k)], P, in);
          ASSERT_TRUE(got.has_value()) << "seed " << seed << ", " << owners << " owners";
          EXPECT_EQ(snapshot_difference(*got, w), "") << "seed " << seed << ", " << owners << " owners";
          ++compared;
        }
      }
    }
  }
  EXPECT_GT(compared, 100);
  // A message end named by two others is the replay's order to resolve: no snapshot.
  ProgramBuilder twice(3);
  auto [s0, r0] = twice.message(0, 2, 64);
  auto [s1, r1] = twice.message(1, 2, 64);
  twice.rank(1).match_send(s1, 2, r0);  // both name receive r0
  twice.rank(0).event(10, {{ItemType::Send, s0}});
  twice.rank(1).event(10, {{ItemType::Send, s1}});
  twice.rank(2).event(10, {{ItemType::Recv, r0}});
  twice.rank(2).event(10, {{ItemType::Recv, r1}});
  const auto replayed = replay_serial(twice.programs(), base(), true);
  const auto starts = replayed_send_starts(twice.programs(), replayed.timings, base());
  EXPECT_FALSE(snapshot_from_timings(twice.programs(), replayed.timings, starts, 3, {}).has_value());
  // So is a collective whose members name two roots (each its own rank).
  ProgramBuilder roots(2);
  const int64_t id = instance_id(0, 0);
  for (int r = 0; r < 2; ++r)
    roots.rank(r).event(
        10 + r,
        {{ItemType::Collective, roots.rank(r).add_collective(collective_call(id, 2, CollectiveFlow::FromRoot, r, 8))}});
  const auto rooted = replay_serial(roots.programs(), base(), true);
  const auto none = replayed_send_starts(roots.programs(), rooted.timings, base());
  EXPECT_FALSE(snapshot_from_timings(roots.programs(), rooted.timings, none, 2, {}).has_value());
}

TEST(Replay, ResumedReplaysGiveTheFullAnswerSerialAndSplit) {
  // Every waiting event of random programs zero-waited: the full replay, the resumed
  // replay that stops on the snapshot or at a clean cut, and the same split over 2, 3 or 4
  // owners agree.
  int checked = 0, conflicts = 0, stopped_at_threshold = 0, shifted = 0;
  int64_t candidate_cuts = 0, clean = 0;
  int64_t replayed = 0, full_events = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const int P = 4 + static_cast<int>(seed % 4);
    const ProgramBuilder b = random_program(P, 20, seed);
    Scenario sc = base();
    if (seed % 3 == 0) sc.net = two_level(P);  // off-node pairs on their own parameters
    const auto full_base = replay_serial(b.programs(), sc, true);
    if (full_base.released) continue;
    const auto snap = replay_snapshot(b.programs(), sc);
    const auto rest = domino::rest_bounds(b.programs(), snap.timings());
    const auto cuts = clean_cuts(b.programs(), snap);
    candidate_cuts += CutPlan(b.programs(), snap, P).candidates();
    clean += static_cast<int64_t>(cuts[0].size());
    for (int r = 0; r < P; ++r)
      for (size_t i = 0; i < b.programs()[static_cast<size_t>(r)].events.size(); ++i) {
        const EventTiming t = snap.timings()[static_cast<size_t>(r)][i];
        if (t.exit <= t.nowait_exit) continue;  // no wait to zero (the domino's candidates)
        const Scenario full = zero_waited(sc, r, i);
        Scenario quick = zero_waited(sc, r, i, &snap, true);
        quick.cuts = &cuts;
        const int64_t want = replay_serial(b.programs(), full, false).makespan;
        // A rested member's arrival assumed, then replayed otherwise: again without assuming
        // (and without stopping at clean cuts).
        Scenario careful = quick;
        careful.assume_resting_arrivals = false;
        careful.cuts = nullptr;
        const auto serial = replay_serial(b.programs(), quick, false);
        conflicts += serial.repeated;
        shifted += serial.shifted;
        ASSERT_EQ(serial.makespan, want) << "seed " << seed << " " << r << ":" << i;
        const int owners = 2 + static_cast<int>(seed % 3);
        int64_t split = split_resumed_makespan(b.programs(), snap, quick, owners);
        if (split == INT64_MIN) split = split_resumed_makespan(b.programs(), snap, careful, owners);
        ASSERT_EQ(split, want) << "seed " << seed << " " << r << ":" << i;
        ASSERT_EQ(replay_serial(b.programs(), careful, false).makespan, want)
            << "seed " << seed << " " << r << ":" << i;
        // With a threshold: just above the answer no bound may stop the replay short of it
        // (the leads and the rest bound only prove what holds); at the answer it may stop.
        for (const int64_t slack : {int64_t{1}, int64_t{0}}) {
          Scenario capped = quick;
          capped.rest = &rest;
          capped.abort_at = want + slack;
          Scenario capped_careful = capped;
          capped_careful.assume_resting_arrivals = false;
          const int64_t serial_capped = replay_serial(b.programs(), capped, false).makespan;
          int64_t split_capped = split_resumed_makespan(b.programs(), snap, capped, owners);
          if (split_capped == INT64_MIN)
            split_capped = split_resumed_makespan(b.programs(), snap, capped_careful, owners);
          for (const int64_t got : {serial_capped, split_capped}) {
            if (slack == 1)
              ASSERT_EQ(got, want) << "seed " << seed << " " << r << ":" << i;
            else
              ASSERT_TRUE(got == want || got == INT64_MAX) << "seed " << seed << " " << r << ":" << i << " " << got;
            stopped_at_threshold += slack == 0 && got == INT64_MAX;
          }
        }
        ++checked;
        // What the resumed replay advanced, against what the full replay does.
        Engine engine(b.programs(), quick, P, false);
        engine.set_event_sink([&](int32_t, int64_t, const EventTiming &) { ++replayed; });
        while (!engine.finished()) {
          engine.advance();
          if (!engine.finished()) engine.release_stuck();
        }
        for (const auto &p : b.programs()) full_events += static_cast<int64_t>(p.events.size());
      }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_LT(replayed * 4, full_events);
  EXPECT_GT(stopped_at_threshold, checked / 4);  // the bounds do stop replays at a threshold at the answer
  EXPECT_GT(clean, 0);
  EXPECT_LT(clean, candidate_cuts);  // requests left open across collectives rule cuts out
  EXPECT_GT(shifted, checked / 20);
  // The resumed replays' rank states went back to the thread's spares as fresh ones.
  EXPECT_GT(Engine::spare_state_sets(), 0u);
  EXPECT_TRUE(Engine::spare_states_fresh());
  Engine::release_spare_states();
  std::printf(
      "%d zero-waited events agree (%d replayed again: a rested arrival came otherwise; %d of %d replays stopped at a "
      "threshold at the answer; %d serial ones at a clean cut, %lld of %lld candidate cuts clean); the resumed "
      "replays advanced %lld events, the full ones %lld\n",
      checked, conflicts, stopped_at_threshold, 2 * checked, shifted, static_cast<long long>(clean),
      static_cast<long long>(candidate_cuts), static_cast<long long>(replayed), static_cast<long long>(full_events));
}

TEST(Domino, WaitBoundIsItsDefinitionOnRandomRuns) {
  // WaitBound merges the ranks' steps; here F(t) straight from its definition: each
  // rank's end less the time its calls spent beyond their floors from t on, at most.
  // Every third run, the ranks enter out of order (as ranks calling MPI from several threads).
  int64_t asked = 0, above_first = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const int P = 3 + static_cast<int>(seed % 5);
    const ProgramBuilder b = random_program(P, 20, seed);
    auto timings = replay_serial(b.programs(), base(), true).timings;
    if (seed % 3 == 0)  // neighbours swapped, the last event kept: enters out of order
      for (auto &t : timings) {
        std::vector<EventTiming> v;
        for (size_t i = 0; i < t.size(); ++i) v.push_back(t[i]);
        for (size_t i = 0; i + 2 < v.size(); i += 2) std::swap(v[i], v[i + 1]);
        t = TimingColumn();
        for (const EventTiming &x : v) t.push_back(x);
      }
    const domino::WaitBound bound(b.programs(), timings);
    int64_t first = 0, latest_end = 0;
    std::vector<std::pair<int64_t, int64_t>> steps;  // (enter, F from just after it)
    for (size_t s = 0; s < timings.size(); ++s) {
      const auto &t = timings[s];
      if (t.empty()) continue;
      std::vector<int64_t> above(t.size());
      int64_t total = 0;
      for (size_t i = 0; i < t.size(); ++i)
        total += above[i] =
            std::max<int64_t>(0, t[i].exit - t[i].enter - domino::duration_floor(b.programs()[s], t[i], i));
      latest_end = std::max(latest_end, t.back().exit);
      first = std::max(first, t.back().exit - total);
      int64_t after = total;
      for (size_t i = 0; i < t.size(); ++i)
        if (above[i] > 0) steps.emplace_back(t[i].enter, t.back().exit - (after -= above[i]));
    }
    std::mt19937_64 rng(seed);
    std::vector<domino::RunView::Candidate> batch;  // bounds(): the same, asked all at once
    for (const auto &[enter, f] : steps)
      for (const int64_t at : {enter - 1, enter, enter + 1}) {
        const int64_t wait = static_cast<int64_t>(rng() % 5000);
        int64_t F = first;
        for (const auto &[e, g] : steps)
          if (e < at) F = std::max(F, g);
        above_first += F > first;
        ASSERT_EQ(bound.bound(at, wait), std::max<int64_t>({0, latest_end - wait, F}))
            << "seed " << seed << " at " << at << " wait " << wait;
        batch.push_back({0, wait, at});
        ++asked;
      }
    std::shuffle(batch.begin(), batch.end(), rng);  // in no particular order, as asked
    const std::vector<int64_t> got = bound.bounds(batch);
    ASSERT_EQ(got.size(), batch.size());
    for (size_t k = 0; k < batch.size(); ++k) EXPECT_EQ(got[k], bound.bound(batch[k].enter, batch[k].wait));
  }
  EXPECT_GT(asked, 1000);
  EXPECT_GT(above_first, asked / 10);  // the steps matter, not only the run's end
}

// One-pass replays of W random scenarios (lane l: as measured when l % 4 == 0; random
// events' waits zeroed; random events zeroed; computation gaps changed on a slower network
// with the same synchronous threshold), on one engine and split over 2 or 3 owners: every
// question's every event timing and end equal its own scenario's Engine replay. Returns
// the event timings compared; counts the events zeroed or not waiting into `zeroed`.
template <int W>
int64_t check_one_pass(int64_t &zeroed) {
  int64_t events = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const int P = 3 + static_cast<int>(seed % 4);
    const ProgramBuilder b = random_program(P, 16, seed * 7919 + static_cast<uint64_t>(W));
    std::mt19937_64 rng(seed);
    std::vector<Scenario> sc(static_cast<size_t>(W), base());
    for (size_t l = 0; l < sc.size(); ++l) {
      const size_t kind = l % 4;
      if (kind == 3) {
        sc[l].net.L = 2500 + 100 * static_cast<int64_t>(l);
        sc[l].net.os0 = 300;
        sc[l].net.g = 120;
        sc[l].net.G = 3;
        if (seed % 2 == 0) {  // and off-node pairs on their own
          const LogGPS split = two_level(P);
          sc[l].net = two_level_network(sc[l].net, split.off_node->params, split.off_node->node_of);
        }
      }
      if (kind == 0) continue;
      auto &flags = sc[l].event_flags;
      flags.resize(static_cast<size_t>(P));
      for (int r = 0; r < P; ++r) {
        const size_t n = b.programs()[static_cast<size_t>(r)].events.size();
        if (kind == 3) {
          auto &gaps = sc[l].gaps;
          gaps.resize(static_cast<size_t>(P));
          for (size_t i = 0; i < n; ++i)
            gaps[static_cast<size_t>(r)].push_back(b.programs()[static_cast<size_t>(r)].events[i].gap *
                                                   (1 + (rng() % 3)) / 2);
          continue;
        }
        flags[static_cast<size_t>(r)].assign(n, 0);
        for (size_t i = 0; i < n; ++i)
          if (rng() % 4 == 0) {
            flags[static_cast<size_t>(r)][i] = kind == 1 ? kZeroWait : kZeroEvent;
            ++zeroed;
          }
      }
    }
    std::vector<const Scenario *> pass;
    for (const auto &x : sc) pass.push_back(&x);
    EXPECT_TRUE(pass_fits(b.programs(), pass));
    std::vector<SerialResult> want;
    for (const auto &x : sc) want.push_back(replay_serial(b.programs(), x, true));
    // The serial pass over every rank (whatif's spread questions) gives each makespan.
    const auto serial = replay_pass_serial(b.programs(), pass);
    EXPECT_TRUE(serial.has_value()) << "seed " << seed;
    for (size_t l = 0; serial && l < sc.size(); ++l) EXPECT_EQ((*serial)[l], want[l].makespan) << "seed " << seed;
    for (int owners = 1; owners <= 3; ++owners) {
      // Rank r owned by r % owners; each owner's scenarios hold its ranks' parts.
      std::vector<std::vector<RankProgram>> part(static_cast<size_t>(owners));
      std::vector<std::vector<Scenario>> own_sc(static_cast<size_t>(owners), sc);
      for (int k = 0; k < owners; ++k)
        for (auto &x : own_sc[static_cast<size_t>(k)]) {
          x.event_flags.clear();
          x.gaps.clear();
        }
      for (int r = 0; r < P; ++r) {
        const size_t k = static_cast<size_t>(r % owners);
        part[k].push_back(b.programs()[static_cast<size_t>(r)]);
        for (size_t l = 0; l < sc.size(); ++l) {
          if (!sc[l].event_flags.empty()) own_sc[k][l].event_flags.push_back(sc[l].event_flags[static_cast<size_t>(r)]);
          if (!sc[l].gaps.empty()) own_sc[k][l].gaps.push_back(sc[l].gaps[static_cast<size_t>(r)]);
        }
      }
      std::vector<std::unique_ptr<PassEngine<W>>> e;
      std::vector<std::vector<std::vector<std::vector<EventTiming>>>> seen(static_cast<size_t>(owners));
      for (int k = 0; k < owners; ++k) {
        std::vector<const Scenario *> mine;
        for (const auto &x : own_sc[static_cast<size_t>(k)]) mine.push_back(&x);
        e.push_back(std::make_unique<PassEngine<W>>(part[static_cast<size_t>(k)], mine, P, owners > 1));
        e.back()->record_first_timings();
        auto &got = seen[static_cast<size_t>(k)];
        got.assign(static_cast<size_t>(W), std::vector<std::vector<EventTiming>>(part[static_cast<size_t>(k)].size()));
        for (size_t l = 0; l < static_cast<size_t>(W); ++l)
          e.back()->set_event_sink(
              l, [&got, l](int32_t s, int64_t, const EventTiming &t) { got[l][static_cast<size_t>(s)].push_back(t); });
      }
      for (int round = 0; round < 10000; ++round) {
        bool moved = false;
        for (auto &x : e) moved |= x->advance();
        moved |= exchange_outboxes(e, owners);
        if (!moved) break;
      }
      // The first question's recorded timings are its own replay's.
      std::vector<std::vector<TimingColumn>> first;
      for (auto &x : e) first.push_back(x->take_first_timings());
      for (int r = 0; r < P; ++r) {
        const auto &got = first[static_cast<size_t>(r % owners)][static_cast<size_t>(r / owners)];
        const auto &ref = want[0].timings[static_cast<size_t>(r)];
        EXPECT_EQ(got.size(), ref.size()) << "W " << W << " seed " << seed << " rank " << r;
        size_t same = 0;
        while (same < std::min(got.size(), ref.size()) && got[same].enter == ref[same].enter &&
               got[same].exit == ref[same].exit && got[same].nowait_exit == ref[same].nowait_exit)
          ++same;
        EXPECT_EQ(same, ref.size()) << "W " << W << " seed " << seed << " rank " << r << ": events differ from here";
      }
      for (int r = 0; r < P; ++r) {
        const size_t k = static_cast<size_t>(r % owners), s = static_cast<size_t>(r / owners);
        EXPECT_EQ(e[k]->unfinished(), 0) << "seed " << seed << " owners " << owners;
        for (size_t l = 0; l < static_cast<size_t>(W); ++l) {
          EXPECT_EQ(e[k]->end_times()[s][l], want[l].end_times[static_cast<size_t>(r)])
              << "seed " << seed << " owners " << owners << " question " << l << " rank " << r;
          const auto &got = seen[k][l][s];
          const auto &ref = want[l].timings[static_cast<size_t>(r)];
          EXPECT_EQ(got.size(), ref.size());
          for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
            EXPECT_EQ(got[i].enter, ref[i].enter)
                << "W " << W << " seed " << seed << " question " << l << " rank " << r << " event " << i;
            EXPECT_EQ(got[i].exit, ref[i].exit)
                << "W " << W << " seed " << seed << " question " << l << " rank " << r << " event " << i;
            EXPECT_EQ(got[i].nowait_exit, ref[i].nowait_exit);
          }
          events += static_cast<int64_t>(got.size());
        }
      }
    }
  }
  return events;
}

TEST(Replay, OnePassGivesEachScenariosOwnReplaySerialAndSplit) {
  // Two to eight questions per pass (whatif's widths); a lost partner stops the pass
  // (blocked for good) instead of releasing it.
  int64_t zeroed = 0;
  const int64_t events = check_one_pass<2>(zeroed) + check_one_pass<4>(zeroed) + check_one_pass<8>(zeroed);
  if (::testing::Test::HasFailure()) return;
  // A receive whose sender is lost: Engine releases it at the fixpoint; the pass stops there.
  ProgramBuilder lost(2);
  auto [si, ri] = lost.message(0, 1, 64);
  (void)si;
  lost.rank(1).event(10, {{ItemType::Recv, ri}});
  lost.rank(0).event(10, {}, 5);  // rank 0 never sends
  std::vector<Scenario> two(2, base());
  PassEngine<4> stuck(lost.programs(), {&two[0], &two[1]}, 2, false);
  while (stuck.advance()) {}
  EXPECT_EQ(stuck.unfinished(), 1);
  EXPECT_FALSE(replay_pass_serial(lost.programs(), {&two[0], &two[1]}).has_value());
  EXPECT_GT(replay_serial(lost.programs(), two[0], false).released, 0);
  // Changed message sizes do not fit in one pass.
  Scenario bigger = base();
  bigger.send_bytes.assign(2, {});
  bigger.send_bytes[0] = {128};
  EXPECT_FALSE(pass_fits(lost.programs(), {&two[0], &bigger}));
  // An ideal network makes no message synchronous: it shares a pass with the measured
  // network only where no message is synchronous there either.
  Scenario ideal = base();
  ideal.ideal_network = true;
  EXPECT_TRUE(pass_fits(lost.programs(), {&two[0], &ideal}));
  const ProgramBuilder large = random_program(4, 16, 3);
  ASSERT_TRUE(std::any_of(large.programs().begin(), large.programs().end(), [](const RankProgram &p) {
    return std::any_of(p.sends.begin(), p.sends.end(), [](const SendMessage &m) { return m.bytes > params().S; });
  }));
  EXPECT_FALSE(pass_fits(large.programs(), {&two[0], &ideal}));
  std::printf(
      "%lld event timings of one-pass replays equal their scenario's own replay (%lld events zeroed or not waiting)\n",
      static_cast<long long>(events), static_cast<long long>(zeroed));
}

// A sink of the events that waited (whatif's sums of waiting) sees exactly the events
// whose exit differs from their no-wait exit, in Engine and in a pass, and no others.
TEST(Replay, WaitedSinkSeesExactlyTheEventsThatWaited) {
  using Seen = std::set<std::pair<int32_t, int64_t>>;
  size_t waited_events = 0, all_events = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const int P = 3 + static_cast<int>(seed % 4);
    const ProgramBuilder b = random_program(P, 16, seed * 104729);
    Scenario slower = base();
    slower.net.L = 4000;
    Seen want[2];
    for (int q = 0; q < 2; ++q) {
      const SerialResult full = replay_serial(b.programs(), q == 0 ? base() : slower, true);
      for (int r = 0; r < P; ++r)
        for (size_t i = 0; i < full.timings[static_cast<size_t>(r)].size(); ++i) {
          const auto t = full.timings[static_cast<size_t>(r)][i];
          if (t.exit != t.nowait_exit) want[q].insert({r, static_cast<int64_t>(i)});
          all_events += q == 0;
        }
    }
    waited_events += want[0].size();
    const Scenario measured = base();
    Engine engine(b.programs(), measured, P, false);
    Seen engine_saw;
    engine.set_event_sink(
        [&](int32_t s, int64_t i, const EventTiming &) {
          engine_saw.insert({s, i});
        },
        SinkEvents::Waited);
    while (!engine.finished()) {
      engine.advance();
      if (!engine.finished()) engine.release_stuck();
    }
    EXPECT_EQ(engine_saw, want[0]) << "seed " << seed;
    PassEngine<2> pass(b.programs(), {&measured, &slower}, P, false);
    Seen pass_saw[2];
    for (size_t q = 0; q < 2; ++q)
      pass.set_event_sink(
          q,
          [&pass_saw, q](int32_t s, int64_t i, const EventTiming &) {
            pass_saw[q].insert({s, i});
          },
          SinkEvents::Waited);
    while (pass.advance()) {}
    EXPECT_EQ(pass.unfinished(), 0) << "seed " << seed;
    EXPECT_EQ(pass_saw[0], want[0]) << "seed " << seed;
    EXPECT_EQ(pass_saw[1], want[1]) << "seed " << seed;
  }
  // Some events wait, most do not: the sink is called for a part of them.
  EXPECT_GT(waited_events, 0u);
  EXPECT_LT(waited_events * 2, all_events);
}

// The pass holds a delivered send start, a receive's post and a request's value only
// while they are in flight: 500 rounds of a ring, 1,000 message ends per rank (nonblocking and blocking,
// small and synchronous messages) holds a few values per rank, not one per message, and
// its times equal Engine's.
TEST(Replay, OnePassHoldsAValueOnlyWhileItIsInFlight) {
  const int P = 4, rounds = 500;
  ProgramBuilder b(P);
  for (int k = 0; k < rounds; ++k) {
    const int64_t bytes = k % 3 == 0 ? 4 * params().S : 64;                     // every third one synchronous
    std::vector<std::pair<int32_t, int32_t>> to_right(static_cast<size_t>(P));  // (send index, its receive's)
    for (int r = 0; r < P; ++r) to_right[static_cast<size_t>(r)] = b.message(r, (r + 1) % P, bytes);
    for (int r = 0; r < P; ++r) {
      const int32_t si = to_right[static_cast<size_t>(r)].first;
      const int32_t ri = to_right[static_cast<size_t>((r + P - 1) % P)].second;  // from the left
      if (k % 2 == 0) {  // nonblocking: post both, then wait for both
        RankProgramBuilder &p = b.rank(r);
        const int32_t s0 = p.add_request_slot(), s1 = p.add_request_slot();
        b.rank(r).event(100, {{ItemType::PostRecv, ri, s0}});
        b.rank(r).event(20, {{ItemType::PostSend, si, s1}});
        b.rank(r).event(30, {{ItemType::Complete, s0}, {ItemType::Complete, s1}});
      } else if (r % 2 == 0) {  // blocking: even ranks send first, odd ranks receive first
        b.rank(r).event(100, {{ItemType::Send, si}});
        b.rank(r).event(10, {{ItemType::Recv, ri}});
      } else {
        b.rank(r).event(100, {{ItemType::Recv, ri}});
        b.rank(r).event(10, {{ItemType::Send, si}});
      }
    }
  }
  std::vector<Scenario> two(2, base());
  two[1].net.L = params().L * 2;
  ASSERT_TRUE(pass_fits(b.programs(), {&two[0], &two[1]}));
  PassEngine<2> pass(b.programs(), {&two[0], &two[1]}, P, false);
  while (pass.advance()) {}
  ASSERT_EQ(pass.unfinished(), 0);
  for (size_t l = 0; l < 2; ++l) {
    const SerialResult want = replay_serial(b.programs(), two[l], false);
    for (int r = 0; r < P; ++r)
      EXPECT_EQ(pass.end_times()[static_cast<size_t>(r)][l], want.end_times[static_cast<size_t>(r)]) << "rank " << r;
  }
  // A sender runs ahead of its receiver by at most the rounds up to the next synchronous
  // message: a few values per rank, against 1,000 per rank if none were handed back.
  EXPECT_LE(pass.values_held(), 10 * P) << "values held past their reads (" << 2 * P * rounds << " message ends)";
}

// Scenario::rest and the replayed exits in 4.5 B per value: every value reads back
// exactly, at any length, built at once or appended, with differences near 32 bits, falling
// values (negative differences), and a column whose values differ beyond 32 bits (kept
// 64-bit from then on, the values before included).
TEST(Replay, BlockDeltaColumnReadsBackEveryValue) {
  std::mt19937_64 rng(5);
  const auto check = [](const std::vector<int64_t> &want) {
    const BlockDeltaColumn col(want);
    BlockDeltaColumn appended;
    ASSERT_TRUE(appended.empty());
    for (size_t i = 0; i < want.size(); ++i) {
      appended.push_back(want[i]);
      ASSERT_EQ(appended.size(), i + 1);
      ASSERT_EQ(appended[i], want[i]) << "value " << i << " of " << want.size() << " as appended";
    }
    ASSERT_EQ(col.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(col[i], want[i]) << "value " << i << " of " << want.size();
      ASSERT_EQ(appended[i], want[i]) << "value " << i << " of " << want.size() << " appended";
    }
    // scan: every value in order, and none after the one it was told to stop at
    for (const BlockDeltaColumn *c : std::vector<const BlockDeltaColumn *>{&col, &appended}) {
      std::vector<int64_t> seen;
      c->scan([&](size_t i, int64_t v) {
        EXPECT_EQ(i, seen.size());
        seen.push_back(v);
        return true;
      });
      ASSERT_EQ(seen, want);
      const size_t stop = want.size() / 2;
      size_t calls = 0;
      c->scan([&](size_t i, int64_t) {
        ++calls;
        return i < stop;
      });
      ASSERT_EQ(calls, stop + 1);
    }
  };
  for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{31}, size_t{32}, size_t{33}, size_t{1000}}) {
    std::vector<int64_t> rest(n, 0);
    for (size_t i = n - 1; i-- > 0;) rest[i] = rest[i + 1] + static_cast<int64_t>(rng() % 100'000'000) - 1000;
    check(rest);
    std::vector<int64_t> exits(n, 7'000'000'000);  // exits of several threads: they fall too
    for (size_t i = 1; i < n; ++i) exits[i] = exits[i - 1] + static_cast<int64_t>(rng() % 2'000'000) - 900'000;
    check(exits);
  }
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max(), kMin32 = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  check({5'000'000'000, 5'000'000'000 + kMax32, 5'000'000'000 + kMin32, 0});  // just within
  check({0, kMax32 + int64_t{1}, 3});                                         // beyond: 64-bit values
  check({0, kMin32 - int64_t{1}, 3});
  check({kMin, kMax, -1, 0});
  check({kMax, kMin, kMax - kMax32, kMin + 1});
  // Differences beyond 32 bits only late in a column: from a block's first value far from
  // the values after it, or at the very end.
  std::vector<int64_t> late(40);
  for (size_t i = 0; i < late.size(); ++i) late[i] = static_cast<int64_t>(i) * 1000;
  late[16] = kMax;
  check(late);
  late.back() = kMin;
  check(late);
}

// The replayed timings in about 12.5 B per event: every event's enter, exit and exit had
// nothing been waited for read back exactly, appended event by event: durations and
// waiting at and past 32 bits (kept whole in the tables), negative ones (a local call
// measured negative, a rooted collective's member arriving after its root), int64's
// extremes; and packed into its parts and back (gather_whole).
TEST(Replay, TimingColumnReadsBackEveryTiming) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t k32 = int64_t{1} << 32;
  const auto check = [](const std::vector<EventTiming> &want) {
    TimingColumn col;
    col.reserve(want.size());
    for (const EventTiming &t : want) col.push_back(t);
    col.shrink_to_fit();
    // Its parts, copied out and into a new column as gather_whole's packing does.
    std::vector<std::vector<char>> parts;
    TimingColumn::each_part(col, [&parts](const auto &v) {
      parts.emplace_back(reinterpret_cast<const char *>(v.data()), reinterpret_cast<const char *>(v.data() + v.size()));
    });
    TimingColumn back;
    size_t k = 0;
    TimingColumn::each_part(back, [&parts, &k](auto &v) {
      const auto &b = parts[k++];
      v.resize(b.size() / sizeof(v[0]));
      if (!b.empty()) std::memcpy(static_cast<void *>(v.data()), b.data(), b.size());
    });
    for (const TimingColumn *c : {&col, &back}) {
      ASSERT_EQ(c->size(), want.size());
      ASSERT_EQ(c->empty(), want.empty());
      for (size_t i = 0; i < want.size(); ++i) {
        const EventTiming t = (*c)[i];
        ASSERT_EQ(t.enter, want[i].enter) << "event " << i << " of " << want.size();
        ASSERT_EQ(t.exit, want[i].exit) << "event " << i << " of " << want.size();
        ASSERT_EQ(t.nowait_exit, want[i].nowait_exit) << "event " << i << " of " << want.size();
        ASSERT_EQ(c->enter(i), want[i].enter) << "event " << i;
        ASSERT_EQ(c->exit(i), want[i].exit) << "event " << i;
        ASSERT_EQ(c->nowait_exit(i), want[i].nowait_exit) << "event " << i;
      }
      if (!want.empty()) {
        EXPECT_EQ(c->back().exit, want.back().exit);
      }
    }
  };
  check({});
  std::mt19937_64 rng(11);
  for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{2000}}) {
    std::vector<EventTiming> want;
    int64_t now = 1'000'000'000;
    for (size_t i = 0; i < n; ++i) {
      const int64_t enter = now + static_cast<int64_t>(rng() % 10'000);
      int64_t duration = static_cast<int64_t>(rng() % 1'000'000), wait = static_cast<int64_t>(rng() % 2) * duration / 2;
      switch (rng() % 16) {  // now and then a duration or waiting at or past the 32-bit slot
        case 0:
          duration = k32 - 2;  // the largest that fits
          break;
        case 1:
          duration = wait = k32 - 1;  // the slot's marker: kept whole
          break;
        case 2:
          duration = k32 + static_cast<int64_t>(rng() % 10'000'000'000);  // a barrier of seconds
          wait = duration - 1;
          break;
        case 3:
          duration = -static_cast<int64_t>(rng() % 1000) - 1;  // measured negative
          wait = 0;
          break;
        case 4:
          wait = -static_cast<int64_t>(rng() % 1000) - 1;  // nowait_exit past exit
          break;
        default:
          break;
      }
      want.push_back({enter, enter + duration, enter + duration - wait});
      // A single stream's next event enters after this exit; several threads' may not.
      now = want.back().exit - (i % 7 == 3 ? static_cast<int64_t>(rng() % 3'000'000'000) : 0);
    }
    check(want);
  }
  check({{kMin, kMax, kMin}, {kMax, kMin, kMax}, {kMin, kMin, kMax}, {kMax, kMax, kMin}, {0, kMin, 0}, {0, 0, 0}});
  std::vector<EventTiming> extremes(40, {kMax - 5, kMax, kMax - 1});
  extremes[17] = {kMin, kMin + 1, kMin};
  extremes[39] = {kMin, kMax, kMin + k32 - 2};
  check(extremes);
}

namespace {

// Sweeps over a line of P ranks, each receiving from its left neighbour, computing an
// uneven time and sending to its right, the next sweep starting at rank 0 once the last
// one is in: ranks wait in calls that began before the wait that held them up ends.
ProgramBuilder wavefront(int P, int sweeps, uint64_t seed) {
  ProgramBuilder b(P);
  Lcg rnd{seed};
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    const auto [back_send, back_recv] = b.message(P - 1, 0, 8);
    b.rank(0).event(0, {{ItemType::Recv, back_recv}});
    for (int r = 0; r + 1 < P; ++r) {
      const auto [send, recv] = b.message(r, r + 1, 8);
      b.rank(r).event(1000 + rnd(rnd(2) ? 400000 : 4000), {{ItemType::Send, send}});
      b.rank(r + 1).event(0, {{ItemType::Recv, recv}});
    }
    b.rank(P - 1).event(1000 + rnd(4000), {{ItemType::Send, back_send}});
  }
  return b;
}

}  // namespace

TEST(Domino, MeasurableGainKeepsEveryMeasurableAnswer) {
  // The bound only drops paths whose gain is below it: where the unbounded search's best
  // gains at least the bound, the bounded one reaches the same best; elsewhere it reports
  // none (and the longest wait alone likewise). Random runs, the bound 2 % of the run
  // (either side occurs).
  int above = 0, below = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const ProgramBuilder b = random_program(3 + static_cast<int>(seed % 4), 12, seed * 613);
    const auto all = paths_of(b, 0);
    const int64_t least = all.baseline / 50;
    const auto bounded = paths_of(b, least);
    EXPECT_LE(bounded.replays, all.replays) << "seed " << seed;
    const bool longest_counts = all.baseline - all.longest_wait.predicted >= least;
    EXPECT_EQ(bounded.longest_wait.predicted, longest_counts ? all.longest_wait.predicted : all.baseline)
        << "seed " << seed;
    if (all.baseline - all.best >= least) {
      ++above;
      EXPECT_EQ(bounded.best, all.best) << "seed " << seed;
      ASSERT_FALSE(bounded.paths.empty()) << "seed " << seed;
      EXPECT_EQ(bounded.paths.front().predicted, all.best) << "seed " << seed;
    } else {
      ++below;
      EXPECT_TRUE(bounded.paths.empty()) << "seed " << seed;
      EXPECT_EQ(bounded.best, bounded.baseline) << "seed " << seed;
    }
  }
  // Wavefronts, the bound 0.1 % of the run (the stage's).
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    const ProgramBuilder b = wavefront(3 + static_cast<int>(seed % 3), 6, seed * 7717);
    const auto all = paths_of(b, 0);
    const int64_t least = all.baseline / 1000;
    const auto bounded = paths_of(b, least);
    if (all.baseline - all.best >= least) {
      ++above;
      EXPECT_EQ(bounded.best, all.best) << "wavefront seed " << seed;
    } else {
      ++below;
      EXPECT_TRUE(bounded.paths.empty()) << "wavefront seed " << seed;
    }
  }
  std::printf("%d runs with a measurable best path, %d without\n", above, below);
  EXPECT_GT(above, 0);
  EXPECT_GT(below, 0);
}
