#include "kernels/network_estimate.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace perfsift::kernels {

namespace {

// Back-to-back: the next send entered within this of the previous one's exit.
constexpr double kBackToBackNs = 1000;
// The fastest injection: a low quantile of back-to-back intervals, not the minimum (one
// mis-timed pair would set it).
constexpr double kGapQuantile = 0.1;
// A cost: a call's undisturbed time is its least, and a descheduled or interrupted call
// only adds to it; the lower quartile is that time on a dedicated core (the replay's)
// without resting on one sample.
constexpr double kCostQuantile = 0.25;
// A transfer's time per size: the fastest of its size. On a shared machine most transfers a
// receiver waited for include the time a rank waited for a core, which grows with the
// transfer's length: a quartile of them set G to 366 ns/B on a loaded hpcc run (the replay
// then 50x the program); the fastest of each size is what the copy itself costs.
constexpr double kTransferQuantile = 0.0;

bool waited_for_message(const TransferTiming &t, int64_t &from, int64_t &to, double margin) {
  // The call that took the data: the blocking receive, else the wait completing it.
  const bool via_wait = t.recv_nonblocking && t.recv_wait_enter >= 0;
  if (t.recv_nonblocking && !via_wait) return false;
  from = via_wait ? t.recv_wait_enter : t.recv_enter;
  to = via_wait ? t.recv_wait_exit : t.recv_exit;
  return static_cast<double>(from) + margin < static_cast<double>(t.send_enter);
}

bool message_had_arrived(const TransferTiming &t, int64_t &from, int64_t &to, double margin) {
  const bool via_wait = t.recv_nonblocking && t.recv_wait_enter >= 0;
  if (t.recv_nonblocking && !via_wait) return false;
  from = via_wait ? t.recv_wait_enter : t.recv_enter;
  to = via_wait ? t.recv_wait_exit : t.recv_exit;
  return static_cast<double>(t.send_exit) + margin < static_cast<double>(from);
}

// Theil-Sen slope through the per-bucket points (x: median bytes, y: fastest ns), over pairs
// of buckets at least a small message apart: below that the per-byte cost is lost in the
// constants' spread (4 B against 8 B set G to 151 ns/B on a loaded hpcc run, the replay
// then 22x the program). NaN without such a pair of buckets of `per_bucket` samples each.
double bucket_slope(const std::vector<double> &bytes, const std::vector<double> &ns, size_t per_bucket) {
  std::map<int32_t, std::pair<std::vector<double>, std::vector<double>>> buckets;
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto &b = buckets[size_bucket(static_cast<int64_t>(bytes[i]))];
    b.first.push_back(bytes[i]);
    b.second.push_back(ns[i]);
  }
  std::vector<std::pair<double, double>> points;
  for (const auto &[k, b] : buckets)
    if (b.first.size() >= per_bucket)
      points.emplace_back(quantile(b.first, 0.5), quantile(b.second, kTransferQuantile));
  std::vector<double> slopes;
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t j = i + 1; j < points.size(); ++j)
      if (points[j].first - points[i].first >= static_cast<double>(kSmallMessageBytes))
        slopes.push_back((points[j].second - points[i].second) / (points[j].first - points[i].first));
  return slopes.empty() ? std::nan("") : quantile(slopes, 0.5);
}

}  // namespace

void NetworkSamples::append(const NetworkSamples &o) {
  send_overhead.insert(send_overhead.end(), o.send_overhead.begin(), o.send_overhead.end());
  recv_overhead.insert(recv_overhead.end(), o.recv_overhead.begin(), o.recv_overhead.end());
  gap.insert(gap.end(), o.gap.begin(), o.gap.end());
  transfer_bytes.insert(transfer_bytes.end(), o.transfer_bytes.begin(), o.transfer_bytes.end());
  transfer_ns.insert(transfer_ns.end(), o.transfer_ns.begin(), o.transfer_ns.end());
}

