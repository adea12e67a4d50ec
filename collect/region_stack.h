// Thread 0's regions: the tree of regions met so far with their inclusive metrics, the
// stack of open ones, and every user region's executions (the store's steps). Other
// threads' events take thread 0's innermost region and step, published in atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "io/trace_model.h"
#include "os_sample.h"
#include "papi_counters.h"

namespace perfsift::collect {

struct RegionNode {
  std::string name;
  std::string path;
  int32_t parent = -1;
  std::vector<std::pair<std::string, int32_t>> children;
  std::vector<double> acc;  // inclusive metrics: builtins then PAPI events
  int32_t steps = 0;        // step executions so far
};

struct Frame {
  int32_t region;
  int64_t t0;
  double cpu0;
  int64_t cum0[io::kBuiltinMetricCount];
  std::vector<long long> papi0;
  int32_t step;        // step number when this frame is a step, else -1
  int32_t outer_step;  // innermost step number outside this frame
  OsSample os0;        // at the frame's open
};

class RegionStack {
 public:
  explicit RegionStack(const PapiCounters &papi) : m_papi(papi) {}

  // The (program) region, open from `t_open` (ticks). `totals`: thread 0's running
  // totals (ThreadState::cum), which the frames take their deltas from.
  void open_root(int64_t t_open, const int64_t *totals);
  void begin(const char *name, bool step);
  // Closes up to the innermost open region of that name; an unknown name, or one that
  // leaves inner regions open, is counted as a mismatch, not fatal.
  void end(const char *name);
  // Adds the top frame's deltas to its region and pops it.
  void close_top() { close_frame(false); }
  // MPI_Finalize: the user regions left open, closed and counted.
  void close_user_regions();
  void close_all();  // the crash flush: every frame, the root's included
  void count_mismatch() { ++m_mismatches; }
  int64_t mismatches() const { return m_mismatches; }

  // The hot path: the region and step an event of thread 0 belongs to, and those
  // published for the other threads.
  int32_t innermost() const { return m_stack.empty() ? 0 : m_stack.back().region; }
  int32_t current_step() const {
    if (m_stack.empty()) return -1;
    const Frame &f = m_stack.back();
    return f.step >= 0 ? f.step : f.outer_step;
  }
  int32_t published_region() const { return m_main_region.load(std::memory_order_relaxed); }
  int32_t published_step() const { return m_main_step.load(std::memory_order_relaxed); }

  // The executions recorded since the last spill. Their times are ticks until
  // executions_to_ns converts those not converted yet.
  std::vector<io::StepRecord> &executions() { return m_steps; }
  void executions_to_ns();
  void clear_executions();

  // Every region's path and inclusive metrics into `t` (its metric_names already set):
  // wall and MPI time, summed in ticks, become seconds with the ratio as it is now.
  void write_profile(io::RankTrace &t) const;

 private:
  // Adds the open top frame's deltas to its region; pops it unless `keep_on_stack`.
  void close_frame(bool keep_on_stack);
  Frame open_frame(int32_t region, int64_t t0, int32_t outer_step);
  void publish();

  const PapiCounters &m_papi;
  const int64_t *m_totals = nullptr;
  std::vector<RegionNode> m_regions;
  std::vector<Frame> m_stack;
  std::vector<io::StepRecord> m_steps;
  size_t m_prepared_steps = 0;  // executions below this index have ns times
  int64_t m_mismatches = 0;
  OsSampler m_os;
  std::atomic<int32_t> m_main_region{0}, m_main_step{-1};
};

}  // namespace perfsift::collect
