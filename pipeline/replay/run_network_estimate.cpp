// The run's own network (see run_network_estimate.h).
#include "pipeline/replay/run_network_estimate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "kernels/replay.h"
#include "pipeline/engine/op_traits.h"
#include "pipeline/format/text.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;
using kernels::ParameterOrigin;

namespace {

// A run's samples are thinned to about this many messages (the same ones for any number
// of analysis processes): medians of more say nothing new.
constexpr int64_t kSampledMessages = 200000;
// The time a message needs to arrive beyond the clocks' error (on a node, well under it).
constexpr double kFlightMarginNs = 2000;

bool kept(int32_t rank, int32_t event, int64_t every) {
  uint64_t h =
      (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32 | static_cast<uint32_t>(event)) * 0x9E3779B97F4A7C15ull;
  return every <= 1 || (h >> 17) % static_cast<uint64_t>(every) == 0;
}

bool is_one_of(const std::string &name, std::initializer_list<const char *> names) {
  return std::any_of(names.begin(), names.end(), [&](const char *n) { return name == n; });
}

// The owned ranks' send calls that do nothing else, each rank's in event order.
std::vector<kernels::SendCall> send_calls(const Context &ctx, const ReplayModel &model, int64_t every) {
  const auto &ops = ctx.store().ops();
  std::vector<kernels::SendCall> out;
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const rp::RankProgram &p = model.programs[s];
    const auto &side = model.side[s];
    for (size_t i = 0; i < p.events.size(); ++i) {
      const rp::Event &e = p.events[i];
      if (e.items != 1) continue;
      const rp::Item &it = p.items[static_cast<size_t>(e.first_item)];
      if (it.type != rp::ItemType::Send && it.type != rp::ItemType::PostSend) continue;
      const uint16_t op = side.labels.op(i);
      if (op >= ops.size() ||
          !is_one_of(ops[op], {"MPI_Send", "MPI_Isend", "MPI_Bsend", "MPI_Ibsend", "MPI_Rsend", "MPI_Irsend"}))
        continue;
      if (!kept(p.rank, static_cast<int32_t>(i), every)) continue;
      const rp::SendMessage &m = p.sends[static_cast<size_t>(it.index)];
      out.push_back({p.rank, m.dst, static_cast<int32_t>(i), side.enter[i], model.measured_exit(s, i), m.bytes,
                     it.type == rp::ItemType::PostSend});
    }
  }
  return out;
}

std::vector<kernels::MessageSample> message_samples(const Context &ctx, const MatchedMessageTable &messages,
                                                    int64_t every) {
  const auto &ops = ctx.store().ops();
  const auto name = [&](uint16_t op) { return op < ops.size() ? ops[op] : std::string(); };
  std::vector<kernels::MessageSample> out;
  for (const MatchedMessage m : messages) {
    if (!kept(m.src, m.send_event, every)) continue;
    const bool alone = m.timing.recv_nonblocking ? name(m.recv_done_op) == "MPI_Wait" : name(m.recv_op) == "MPI_Recv";
    out.push_back({m.timing, m.src, m.dst, alone});
  }
  return out;
}

// Every process's samples, in process order (the statistics do not depend on the order).
kernels::NetworkSamples gathered(const Context &ctx, const kernels::NetworkSamples &mine) {
  kernels::NetworkSamples all;
  all.send_overhead = ctx.allgatherv(mine.send_overhead);
  all.recv_overhead = ctx.allgatherv(mine.recv_overhead);
  all.gap = ctx.allgatherv(mine.gap);
  all.transfer_bytes = ctx.allgatherv(mine.transfer_bytes);
  all.transfer_ns = ctx.allgatherv(mine.transfer_ns);
  return all;
}

double clock_error_ns(const io::TraceStore &store) {
  int64_t worst = 0;
  for (const auto &c : store.clocks()) worst = std::max({worst, c.error_init_ns, c.error_fin_ns});
  return static_cast<double>(worst);
}

struct CostSample {
  kernels::CollectiveKind kind;
  int64_t cost;
};