const char *origin_name(ParameterOrigin o) {
  switch (o) {
    case ParameterOrigin::Run:
      return "this run";
    case ParameterOrigin::File:
      return "the file";
    case ParameterOrigin::Probe:
      return "the collector's measurement";
    case ParameterOrigin::Defaults:
      break;
  }
  return "defaults";
}

bool NetworkEstimate::any_from_run() const {
  for (const auto *p : {&o_s, &o_r, &g, &G, &L})
    if (p->origin == ParameterOrigin::Run) return true;
  return false;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<size_t>(std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

std::array<NetworkSamples, 2> network_samples(const std::vector<SendCall> &sends,
                                              const std::vector<MessageSample> &messages,
                                              const std::vector<int32_t> &node_of, double margin_ns,
                                              int64_t eager_bytes) {
  std::array<NetworkSamples, 2> out;
  const auto level = [&](int32_t a, int32_t b) -> size_t { return off_node_pair(node_of, a, b) ? 1 : 0; };
  for (size_t i = 0; i < sends.size(); ++i) {
    const SendCall &a = sends[i];
    // A blocking eager send completes without its receiver; a nonblocking one's post too.
    if (a.bytes > kSmallMessageBytes || a.exit < a.enter) continue;
    out[level(a.src, a.dst)].send_overhead.push_back(static_cast<double>(a.exit - a.enter));
    if (i == 0) continue;
    const SendCall &p = sends[i - 1];  // back to back: the same rank's previous event, a send of the same kind
    if (p.src != a.src || a.event != p.event + 1 || p.bytes > kSmallMessageBytes || p.nonblocking != a.nonblocking ||
        static_cast<double>(a.enter - p.exit) > kBackToBackNs || a.enter < p.enter)
      continue;
    out[level(p.src, p.dst)].gap.push_back(static_cast<double>(a.enter - p.enter));
  }
  for (const auto &m : messages) {
    const TransferTiming &t = m.t;
    if (!m.recv_alone) continue;
    NetworkSamples &s = out[level(m.src, m.dst)];
    int64_t from = 0, to = 0;
    if (t.bytes <= kSmallMessageBytes && message_had_arrived(t, from, to, margin_ns) && to >= from)
      s.recv_overhead.push_back(static_cast<double>(to - from));
    if (t.bytes <= eager_bytes && waited_for_message(t, from, to, margin_ns) && to >= t.send_enter) {
      s.transfer_bytes.push_back(static_cast<double>(t.bytes));
      s.transfer_ns.push_back(static_cast<double>(to - t.send_enter));
    }
  }
  return out;
}

NetworkEstimate estimate_network(const NetworkSamples &s, const LogGPS &fallback, ParameterOrigin fallback_origin,
                                 double clock_error_ns, int64_t messages, int64_t min_messages) {
  NetworkEstimate base;
  base.params = fallback;
  for (auto *p : {&base.o_s, &base.o_r, &base.g, &base.G, &base.L}) p->origin = fallback_origin;
  return estimate_network(s, base, clock_error_ns, messages, min_messages);
}

NetworkEstimate measured_fallback(const NetworkSamples &probe, const LogGPS &fallback, ParameterOrigin fallback_origin,
                                  int64_t min_samples) {
  NetworkEstimate e = estimate_network(probe, fallback, fallback_origin, 0, 0, min_samples);
  bool any = false;
  for (auto *p : {&e.o_s, &e.o_r, &e.g, &e.G, &e.L})
    if (p->origin == ParameterOrigin::Run) p->origin = ParameterOrigin::Probe, any = true;
  e.params.source = any ? origin_name(ParameterOrigin::Probe) : fallback.source;
  return e;
}

NetworkEstimate estimate_network(const NetworkSamples &s, const NetworkEstimate &fallback, double clock_error_ns,
                                 int64_t messages, int64_t min_messages) {
  NetworkEstimate e = fallback;
  e.messages = messages;
  e.L_uncertainty_ns = clock_error_ns;
  const auto enough = [&](size_t n) { return static_cast<int64_t>(n) >= min_messages; };
  const auto take = [&](ParameterEstimate &p, size_t n) {
    if (enough(n)) {
      p = {ParameterOrigin::Run, static_cast<int64_t>(n)};
      return true;
    }
    if (p.origin != ParameterOrigin::Probe) p.messages = static_cast<int64_t>(n);
    return false;
  };
  if (take(e.o_s, s.send_overhead.size())) {
    e.params.os0 = quantile(s.send_overhead, kCostQuantile);
    e.params.os1 = 0;  // per-byte costs are G's
  }
  if (take(e.o_r, s.recv_overhead.size())) {
    e.params.or0 = quantile(s.recv_overhead, kCostQuantile);
    e.params.or1 = 0;
  }
  if (take(e.g, s.gap.size())) e.params.g = quantile(s.gap, kGapQuantile);
  // G: transfers over several sizes, each size bucket resting on min_messages samples as
  // any parameter does (a few transfers held up by a descheduled receiver would otherwise
  // set the slope); fewer than two such buckets say nothing of it.
  double slope = bucket_slope(s.transfer_bytes, s.transfer_ns, static_cast<size_t>(std::max<int64_t>(1, min_messages)));
  if (!(slope > 0)) slope = std::nan("");  // larger transfers no slower: within the clocks' error, unresolved
  if (!std::isnan(slope)) {
    e.G = {ParameterOrigin::Run, static_cast<int64_t>(s.transfer_ns.size())};
    e.params.G = std::max(0.0, slope);
  } else if (e.G.origin != ParameterOrigin::Probe) {
    e.G.messages = static_cast<int64_t>(s.transfer_ns.size());
  }
  std::vector<double> wire;
  for (size_t i = 0; i < s.transfer_ns.size(); ++i)
    if (s.transfer_bytes[i] <= static_cast<double>(kSmallMessageBytes))
      wire.push_back(s.transfer_ns[i] - e.params.os0 - e.params.or0 - e.params.G * s.transfer_bytes[i]);
  if (take(e.L, wire.size())) {
    const double L = quantile(wire, kCostQuantile);
    e.params.L = std::max(0.0, L);
    if (L < 0) e.params.or0 = std::max(0.0, e.params.or0 + L);
  }
  e.params.source = e.any_from_run() ? "this run" : fallback.params.source;
  return e;
}

int32_t size_bucket(int64_t bytes) {
  int32_t b = 0;
  while (bytes > 0) {
    bytes >>= 1;
    ++b;
  }
  return b;
}

int64_t instance_cost(const std::vector<CollectiveSample> &members) {
  if (members.empty() || members[0].flow == CollectiveFlow::Finalize ||
      static_cast<int32_t>(members.size()) != members[0].members)
    return -1;
  const auto last =
      std::max_element(members.begin(), members.end(), [](const auto &a, const auto &b) { return a.enter < b.enter; });
  switch (members[0].flow) {
    case CollectiveFlow::All:
      return last->exit - last->enter;
    case CollectiveFlow::ToRoot:
      for (const auto &m : members)
        if (m.rank == m.root) return std::max<int64_t>(0, m.exit - std::max(last->enter, m.enter));
      return -1;
    case CollectiveFlow::FromRoot: {
      const auto root = std::find_if(members.begin(), members.end(), [](const auto &m) { return m.rank == m.root; });
      if (root == members.end()) return -1;
      std::vector<double> after;
      for (const auto &m : members)
        if (m.rank != m.root && m.enter <= root->enter) after.push_back(static_cast<double>(m.exit - root->enter));
      return after.empty() ? -1 : std::max<int64_t>(0, static_cast<int64_t>(quantile(after, kCostQuantile)));
    }
    case CollectiveFlow::Finalize:
      break;
  }
  return -1;
}

}  // namespace perfsift::kernels
