// The LogGPS parameters of the machine a run happened on, estimated from the run's own
// matched messages (clock-corrected times, ns), and the collectives' costs as the run
// performed them. Pure computation: the pipeline gathers the samples
// (pipeline/replay/run_network_estimate.h).
//
// Costs are lower quartiles (a disturbed call only adds time), g a lower decile.
//   o_s  time in a small send that cannot have waited (blocking eager, or the post
//        of a nonblocking one);
//   o_r  time in a small receive (or the wait completing it) entered well after its
//        message was sent: the data had arrived, the call only took it;
//   g    a low quantile of the interval between back-to-back small sends of one rank (the
//        fastest the rank injects);
//   G    Theil-Sen slope of the transfer time (receive exit - send enter, receives
//        that waited for their message) over message-size buckets of min_messages
//        samples each, at least kSmallMessageBytes apart;
//   L    transfer of small waited receives less o_s, o_r and G b; known within the
//        clock offsets' error bound. Negative: L = 0 and o_r gives up the excess, so that
//        o_s + L + o_r is still the transfer the run shows (as `perfsift calibrate` does).
// A descheduled call inflates one sample, not the estimate. A parameter resting on fewer than `min_messages` samples
// keeps the fallback (the collector's measurement, a calibration file, else the defaults)
// and says so.
//
// Two levels: on-node and off-node pairs (node_of: each rank's node; empty: one level).
// Cost: O(samples log samples).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/loggps.h"
#include "kernels/message_match.h"

namespace perfsift::kernels {

// Small messages: their per-byte costs are negligible against the constants.
inline constexpr int64_t kSmallMessageBytes = 1024;

// One matched message as the estimator reads it (its receiver's side: o_r, G, L).
struct MessageSample {
  TransferTiming t;
  int32_t src = -1, dst = -1;
  // The call that took the data took only it (MPI_Recv, MPI_Wait; not MPI_Sendrecv, MPI_Waitall).
  bool recv_alone = true;
};
// One send call as its sender made it (o_s, g): a call that does nothing else (MPI_Send,
// MPI_Isend; not MPI_Sendrecv, MPI_Ssend).
struct SendCall {
  int32_t src = -1, dst = -1;  // dst -1: unmatched
  int32_t event = -1;          // its event index in its rank
  int64_t enter = 0, exit = 0, bytes = 0;
  bool nonblocking = false;
};

// What the samples show, per level, before any statistic: merged across analysis
// processes by concatenation (append).
struct NetworkSamples {
  std::vector<double> send_overhead, recv_overhead, gap;
  std::vector<double> transfer_bytes, transfer_ns;  // receives that waited for their message
  void append(const NetworkSamples &o);
};

enum class ParameterOrigin : uint8_t { Run, File, Defaults, Probe };
// "this run", "the file", "defaults", "the collector's measurement"
const char *origin_name(ParameterOrigin o);

struct ParameterEstimate {
  ParameterOrigin origin = ParameterOrigin::Defaults;
  int64_t messages = 0;  // the samples it rests on (also when too few to use)
};

// One level's parameters and where each came from.
struct NetworkEstimate {
  LogGPS params;
  ParameterEstimate o_s, o_r, g, G, L;
  double L_uncertainty_ns = 0;  // the clock offsets' error bound: L is known within it
  int64_t messages = 0;         // the level's matched messages
  bool any_from_run() const;
};

// Samples of each level from the send calls (each rank's in event order, ranks one after
// another) and the matched messages. `node_of`: per rank, its node (empty:
// every pair level 0); level 0 on-node, 1 off-node. `margin_ns`: how long before a
// receive's entry its message must have been sent for the data to count as arrived (the
// clock offsets' error bound plus the flight). `eager_bytes`: messages above it travel
// otherwise (rendezvous) and are left out of the transfer samples.
std::array<NetworkSamples, 2> network_samples(const std::vector<SendCall> &sends,
                                              const std::vector<MessageSample> &messages,
                                              const std::vector<int32_t> &node_of, double margin_ns,
                                              int64_t eager_bytes);

// The parameters from one level's samples; `fallback` (and its origin) for each parameter
// resting on fewer than `min_messages` samples.
NetworkEstimate estimate_network(const NetworkSamples &s, const LogGPS &fallback, ParameterOrigin fallback_origin,
                                 double clock_error_ns, int64_t messages, int64_t min_messages = 30);
// The same with a fallback per parameter: each keeps its value and origin, and, when it
// is the collector's measurement, the samples it rests on.
NetworkEstimate estimate_network(const NetworkSamples &s, const NetworkEstimate &fallback, double clock_error_ns,
                                 int64_t messages, int64_t min_messages = 30);
// The collector's measurement (collect/network_probe.h) as a fallback: each parameter its
// samples give (at least `min_samples`: clean ping-pongs need fewer than a run's calls)
// with origin Probe, the others `fallback`'s.
NetworkEstimate measured_fallback(const NetworkSamples &probe, const LogGPS &fallback, ParameterOrigin fallback_origin,
                                  int64_t min_samples = 10);

// The q-quantile (0..1) of v (nearest rank); 0 when empty.
double quantile(std::vector<double> v, double q);

// Collectives as measured. One member's part of one collective instance.
struct CollectiveSample {
  int64_t instance = 0;  // replay::instance_id: the same on every member
  int64_t enter = 0, exit = 0;
  int32_t rank = 0, root = -1, members = 1;
  CollectiveFlow flow = CollectiveFlow::All;
  int32_t op = 0;  // the operation (the store's index)
  int64_t bytes = 0;
};
// What a collective's cost is keyed on: operation, message-size bucket, communicator size.
struct CollectiveKind {
  int32_t op = 0, size_bucket = 0, members = 0;
  bool operator<(const CollectiveKind &o) const {
    return op != o.op ? op < o.op : size_bucket != o.size_bucket ? size_bucket < o.size_bucket : members < o.members;
  }
  bool operator==(const CollectiveKind &o) const = default;
};
int32_t size_bucket(int64_t bytes);  // floor(log2(bytes)) + 1, 0 for no bytes
// kernels::quantile of the instances' costs gives a kind's (pipeline: the lower quartile).
// The cost after synchronisation one complete instance shows (every member's sample,
// any order), as the replay's collective_completion reads it: All, the last entrant's
// time in the call; FromRoot, the members that entered before the root, from the root's
// entry to their exit; ToRoot, the root's exit after the last entry. -1 when the instance
// shows none (incomplete, Finalize, or a rooted instance whose members all came late).
int64_t instance_cost(const std::vector<CollectiveSample> &members);

}  // namespace perfsift::kernels
