// Scalasca's wait-state patterns on hand-made calls (kernels/wait_states.h).
#include <gtest/gtest.h>

#include "kernels/wait_states.h"

using namespace perfsift::kernels;
using namespace perfsift::kernels::waitstates;

namespace {
TransferTiming blocking(int64_t send_enter, int64_t send_exit, int64_t recv_enter, int64_t recv_exit) {
  TransferTiming t;
  t.send_enter = send_enter, t.send_exit = send_exit, t.recv_enter = recv_enter, t.recv_exit = recv_exit;
  return t;
}
}  // namespace

TEST(WaitStates, LateSenderInABlockingReceive) {
  // The receive waits from 100 until the send starts at 300.
  EXPECT_EQ(late_sender(blocking(300, 320, 100, 500)), 200);
  // Posted after the send started: no waiting for it.
  EXPECT_EQ(late_sender(blocking(300, 320, 400, 500)), 0);
  EXPECT_EQ(late_receiver(blocking(300, 320, 400, 500)), 0);  // an eager send left before the post
  EXPECT_EQ(clock_violation(blocking(300, 320, 100, 500)), 0);
}

TEST(WaitStates, LateSenderInTheWaitOfAnIrecv) {
  TransferTiming t = blocking(700, 720, 0, 10);
  t.recv_nonblocking = true, t.recv_wait_enter = 400, t.recv_wait_exit = 900;
  EXPECT_TRUE(receiver_call(t).in_completion);
  EXPECT_EQ(late_sender(t), 300);  // Wait entered at 400, the send started at 700
  // An Irecv nothing completed blocks nowhere.
  t.recv_wait_enter = t.recv_wait_exit = -1;
  EXPECT_FALSE(receiver_call(t).blocked);
  EXPECT_EQ(late_sender(t), 0);
}

TEST(WaitStates, LateReceiverBlocksASynchronousSend) {
  // Ssend from 100 to 800; the receive is posted at 600: 500 ns of Late Receiver.
  EXPECT_EQ(late_receiver(blocking(100, 800, 600, 810)), 500);
  EXPECT_EQ(late_sender(blocking(100, 800, 600, 810)), 0);
  // The Wait of an Isend: entered at 200, left at 900, the receive posted at 500.
  TransferTiming t = blocking(100, 110, 500, 910);
  t.send_nonblocking = true, t.send_wait_enter = 200, t.send_wait_exit = 900;
  EXPECT_EQ(late_receiver(t), 300);
}

TEST(WaitStates, ReceivedBeforeSentViolatesTheClockCondition) {
  // The receive ended at 500, the send "started" at 600: the clocks disagree by 100 ns.
  const TransferTiming t = blocking(600, 620, 100, 500);
  EXPECT_EQ(clock_violation(t), 100);
  EXPECT_EQ(late_sender(t), 400);  // clipped to the receive's own duration
}

TEST(WaitStates, WrongOrder) {
  // Posted in this order; the second message was sent at 10, before the first (50).
  EXPECT_EQ(wrong_order({50, 10, 70}), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(wrong_order({10, 20, 30}), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(wrong_order({30, 20, 10}), (std::vector<uint8_t>{1, 1, 0}));
}

TEST(WaitStates, Collectives) {
  // Barrier: entries 0, 100, 300; everybody leaves after 300.
  const std::vector<Member> barrier = {{0, 310}, {100, 305}, {300, 320}};
  auto w = collective_waits(kWaitAtBarrier, barrier, -1);
  EXPECT_EQ(w.wait, (std::vector<int64_t>{300, 200, 0}));
  EXPECT_EQ(w.violations, 0);
  // One member left before the last entered: a violation, its wait clipped.
  w = collective_waits(kWaitAtNxN, {{0, 250}, {300, 320}}, -1);
  EXPECT_EQ(w.wait, (std::vector<int64_t>{250, 0}));
  EXPECT_EQ(w.violations, 1);
  EXPECT_EQ(w.max_violation, 50);
  // Broadcast from member 1, entering at 100: destinations that came earlier wait.
  w = collective_waits(kLateBroadcast, {{0, 150}, {100, 120}, {50, 160}, {130, 170}}, 1);
  EXPECT_EQ(w.wait, (std::vector<int64_t>{100, 0, 50, 0}));
  // Reduce to member 0 entering at 0; the first contribution comes at 100.
  w = collective_waits(kEarlyReduce, {{0, 250}, {100, 110}, {200, 210}}, 0);
  EXPECT_EQ(w.wait, (std::vector<int64_t>{100, 0, 0}));
  EXPECT_EQ(w.violations, 0);
}
