// Predicted traces for viewers: Chrome trace JSON (Perfetto, chrome://tracing) and OTF2
// (Vampir; otf2-print reads it). Each rank shows computation slices named by region,
// MPI calls named by operation and, inside a call, its predicted waiting.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfsift::io {

struct PredictedCall {
  int64_t rank, event, enter, exit, wait;  // ns
  int64_t op, region;                      // indices into the trace's names
};

struct PredictedTrace {
  std::string question;
  std::vector<std::string> ops, regions;
  std::vector<PredictedCall> calls;  // by rank, then event
  int64_t nranks = 0;
};

// Both write beside the target and rename: never a half-written output.
void write_chrome_trace(const std::string &path, const PredictedTrace &t);
void write_otf2(const std::string &dir, const PredictedTrace &t);  // DIR/traces.otf2

}  // namespace perfsift::io
