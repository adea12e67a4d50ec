// LogGPS (Ino, Fujimoto, Hagihara, PPoPP 2001): the network model the replay uses.
// All times in nanoseconds, sizes in bytes. Pure arithmetic; the cost formulas the
// replay and the known-answer tests share live here and nowhere else.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace perfsift::kernels {

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
inline int64_t collective_cost(const LogGPS &p, int64_t rounds, int64_t bytes) {
  return LogGPS::ns(static_cast<double>(rounds) * (p.os0 + p.or0 + p.L) + p.G * static_cast<double>(bytes));
}

}  // namespace perfsift::kernels
