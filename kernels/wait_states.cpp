// Scalasca's wait-state patterns (see wait_states.h).
#include "kernels/wait_states.h"

#include <algorithm>
#include <climits>

namespace perfsift::kernels::waitstates {

const char *pattern_key(int32_t p) {
  static const char *const keys[kPatterns] = {"late_sender", "late_receiver",  "wait_at_barrier",
                                              "wait_at_nxn", "late_broadcast", "early_reduce"};
  return p >= 0 && p < kPatterns ? keys[p] : "";
}

Blocking receiver_call(const TransferTiming &t) {
  if (!t.recv_nonblocking) return {true, false, t.recv_enter, t.recv_exit};
  if (t.recv_wait_enter < 0) return {};
  return {true, true, t.recv_wait_enter, t.recv_wait_exit};
}

Blocking sender_call(const TransferTiming &t) {
  if (!t.send_nonblocking) return {true, false, t.send_enter, t.send_exit};
  if (t.send_wait_enter < 0) return {};
  return {true, true, t.send_wait_enter, t.send_wait_exit};
}

int64_t late_sender(const TransferTiming &t) {
  const Blocking b = receiver_call(t);
  return b.blocked ? std::max<int64_t>(0, std::min(t.send_enter, b.exit) - b.enter) : 0;
}

int64_t late_receiver(const TransferTiming &t) {
  const Blocking b = sender_call(t);
  // The receive's post: the Recv or Irecv call's entry. A send that left before it did not wait for it.
  return b.blocked && t.recv_enter > b.enter && b.exit > t.recv_enter ? t.recv_enter - b.enter : 0;
}

int64_t clock_violation(const TransferTiming &t) {
  const int64_t done = t.recv_nonblocking && t.recv_wait_exit >= 0 ? t.recv_wait_exit : t.recv_exit;
  return std::max<int64_t>(0, t.send_enter - done);
}

std::vector<uint8_t> wrong_order(const std::vector<int64_t> &send_enter) {
  std::vector<uint8_t> out(send_enter.size(), 0);
  int64_t later_min = INT64_MAX;
  for (size_t i = send_enter.size(); i-- > 0;) {
    out[i] = later_min < send_enter[i];
    later_min = std::min(later_min, send_enter[i]);
  }
  return out;
}

CollectiveWaits collective_waits(int32_t pattern, const std::vector<Member> &m, int32_t root) {
  CollectiveWaits r;
  r.wait.assign(m.size(), 0);
  int64_t last_enter = INT64_MIN, root_enter = INT64_MIN, first_other = INT64_MAX;
  for (size_t i = 0; i < m.size(); ++i) {
    last_enter = std::max(last_enter, m[i].enter);
    if (static_cast<int32_t>(i) == root)
      root_enter = m[i].enter;
    else
      first_other = std::min(first_other, m[i].enter);
  }
  // Until `until`; leaving before it breaks the clock condition when `must` says so.
  auto wait_until = [&](size_t i, int64_t until, bool must) {
    if (must && m[i].exit < until) {
      ++r.violations;
      r.max_violation = std::max(r.max_violation, until - m[i].exit);
    }
    r.wait[i] = std::max<int64_t>(0, std::min(until, m[i].exit) - m[i].enter);
  };
  for (size_t i = 0; i < m.size(); ++i) {
    const bool is_root = static_cast<int32_t>(i) == root;
    switch (pattern) {
      case kWaitAtBarrier:
      case kWaitAtNxN:
        wait_until(i, last_enter, true);
        break;
      case kLateBroadcast:
        if (!is_root && root_enter != INT64_MIN) wait_until(i, root_enter, true);
        break;
      case kEarlyReduce:
        if (is_root && first_other != INT64_MAX) wait_until(i, first_other, true);
        break;
      default:
        break;
    }
  }
  return r;
}

}  // namespace perfsift::kernels::waitstates