// Collectives as measured: each blocking collective call's part routed to the process
// that owns its instance, each complete instance's cost, the lower quartile per kind everywhere.
std::map<kernels::CollectiveKind, int64_t> measured_collective_costs(const Context &ctx, const ReplayModel &model,
                                                                     int64_t &calls) {
  std::vector<std::vector<kernels::CollectiveSample>> route(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const rp::RankProgram &p = model.programs[s];
    for (size_t i = 0; i < p.events.size(); ++i) {
      const rp::Event &e = p.events[i];
      if (e.items != 1 || p.items[static_cast<size_t>(e.first_item)].type != rp::ItemType::Collective) continue;
      const rp::Collective &c = p.colls[static_cast<size_t>(p.items[static_cast<size_t>(e.first_item)].index)];
      if (c.flow == kernels::CollectiveFlow::Finalize) continue;
      ++calls;
      const auto to = static_cast<size_t>(static_cast<uint64_t>(c.instance) % static_cast<uint64_t>(ctx.nprocs()));
      route[to].push_back({c.instance, model.side[s].enter[i], model.measured_exit(s, i), p.rank, c.root, c.members,
                           c.flow, model.side[s].labels.op(i), c.bytes});
    }
  }
  auto arrived = ctx.alltoallv(route);
  std::sort(arrived.begin(), arrived.end(), [](const auto &a, const auto &b) {
    return a.instance != b.instance ? a.instance < b.instance : a.rank < b.rank;
  });
  std::vector<CostSample> costs;
  for (size_t i = 0; i < arrived.size();) {
    size_t j = i;
    while (j < arrived.size() && arrived[j].instance == arrived[i].instance) ++j;
    const std::vector<kernels::CollectiveSample> members(arrived.begin() + static_cast<long>(i),
                                                         arrived.begin() + static_cast<long>(j));
    const int64_t cost = kernels::instance_cost(members);
    // One sample per kind its members are (rooted flows: the root's bytes and the others'
    // may differ), so that every member finds its own.
    std::vector<kernels::CollectiveKind> kinds;
    for (const auto &m : members) kinds.push_back({m.op, kernels::size_bucket(m.bytes), m.members});
    std::sort(kinds.begin(), kinds.end());
    kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
    if (cost >= 0)
      for (const auto &k : kinds) costs.push_back({k, cost});
    i = j;
  }
  std::map<kernels::CollectiveKind, std::vector<double>> by_kind;
  for (const auto &c : ctx.allgatherv(costs)) by_kind[c.kind].push_back(static_cast<double>(c.cost));
  std::map<kernels::CollectiveKind, int64_t> out;
  // The lower quartile: an instance a descheduled member held up shows more than its cost.
  for (const auto &[kind, v] : by_kind) out[kind] = static_cast<int64_t>(kernels::quantile(v, 0.25) + 0.5);
  return out;
}

// Sets each blocking collective call's measured cost from its kind; returns the calls set.
int64_t set_measured_costs(const Context &ctx, ReplayModel &model,
                           const std::map<kernels::CollectiveKind, int64_t> &cost) {
  int64_t set = 0;
  for (size_t s = 0; s < model.programs.size(); ++s) {
    rp::RankProgram &p = model.programs[s];
    for (size_t i = 0; i < p.events.size(); ++i) {
      const rp::Event &e = p.events[i];
      if (e.items != 1 || p.items[static_cast<size_t>(e.first_item)].type != rp::ItemType::Collective) continue;
      rp::Collective &c = p.colls[static_cast<size_t>(p.items[static_cast<size_t>(e.first_item)].index)];
      if (c.flow == kernels::CollectiveFlow::Finalize) continue;
      const auto found =
          cost.find({static_cast<int32_t>(model.side[s].labels.op(i)), kernels::size_bucket(c.bytes), c.members});
      c.measured = found == cost.end() ? -1 : found->second;
      set += c.measured >= 0;
    }
  }
  std::vector<int64_t> sum = {set};
  ctx.allreduce_sum(sum);
  return sum[0];
}

