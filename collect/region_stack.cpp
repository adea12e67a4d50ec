#include "region_stack.h"

#include <algorithm>
#include <iterator>

#include "io/region_path.h"
#include "thread_buffers.h"
#include "tick_clock.h"

namespace perfsift::collect {

Frame RegionStack::open_frame(int32_t region, int64_t t0, int32_t outer_step) {
  Frame f{region, t0, process_cpu_seconds(), {}, {}, -1, outer_step, {}};
  std::copy(m_totals, m_totals + io::kBuiltinMetricCount, f.cum0);
  return f;
}

void RegionStack::open_root(int64_t t_open, const int64_t *totals) {
  m_totals = totals;
  RegionNode root;
  root.name = root.path = io::kRootRegionPath;
  root.acc.assign(io::kBuiltinMetricCount + m_papi.names().size(), 0.0);
  m_regions.push_back(root);
  Frame f = open_frame(0, t_open, -1);
  m_papi.read(f.papi0);
  f.os0 = m_os.at(now_ticks());
  m_stack.push_back(f);
  publish();
}

void RegionStack::begin(const char *name, bool step) {
  const int32_t parent = innermost();
  int32_t id = -1;
  for (const auto &[n, c] : m_regions[parent].children)
    if (n == name) id = c;
  if (id < 0) {
    RegionNode node;
    node.name = name;
    node.path = io::child_region_path(m_regions[parent].path, parent == 0, name);
    node.parent = parent;
    node.acc.assign(io::kBuiltinMetricCount + m_papi.names().size(), 0.0);
    id = static_cast<int32_t>(m_regions.size());
    m_regions.push_back(std::move(node));
    m_regions[parent].children.emplace_back(name, id);
  }
  Frame f = open_frame(id, now_ticks(), current_step());
  if (step) f.step = m_regions[id].steps++;
  m_papi.read(f.papi0);
  f.os0 = m_os.at(f.t0);
  m_stack.push_back(std::move(f));
  publish();
}

void RegionStack::end(const char *name) {
  if (m_stack.size() <= 1) {
    ++m_mismatches;
    return;
  }
  size_t k = m_stack.size();
  while (k > 1 && m_regions[m_stack[k - 1].region].name != name) --k;
  if (k <= 1) {
    ++m_mismatches;
    return;
  }
  if (k != m_stack.size()) ++m_mismatches;
  while (m_stack.size() >= k) close_frame(false);
}

void RegionStack::close_user_regions() {
  while (m_stack.size() > 1) {
    ++m_mismatches;
    close_frame(false);
  }
}

void RegionStack::close_all() {
  while (!m_stack.empty()) close_frame(false);
}

void RegionStack::close_frame(bool keep_on_stack) {
  // The OS's figures are per thread: the crash flush may close the frames on another
  // thread, whose figures would not be thread 0's (those regions keep what they have).
  const bool own_thread = on_thread0();
  Frame &f = m_stack.back();
  RegionNode &r = m_regions[f.region];
  const int64_t t1 = now_ticks();
  const OsSample os1 = own_thread ? m_os.at(t1) : OsSample{};
  clock_refresh();
  r.acc[io::kVisits] += 1;
  r.acc[io::kWall] += static_cast<double>(t1 - f.t0);  // ticks until write_profile
  r.acc[io::kCpu] += process_cpu_seconds() - f.cpu0;
  r.acc[io::kMpiTime] += static_cast<double>(m_totals[io::kMpiTime] - f.cum0[io::kMpiTime]);
  for (int m = io::kMpiBytesSent; m < io::kFirstOsMetric; ++m) r.acc[m] += static_cast<double>(m_totals[m] - f.cum0[m]);
  const OsSample &os0 = f.os0;
  if (own_thread) {
    // An estimate (OsSampler) may run ahead of the next sample: never below zero.
    r.acc[io::kThreadCpu] += static_cast<double>(std::max<int64_t>(0, os1.thread_cpu_ns - os0.thread_cpu_ns)) * 1e-9;
    r.acc[io::kCtxSwitchVoluntary] += static_cast<double>(os1.nvcsw - os0.nvcsw);
    r.acc[io::kCtxSwitchInvoluntary] += static_cast<double>(os1.nivcsw - os0.nivcsw);
    r.acc[io::kPageFaultsMinor] += static_cast<double>(os1.minflt - os0.minflt);
    r.acc[io::kPageFaultsMajor] += static_cast<double>(os1.majflt - os0.majflt);
    r.acc[io::kMaxRssGrowth] += static_cast<double>(std::max<int64_t>(0, os1.maxrss_kb - os0.maxrss_kb)) * 1024.0;
  }
  if (!m_papi.names().empty()) {
    std::vector<long long> now;
    m_papi.read(now);
    for (size_t i = 0; i < now.size(); ++i)
      r.acc[io::kBuiltinMetricCount + i] += static_cast<double>(now[i] - f.papi0[i]);
  }
  // Every user region's execution (step or not): the replay locates computation by them.
  if (f.region != 0) m_steps.push_back({f.region, f.step, f.t0, t1});
  if (!keep_on_stack) {
    m_stack.pop_back();
    publish();
  }
}

void RegionStack::publish() {
  m_main_region.store(innermost(), std::memory_order_relaxed);
  m_main_step.store(current_step(), std::memory_order_relaxed);
}

void RegionStack::executions_to_ns() {
  clock_refresh();
  for (size_t i = m_prepared_steps; i < m_steps.size(); ++i) {
    m_steps[i].t_begin = ticks_to_ns(m_steps[i].t_begin);
    m_steps[i].t_end = ticks_to_ns(m_steps[i].t_end);
  }
  m_prepared_steps = m_steps.size();
}

void RegionStack::clear_executions() {
  m_steps.clear();
  m_prepared_steps = 0;
}

void RegionStack::write_profile(io::RankTrace &t) const {
  const size_t nm = t.metric_names.size();
  clock_refresh();
  const double s_per_tick = g_clock.ns_per_tick * 1e-9;  // one ratio for every region
  for (const auto &r : m_regions) {
    t.region_paths.push_back(r.path);
    const size_t at = t.profile.size();
    t.profile.insert(t.profile.end(), r.acc.begin(), r.acc.end());
    t.profile.resize(t.region_paths.size() * nm, 0.0);
    for (int m : {io::kWall, io::kMpiTime}) t.profile[at + m] *= s_per_tick;
  }
}

}  // namespace perfsift::collect
