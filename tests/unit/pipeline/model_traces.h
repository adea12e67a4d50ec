// Traces of the three Hercule models (master-worker, wavefront, divide-and-conquer), generated
// from a seed with a known injected delay, for property tests of the model diagnosis. Each
// generator simulates the program's messages with a simple network (a call costs 1 us, a
// message 3 us + 1 ns per byte) and keeps, from its own timing, what the thesis's terms of
// each rank's lost time are: the analytical answer the diagnosis should find.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::test {

struct GeneratedRun {
  std::string model;     // master-worker, wavefront or divide-and-conquer
  std::string shape;     // the idiom in a few words (grid, protocol, ranks)
  std::string injected;  // the delay put in, in a few words
  std::string cause;     // the cause id the injected delay should show as
  int32_t nranks = 0;
  std::vector<io::RankTrace> traces;  // every rank's, in rank order
  // Per rank: cause id -> analytical share of the rank's lost time (elapsed minus
  // computation); empty for the master.
  std::vector<std::map<std::string, double>> truth;
  std::vector<double> loss_s;  // per rank
};

GeneratedRun master_worker_run(uint64_t seed);
GeneratedRun wavefront_run(uint64_t seed);
GeneratedRun divide_conquer_run(uint64_t seed);

// The operation names the traces' op indices refer to.
const std::vector<std::string> &generated_op_names();

}  // namespace perfsift::test
