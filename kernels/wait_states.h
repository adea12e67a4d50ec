// Scalasca's wait-state patterns, the pure part: how long one call waited, from the
// entry and exit times of the calls involved (definitions: Scalasca 1.x pattern help,
// notes/peers.md). Every wait is clipped to the waiting call's own duration.
//
//   late_sender      a blocking receive (or the Wait completing an Irecv) entered before
//                    the send started: min(send start, its exit) - its entry;
//   late_receiver    a send blocked (Ssend, rendezvous Send, the Wait of an Isend) until
//                    the receive was posted: counted when it left after that post;
//   wait_at_barrier, wait_at_nxn   until the last member entered;
//   late_broadcast   a destination of a 1-to-n operation, until the root entered;
//   early_reduce     the root of an n-to-1 operation, until the first other member entered.
// A message received before it was sent, or a member leaving a collective before the
// members it needs data from entered, violates the clock condition.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/message_match.h"

namespace perfsift::kernels::waitstates {

enum Pattern : int32_t {
  kLateSender,
  kLateReceiver,
  kWaitAtBarrier,
  kWaitAtNxN,
  kLateBroadcast,
  kEarlyReduce,
  kPatterns
};
const char *pattern_key(int32_t p);  // "late_sender", ...

// The call a side of a transfer blocked in: its completion when nonblocking (none when
// nothing completed it: `blocked` false).
struct Blocking {
  bool blocked = false;
  bool in_completion = false;  // the Wait*/Test*, not the send or receive call itself
  int64_t enter = 0, exit = 0;
};
Blocking receiver_call(const TransferTiming &t);
Blocking sender_call(const TransferTiming &t);

// Waiting of one transfer (ns, 0 when none).
int64_t late_sender(const TransferTiming &t);
int64_t late_receiver(const TransferTiming &t);
// How much earlier the receive finished than the send started (0: the clock condition holds).
int64_t clock_violation(const TransferTiming &t);

// One receiver's messages in the order its receives were posted, by their send starts:
// 1 where a message posted for later was sent earlier (Late Sender, wrong order).
std::vector<uint8_t> wrong_order(const std::vector<int64_t> &send_enter);

// One collective instance: each member's entry and exit; `root` indexes the members
// (-1: none). Pattern kWaitAtBarrier, kWaitAtNxN, kLateBroadcast or kEarlyReduce.
struct Member {
  int64_t enter = 0, exit = 0;
};
struct CollectiveWaits {
  std::vector<int64_t> wait;  // per member
  int64_t violations = 0, max_violation = 0;
};
CollectiveWaits collective_waits(int32_t pattern, const std::vector<Member> &members, int32_t root);

}  // namespace perfsift::kernels::waitstates