// The collector's measurement of each level (`levels` 1: every pair's in level 0).
std::array<kernels::NetworkSamples, 2> probe_samples(const io::NetworkProbe &p, int levels) {
  std::array<kernels::NetworkSamples, 2> out;
  for (size_t i = 0; i < p.level.size() && i < p.kind.size() && i < p.bytes.size() && i < p.ns.size(); ++i) {
    kernels::NetworkSamples &s = out[levels == 2 && p.level[i] == 1 ? 1 : 0];
    const auto ns = static_cast<double>(p.ns[i]);
    switch (p.kind[i]) {
      case io::NetworkProbe::SendOverhead:
        s.send_overhead.push_back(ns);
        break;
      case io::NetworkProbe::RecvOverhead:
        s.recv_overhead.push_back(ns);
        break;
      case io::NetworkProbe::Gap:
        s.gap.push_back(ns);
        break;
      case io::NetworkProbe::Transfer:
        s.transfer_bytes.push_back(static_cast<double>(p.bytes[i]));
        s.transfer_ns.push_back(ns);
        break;
      default:  // a kind this perfsift does not know
        break;
    }
  }
  return out;
}

// The matched messages of each level, run-wide.
std::vector<int64_t> messages_per_level(const Context &ctx, const MatchedMessageTable &messages,
                                        const std::vector<int32_t> &node_of) {
  std::vector<int64_t> counts = {0, 0};
  for (const MatchedMessage m : messages) ++counts[kernels::off_node_pair(node_of, m.src, m.dst) ? 1 : 0];
  ctx.allreduce_sum(counts);
  return counts;
}

}  // namespace

RunNetwork estimate_run_network(const Context &ctx, ReplayModel &model, const MatchedMessageTable &messages,
                                const kernels::LogGPS &fallback, ParameterOrigin fallback_origin) {
  RunNetwork n;
  std::vector<int64_t> counts = {static_cast<int64_t>(messages.size())};
  ctx.allreduce_sum(counts);
  const int64_t every = std::max<int64_t>(1, (counts[0] + kSampledMessages - 1) / kSampledMessages);
  std::vector<int32_t> node_of;
  n.pairs = rank_placement(ctx.store().run(), node_of);
  n.levels = node_of.empty() ? 1 : 2;
  const double clock_error = clock_error_ns(ctx.store());
  const auto samples = kernels::network_samples(send_calls(ctx, model, every), message_samples(ctx, messages, every),
                                                node_of, clock_error + kFlightMarginNs, fallback.S);
  const auto level_messages = messages_per_level(ctx, messages, node_of);
  const auto probe = probe_samples(ctx.store().run().network_probe, n.levels);
  n.probe_cost_ns =
      ctx.store().run().network_probe.level.empty() ? std::nan("") : ctx.store().run().network_probe.cost_ns;
  for (int l = 0; l < n.levels; ++l) {
    const auto k = static_cast<size_t>(l);
    // What the run has too few messages for, the collector's measurement gives, if any.
    const kernels::NetworkEstimate base = kernels::measured_fallback(probe[k], fallback, fallback_origin);
    n.level[l] = kernels::estimate_network(gathered(ctx, samples[k]), base, clock_error, level_messages[k]);
  }
  n.estimate = n.level[0];
  n.replay =
      n.levels == 2 ? kernels::two_level_network(n.level[0].params, n.level[1].params, node_of) : n.level[0].params;
  int64_t calls = 0;
  const auto costs = measured_collective_costs(ctx, model, calls);
  std::vector<int64_t> total = {calls};
  ctx.allreduce_sum(total);
  n.collective_calls = total[0];
  n.collective_kinds = static_cast<int64_t>(costs.size());
  n.measured_calls = set_measured_costs(ctx, model, costs);
  return n;
}

std::string rank_placement(const io::RunInfo &run, std::vector<int32_t> &node_of) {
  node_of.clear();
  const std::string &hosts = run.hostname_list;
  const auto names = static_cast<int32_t>(std::count(hosts.begin(), hosts.end(), ',') + 1);
  const auto &placed = run.rank_hosts;
  if (placed.empty())
    return names == 1 ? "on-node pairs" : "all pairs (the store does not say which rank ran on which host)";
  if (placed.size() != static_cast<size_t>(run.nranks) ||
      std::any_of(placed.begin(), placed.end(), [&](int32_t h) { return h < 0 || h >= names; }))
    return "all pairs (the store's /rank_hosts does not fit its " + std::to_string(run.nranks) + " ranks and " +
           std::to_string(names) + " hosts: ignored)";
  if (std::all_of(placed.begin(), placed.end(), [&](int32_t h) { return h == placed[0]; })) return "on-node pairs";
  node_of = placed;
  return "on-node pairs";
}

