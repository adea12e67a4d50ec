// The LogGPS completion formulas every replay shares (Engine, PassEngine).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/loggps.h"
#include "kernels/replay/program.h"

namespace perfsift::kernels::replay {

// The completion formulas every replay shares (Engine, PassEngine): a call's end from its
// own start and what it waits for. Point-to-point formulas take the pair's parameters
// (LogGPS::between). `nowait`: the call waits for nobody (zeroed wait, or a
// dependency released at a stuck fixpoint); what it would wait for is then not read.

// A send waits for its receiver when it is matched and synchronous (rendezvous).
inline bool send_waits(const LogGPS &net, int64_t bytes, bool matched) { return matched && net.rendezvous(bytes); }
inline int64_t send_completion(const LogGPS &net, int64_t bytes, bool matched, int64_t start, int64_t recv_posted,
                               bool nowait) {
  if (!send_waits(net, bytes, matched)) return start + net.send_overhead(bytes);
  int64_t h = start + net.handshake();
  if (!nowait) h = std::max(h, recv_posted);
  // Rendezvous: the clear-to-send travels back (L), then the sender pushes the data.
  return h + LogGPS::ns(net.L) + net.send_overhead(bytes);
}
// A matched receive posted at `post` of a message whose send started at `sent`.
inline int64_t recv_completion(const LogGPS &net, int64_t bytes, int64_t post, int64_t sent, bool nowait) {
  if (!net.rendezvous(bytes))
    return (nowait ? post : std::max(post, sent + net.flight(bytes))) + net.recv_overhead(bytes);
  const int64_t h = nowait ? post : std::max(sent + net.handshake(), post);
  return h + LogGPS::ns(net.L) + net.flight(bytes) + net.recv_overhead(bytes);
}
// What a member's completion needs besides its own arrival: nothing (a non-root member
// sending to its root, a broadcast's root, or not waiting), the root's arrival
// (FromRoot), or every member's.
enum class CollectiveNeeds : uint8_t { Nothing, Root, All };
inline CollectiveNeeds collective_needs(CollectiveFlow flow, bool is_root, bool nowait) {
  if ((flow == CollectiveFlow::ToRoot && !is_root) || (flow == CollectiveFlow::FromRoot && is_root) || nowait)
    return CollectiveNeeds::Nothing;
  return flow == CollectiveFlow::FromRoot ? CollectiveNeeds::Root : CollectiveNeeds::All;
}

// A member's completion from its arrival `enter`, the latest arrival and the root's (each
// read only when collective_needs says so).
inline int64_t collective_completion(const LogGPS &net, const Collective &c, bool is_root, int64_t enter,
                                     int64_t max_enter, int64_t root_enter, bool nowait) {
  if (c.flow == CollectiveFlow::ToRoot && !is_root) return enter + net.for_collectives().send_overhead(c.bytes);
  const int64_t cost = collective_call_cost(net, c);
  switch (collective_needs(c.flow, is_root, nowait)) {
    case CollectiveNeeds::Nothing:
      return enter + cost;
    case CollectiveNeeds::Root:
      return std::max(enter, root_enter + cost);
    case CollectiveNeeds::All:
      break;
  }
  return std::max(enter, max_enter) + cost;
}

}  // namespace perfsift::kernels::replay
