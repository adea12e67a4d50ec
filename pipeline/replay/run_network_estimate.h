// The network the run itself shows: LogGPS parameters estimated from its own messages
// (kernels/network_estimate.h), and its collectives' costs as it performed them, set on
// the replay model's collective calls. Every trace store has what this reads (events,
// requests, clock records), older ones and OTF2 imports included; each rank's node and
// the collector's measurement of the network where the store has them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/results_store.h"
#include "kernels/network_estimate.h"
#include "pipeline/engine/context.h"
#include "pipeline/replay/matched_messages.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

struct RunNetwork {
  kernels::NetworkEstimate estimate;  // level 0's parameters, and where each came from
  // Each level's estimate: [0] on-node pairs, [1] off-node pairs. One level when the run
  // had one node, or the store does not say which rank ran on which (`levels` 1).
  kernels::NetworkEstimate level[2];
  int levels = 1;
  std::string pairs;  // what level 0 holds: "on-node pairs", "all pairs (...)"
  // What the replay runs on: level 0's parameters, with level 1's for pairs of different
  // nodes when there are two levels (kernels::two_level_network).
  kernels::LogGPS replay;
  // Collectives as measured: kinds (operation, size bucket, members) with a cost, the
  // blocking calls in them, and the blocking calls in all.
  int64_t collective_kinds = 0, measured_calls = 0, collective_calls = 0;
  double probe_cost_ns = 0;  // what the collector's measurement took rank 0 (NaN: none)
};

// Collective. Each parameter the run has too few messages for takes the collector's
// measurement, else `fallback` (the defaults). Sets the model's collective
// calls' measured costs (replay::Collective::measured).
RunNetwork estimate_run_network(const Context &ctx, ReplayModel &model, const MatchedMessageTable &messages,
                                const kernels::LogGPS &fallback, kernels::ParameterOrigin fallback_origin);

// Each rank's node as the store records it (/rank_hosts), in `node_of`: empty when the
// run had one node or the store does not say (one level), or its record does not fit
// the run. Returns what level 0 then holds ("on-node pairs", "all pairs (why)").
std::string rank_placement(const io::RunInfo &run, std::vector<int32_t> &node_of);

// A calibration file's parameters instead of the run's point-to-point ones, for every pair
// (every parameter's origin File; the counts of what the run had stay; one level).
// Collectives stay as measured.
void override_with_file(RunNetwork &n, const kernels::LogGPS &file);

// Where the replay's parameters came from, as /whatif attributes (loggps_origin_o_s, ...),
// and as one line for the text report.
std::vector<std::pair<std::string, io::AttrValue>> run_network_attributes(const RunNetwork &n);
std::string run_network_summary(const RunNetwork &n);

}  // namespace perfsift::pipeline