void override_with_file(RunNetwork &n, const kernels::LogGPS &file) {
  if (n.levels == 2)  // the file's counts: what both levels had
    for (auto [all, off] : {std::pair{&n.estimate.o_s, &n.level[1].o_s},
                            {&n.estimate.o_r, &n.level[1].o_r},
                            {&n.estimate.g, &n.level[1].g},
                            {&n.estimate.G, &n.level[1].G},
                            {&n.estimate.L, &n.level[1].L}})
      all->messages += off->messages;
  n.estimate.params = file;
  for (auto *p : {&n.estimate.o_s, &n.estimate.o_r, &n.estimate.g, &n.estimate.G, &n.estimate.L})
    p->origin = ParameterOrigin::File;
  n.level[0] = n.estimate;
  n.levels = 1;
  n.pairs = "all pairs (the file)";
  n.replay = file;
}

namespace {

using NamedParameters = std::array<std::pair<const char *, const kernels::ParameterEstimate *>, 5>;
NamedParameters named(const kernels::NetworkEstimate &e) {
  return {{{"o_s", &e.o_s}, {"o_r", &e.o_r}, {"g", &e.g}, {"G", &e.G}, {"L", &e.L}}};
}

// One level's parameters: "o_s 290 ns (this run, 1,234 samples); ...".
std::string level_summary(const kernels::NetworkEstimate &e) {
  const kernels::LogGPS &p = e.params;
  const double values[] = {p.os0, p.or0, p.g, p.G, p.L};
  const NamedParameters params = named(e);
  std::string out;
  for (size_t k = 0; k < params.size(); ++k) {
    char b[160];
    const auto &[name, q] = params[k];
    std::snprintf(b, sizeof b, "%s%s %.3g %s (%s, %s sample%s)", k ? "; " : "", name, values[k], k == 3 ? "ns/B" : "ns",
                  kernels::origin_name(q->origin), format_count(q->messages).c_str(), q->messages == 1 ? "" : "s");
    out += b;
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, io::AttrValue>> run_network_attributes(const RunNetwork &n) {
  std::vector<std::pair<std::string, io::AttrValue>> out;
  for (const auto &[name, p] : named(n.estimate)) {
    out.emplace_back(std::string("loggps_origin_") + name, std::string(kernels::origin_name(p->origin)));
    out.emplace_back(std::string("loggps_messages_") + name, p->messages);
  }
  out.emplace_back("loggps_L_uncertainty_ns", n.estimate.L_uncertainty_ns);
  out.emplace_back("loggps_pairs", n.pairs);
  out.emplace_back("loggps_levels", static_cast<int64_t>(n.levels));
  if (n.levels == 2) {  // off-node pairs: their own values, origins and samples
    const kernels::NetworkEstimate &off = n.level[1];
    const kernels::LogGPS &p = off.params;
    const double values[] = {p.os0, p.or0, p.g, p.G, p.L};
    const NamedParameters params = named(off);
    for (size_t k = 0; k < params.size(); ++k) {
      const auto &[name, q] = params[k];
      out.emplace_back(std::string("loggps_off_node_") + name + (k == 3 ? "_ns_per_byte" : "_ns"), values[k]);
      out.emplace_back(std::string("loggps_off_node_origin_") + name, std::string(kernels::origin_name(q->origin)));
      out.emplace_back(std::string("loggps_off_node_messages_") + name, q->messages);
    }
    out.emplace_back("loggps_off_node_pair_messages", off.messages);
    out.emplace_back("loggps_on_node_pair_messages", n.level[0].messages);
  }
  out.emplace_back("loggps_probe_cost_ns", n.probe_cost_ns);
  out.emplace_back("loggps_collective_kinds_measured", n.collective_kinds);
  out.emplace_back("loggps_collective_calls_measured", n.measured_calls);
  out.emplace_back("loggps_collective_calls", n.collective_calls);
  out.emplace_back("loggps_summary", run_network_summary(n));
  return out;
}

std::string run_network_summary(const RunNetwork &n) {
  std::string out = n.pairs + ": " + level_summary(n.estimate);
  if (n.levels == 2) out += "; off-node pairs: " + level_summary(n.level[1]);
  out += "; collectives as measured: " + format_count(n.measured_calls) + " of " + format_count(n.collective_calls) +
         " calls";
  return out;
}

}  // namespace perfsift::pipeline
