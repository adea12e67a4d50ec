// LogGPS (Ino, Fujimoto, Hagihara, PPoPP 2001): the network model the replay uses.
// All times in nanoseconds, sizes in bytes. Pure arithmetic; the cost formulas the
// replay and the known-answer tests share live here and nowhere else.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace perfsift::kernels {

struct OffNodeNetwork;

struct LogGPS {
  // Defaults: a commodity 10 GB/s-class interconnect, documented in docs/whatif.md.
  // `perfsift calibrate` replaces them with figures measured on the machine.
  double L = 1500;   // latency of one message, ns
  double os0 = 500;  // send overhead: os0 + os1 * bytes
  double os1 = 0;
  double or0 = 500;  // receive overhead: or0 + or1 * bytes
  double or1 = 0;
  double g = 500;                   // gap between consecutive injections (and per extra packet), ns
  double G = 0.1;                   // gap per byte, ns/byte (0.1 = 10 GB/s)
  int64_t S = 65536;                // above S bytes messages are synchronous (rendezvous)
  int64_t s = 65536;                // above s bytes messages travel in several packets of s bytes
  std::string source = "defaults";  // "defaults", "this run" or the parameter file's path
  // Collectives cost what the run shows for calls like them (replay::Collective::measured)
  // where it shows it; off, and always on another network, the rounds below price them.
  bool collectives_as_measured = true;
  // A run on several nodes: the off-node pairs' parameters and each rank's node
  // (two_level_network); null: every pair costs as above.
  std::shared_ptr<const OffNodeNetwork> off_node;

  // An infinitely fast network that still keeps MPI's ordering and synchronisation.
  static LogGPS ideal() {
    LogGPS p;
    p.L = p.os0 = p.os1 = p.or0 = p.or1 = p.g = p.G = 0;
    p.S = INT64_MAX;
    p.s = INT64_MAX;
    p.source = "ideal";
    p.collectives_as_measured = false;
    return p;
  }

  // The parameters a message from rank `src` to rank `dst` travels on: the off-node ones
  // between ranks of different nodes. A collective's rounds cross nodes when its run
  // spans several (its members are not known): for_collectives.
  const LogGPS &between(int32_t src, int32_t dst) const;
  const LogGPS &for_collectives() const;

  // Costs are non-negative: round half up without libm's llround (the replay's hot path).
  static int64_t ns(double x) { return static_cast<int64_t>(x + 0.5); }
  int64_t send_overhead(int64_t bytes) const { return ns(os0 + os1 * static_cast<double>(bytes)); }
  int64_t recv_overhead(int64_t bytes) const { return ns(or0 + or1 * static_cast<double>(bytes)); }
  int64_t packets(int64_t bytes) const { return bytes <= s ? 1 : (bytes + s - 1) / s; }
  // From the start of a send to the last byte's arrival at the receiver.
  int64_t flight(int64_t bytes) const {
    return send_overhead(bytes) + ns(L + G * static_cast<double>(bytes) + g * static_cast<double>(packets(bytes) - 1));
  }
  // The earliest next injection at the same sender after one starting at 0.
  int64_t injection_gap(int64_t bytes) const { return ns(g + G * static_cast<double>(bytes)); }
  bool rendezvous(int64_t bytes) const { return bytes > S; }
  // Rendezvous: the request-to-send reaches the receiver this long after the send starts.
  int64_t handshake() const { return ns(os0 + L); }
};

struct OffNodeNetwork {
  LogGPS params;                 // its own off_node null
  std::vector<int32_t> node_of;  // per world rank
};

// Whether ranks a and b ran on different nodes (`node_of`: each rank's node); a rank it does
// not place (none, or unknown) shares the other's node.
inline bool off_node_pair(const std::vector<int32_t> &node_of, int32_t a, int32_t b) {
  if (a < 0 || b < 0) return false;
  const auto i = static_cast<size_t>(a), j = static_cast<size_t>(b);
  return i < node_of.size() && j < node_of.size() && node_of[i] != node_of[j];
}

inline const LogGPS &LogGPS::between(int32_t src, int32_t dst) const {
  return off_node && off_node_pair(off_node->node_of, src, dst) ? off_node->params : *this;
}
inline const LogGPS &LogGPS::for_collectives() const { return off_node ? off_node->params : *this; }

// `on_node` for pairs of one node, `off_node` for the others. Whether a message is
// synchronous is the library's protocol, not the link's: the off-node set keeps on_node's
// thresholds S and s (every replay agrees which sends wait).
inline LogGPS two_level_network(LogGPS on_node, LogGPS off_node, std::vector<int32_t> node_of) {
  off_node.S = on_node.S;
  off_node.s = on_node.s;
  off_node.collectives_as_measured = on_node.collectives_as_measured;
  off_node.off_node = nullptr;
  on_node.off_node = std::make_shared<const OffNodeNetwork>(OffNodeNetwork{std::move(off_node), std::move(node_of)});
  return on_node;
}

// How a collective synchronises its members.
enum class CollectiveFlow : uint8_t {
  All,       // every member leaves after the last arrives (barrier, allreduce, alltoall, ...)
  FromRoot,  // members leave after the root arrives (bcast, scatter); the root does not wait
  ToRoot,    // the root leaves after every member arrives (reduce, gather); others do not wait
  Finalize,  // MPI_Finalize: all members synchronise; the cost is the measured remainder
};

// Cost of one collective at one member, after the synchronisation point: `rounds` rounds
// of a small message plus the bytes this member moves. Logarithmic families (tree,
// recursive doubling, dissemination) take ceil(log2 P) rounds; linear ones (pairwise
// all-to-all) take P-1.
inline int64_t collective_rounds(int32_t members, bool linear) {
  if (members <= 1) return 0;
  if (linear) return members - 1;
  int64_t r = 0;
  while ((int64_t{1} << r) < members) ++r;
  return r;
}
inline int64_t collective_cost(const LogGPS &net, int64_t rounds, int64_t bytes) {
  const LogGPS &p = net.for_collectives();
  return LogGPS::ns(static_cast<double>(rounds) * (p.os0 + p.or0 + p.L) + p.G * static_cast<double>(bytes));
}

}  // namespace perfsift::kernels
