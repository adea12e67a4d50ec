// The network estimated from a run's own messages (kernels/network_estimate.h): synthetic
// runs with known o_s, o_r, g, G and L, some samples disturbed as a descheduled call
// would, recovered; too few samples keep the fallback; two nodes keep two sets; the
// collectives' costs as the instances show them.
#include <gtest/gtest.h>

#include <map>

#include "kernels/network_estimate.h"
#include "kernels/replay.h"

namespace perfsift::kernels {
namespace {

struct Known {
  double os = 300, orr = 80, g = 400, G = 0.25, L = 700;
};

// Rank `src` sends `n` small messages back to back to `dst` (one in 10 descheduled 50 us),
// then `n` messages over five sizes that its partner waited for, then `n` small ones it
// received well after they arrived.
void add_traffic(std::vector<SendCall> &sends, std::vector<MessageSample> &messages, int32_t src, int32_t dst,
                 const Known &k, int n, int64_t t0) {
  int64_t t = t0;
  int32_t event = 0;
  for (int i = 0; i < n; ++i, ++event) {
    const int64_t late = i % 10 == 3 ? 50000 : 0;
    sends.push_back({src, dst, event, t, t + static_cast<int64_t>(k.os) + late, 8, false});
    t += static_cast<int64_t>(k.g) + late;
  }
  const int64_t sizes[] = {8, 64, 512, 4096, 32768};
  for (int i = 0; i < n; ++i) {
    t += 100000;
    MessageSample m;
    m.src = src;
    m.dst = dst;
    m.t.bytes = sizes[i % 5];
    m.t.send_enter = t;
    m.t.send_exit = t + static_cast<int64_t>(k.os);
    m.t.recv_enter = t - 20000;  // posted long before: it waited
    m.t.recv_exit =
        t + static_cast<int64_t>(k.os + k.L + k.G * static_cast<double>(m.t.bytes) + k.orr) + (i % 10 == 7 ? 80000 : 0);
    messages.push_back(m);
  }
  for (int i = 0; i < n; ++i) {
    t += 100000;
    MessageSample m;
    m.src = src;
    m.dst = dst;
    m.t.bytes = 16;
    m.t.send_enter = t;
    m.t.send_exit = t + static_cast<int64_t>(k.os);
    m.t.recv_enter = t + 30000;  // the data had arrived
    m.t.recv_exit = m.t.recv_enter + static_cast<int64_t>(k.orr) + (i % 10 == 1 ? 40000 : 0);
    messages.push_back(m);
  }
}

TEST(NetworkEstimate, RecoversKnownParametersDespiteDisturbedSamples) {
  const Known k;
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, k, 200, 0);
  const auto s = network_samples(sends, messages, {}, 3000, 65536);
  EXPECT_TRUE(s[1].send_overhead.empty());
  const NetworkEstimate e = estimate_network(s[0], LogGPS{}, ParameterOrigin::Defaults, 250, 400);
  EXPECT_NEAR(e.params.os0, k.os, 1);
  EXPECT_NEAR(e.params.or0, k.orr, 1);
  EXPECT_NEAR(e.params.g, k.g, 1);
  EXPECT_NEAR(e.params.G, k.G, 0.01);
  EXPECT_NEAR(e.params.L, k.L, 20);
  for (const auto *p : {&e.o_s, &e.o_r, &e.g, &e.G, &e.L}) {
    EXPECT_EQ(p->origin, ParameterOrigin::Run);
    EXPECT_GE(p->messages, 30);
  }
  EXPECT_EQ(e.params.source, "this run");
  EXPECT_EQ(e.L_uncertainty_ns, 250);
}

// A loaded machine: most of the largest transfers a receiver waited for also waited for a
// core (12 ms each, as on a shared 2-core host): the fastest of each size still gives G.
// Larger transfers no slower than small ones leave G unresolved (the fallback), never 0.
TEST(NetworkEstimate, TransfersSlowedByDeschedulingDoNotSetG) {
  const Known k;
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, k, 400, 0);
  std::map<int64_t, int> slowed;  // three in four of each size
  for (auto &m : messages)
    if (m.t.bytes >= 4096 && slowed[m.t.bytes]++ % 4 != 0) m.t.recv_exit += 12'000'000;
  NetworkEstimate e = estimate_network(network_samples(sends, messages, {}, 3000, 65536)[0], LogGPS{},
                                       ParameterOrigin::Defaults, 250, 800);
  EXPECT_NEAR(e.params.G, k.G, 0.01);
  for (auto &m : messages)
    if (m.t.bytes > 8 && m.t.recv_enter < m.t.send_enter)
      m.t.recv_exit = m.t.send_enter + static_cast<int64_t>(k.os + k.L + k.orr);
  e = estimate_network(network_samples(sends, messages, {}, 3000, 65536)[0], LogGPS{}, ParameterOrigin::Defaults, 250,
                       800);
  EXPECT_EQ(e.G.origin, ParameterOrigin::Defaults);
  EXPECT_EQ(e.params.G, LogGPS{}.G);
}

TEST(NetworkEstimate, TooFewMessagesKeepTheFallbackAndSaySo) {
  const Known k;
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, k, 20, 0);
  LogGPS file;
  file.L = 42;
  file.os0 = 7;
  file.source = "cal.toml";
  const NetworkEstimate e =
      estimate_network(network_samples(sends, messages, {}, 3000, 65536)[0], file, ParameterOrigin::File, 0, 60);
  EXPECT_EQ(e.o_s.origin, ParameterOrigin::File);
  EXPECT_EQ(e.o_s.messages, 20);
  EXPECT_EQ(e.params.os0, 7);
  EXPECT_EQ(e.params.L, 42);
  EXPECT_FALSE(e.any_from_run());
  EXPECT_EQ(e.params.source, "cal.toml");
  EXPECT_STREQ(origin_name(e.L.origin), "the file");
}

// The collector's measurement in the estimator's form: `n` of each kind, one in 8 slowed
// as a descheduled partner would.
NetworkSamples probe_of(const Known &k, int n) {
  NetworkSamples p;
  for (int i = 0; i < n; ++i) {
    const double late = i % 8 == 5 ? 30000 : 0;
    p.send_overhead.push_back(k.os + late);
    p.recv_overhead.push_back(k.orr + late);
    p.gap.push_back(k.g + late);
    for (const double b : {8.0, 2048.0, 8192.0, 32768.0}) {
      p.transfer_bytes.push_back(b);
      p.transfer_ns.push_back(k.os + k.L + k.G * b + k.orr + late);
    }
  }
  return p;
}

TEST(NetworkEstimate, TooFewMessagesTakeTheCollectorsMeasurementBeforeTheDefaults) {
  Known run, probed;
  probed.os = 450;
  probed.orr = 120;
  probed.g = 260;
  probed.G = 0.5;
  probed.L = 900;
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, run, 150, 0);  // enough sends: o_s and g from the run
  NetworkSamples s = network_samples(sends, messages, {}, 3000, 65536)[0];
  s.recv_overhead.resize(5);  // too few of the rest
  s.transfer_bytes.resize(5);
  s.transfer_ns.resize(5);
  const NetworkEstimate base = measured_fallback(probe_of(probed, 16), LogGPS{}, ParameterOrigin::Defaults);
  EXPECT_EQ(base.params.source, "the collector's measurement");
  const NetworkEstimate e = estimate_network(s, base, 0, 300);
  EXPECT_EQ(e.o_s.origin, ParameterOrigin::Run);
  EXPECT_NEAR(e.params.os0, run.os, 1);
  EXPECT_EQ(e.g.origin, ParameterOrigin::Run);
  for (const ParameterEstimate *p : {&e.o_r, &e.G, &e.L}) {
    EXPECT_EQ(p->origin, ParameterOrigin::Probe);
    EXPECT_STREQ(origin_name(p->origin), "the collector's measurement");
  }
  EXPECT_EQ(e.o_r.messages, 16);  // the samples it rests on: the measurement's
  EXPECT_NEAR(e.params.or0, probed.orr, 1);
  EXPECT_NEAR(e.params.G, probed.G, 0.01);
  // L from the measurement's transfers less its own overheads.
  EXPECT_NEAR(e.params.L, probed.L, 20);
  // Without a measurement (older stores, the setting off), the defaults, as before.
  const NetworkEstimate none = estimate_network(s, measured_fallback({}, LogGPS{}, ParameterOrigin::Defaults), 0, 300);
  EXPECT_EQ(none.o_r.origin, ParameterOrigin::Defaults);
  EXPECT_EQ(none.o_r.messages, 5);
  EXPECT_EQ(none.params.L, LogGPS{}.L);
  // A measurement of fewer than 10 samples a kind is not used.
  const NetworkEstimate thin = measured_fallback(probe_of(probed, 6), LogGPS{}, ParameterOrigin::Defaults);
  EXPECT_EQ(thin.o_r.origin, ParameterOrigin::Defaults);
  EXPECT_EQ(thin.params.source, "defaults");
}

TEST(NetworkEstimate, NegativeLatencyGoesToTheReceiveOverhead) {
  Known k;
  k.L = -50;  // the overheads measured alone exceed the transfer
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, k, 150, 0);
  const NetworkEstimate e = estimate_network(network_samples(sends, messages, {}, 3000, 65536)[0], LogGPS{},
                                             ParameterOrigin::Defaults, 0, 300);
  EXPECT_EQ(e.params.L, 0);
  EXPECT_NEAR(e.params.os0 + e.params.or0, k.os + k.orr + k.L, 20);
}

TEST(NetworkEstimate, TwoNodesKeepTwoParameterSets) {
  Known on, off;
  off.L = 3000;
  off.G = 0.8;
  off.os = 900;
  off.g = 1200;
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, on, 150, 0);         // ranks 0 and 1 share node 0
  add_traffic(sends, messages, 2, 0, off, 150, 1 << 30);  // rank 2 on node 1
  const auto s = network_samples(sends, messages, {0, 0, 1}, 3000, 65536);
  const NetworkEstimate near = estimate_network(s[0], LogGPS{}, ParameterOrigin::Defaults, 0, 0);
  const NetworkEstimate far = estimate_network(s[1], LogGPS{}, ParameterOrigin::Defaults, 0, 0);
  EXPECT_NEAR(near.params.L, on.L, 20);
  EXPECT_NEAR(far.params.L, off.L, 20);
  EXPECT_NEAR(near.params.G, on.G, 0.01);
  EXPECT_NEAR(far.params.G, off.G, 0.01);
  EXPECT_NEAR(near.params.os0, on.os, 1);
  EXPECT_NEAR(far.params.os0, off.os, 1);
  EXPECT_NEAR(far.params.g, off.g, 1);
}

TEST(NetworkEstimate, ASlopeNeedsTwoSizeBucketsOfEnoughTransfers) {
  const Known k;
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, k, 100, 0);  // 20 transfers of each size: too few per size
  const NetworkEstimate e = estimate_network(network_samples(sends, messages, {}, 3000, 65536)[0], LogGPS{},
                                             ParameterOrigin::Defaults, 0, 300);
  EXPECT_EQ(e.G.origin, ParameterOrigin::Defaults);
  EXPECT_EQ(e.G.messages, 100);
  EXPECT_EQ(e.params.G, LogGPS{}.G);
  EXPECT_EQ(e.o_s.origin, ParameterOrigin::Run);
}

// Two buckets of tiny messages (4 B, 8 B), their fastest transfers apart by the spread
// of the constants: no per-byte cost can be read from 4 bytes.
TEST(NetworkEstimate, SizesTooCloseToShowAPerByteCostLeaveGUnresolved) {
  NetworkSamples s;
  for (int i = 0; i < 60; ++i) {
    s.transfer_bytes.push_back(i % 2 ? 8 : 4);
    s.transfer_ns.push_back((i % 2 ? 844 : 239) + 100.0 * i);
  }
  const NetworkEstimate e = estimate_network(s, LogGPS{}, ParameterOrigin::Defaults, 0, 60);
  EXPECT_EQ(e.G.origin, ParameterOrigin::Defaults);
  EXPECT_EQ(e.params.G, LogGPS{}.G);
}

TEST(NetworkEstimate, CallsDoingMoreThanTheTransferAreLeftOut) {
  const Known k;
  std::vector<SendCall> sends;
  std::vector<MessageSample> messages;
  add_traffic(sends, messages, 0, 1, k, 100, 0);
  for (auto &m : messages) m.recv_alone = false;  // MPI_Sendrecv, MPI_Waitall
  const auto s = network_samples(sends, messages, {}, 3000, 65536);
  EXPECT_TRUE(s[0].recv_overhead.empty());
  EXPECT_TRUE(s[0].transfer_ns.empty());
  EXPECT_EQ(s[0].send_overhead.size(), 100u);
}

TEST(CollectivesAsMeasured, EachFlowsCostAfterItsSynchronisation) {
  using F = CollectiveFlow;
  // All: the last entrant's time in the call.
  std::vector<CollectiveSample> all = {{1, 0, 2000, 0, -1, 3, F::All, 5, 8},
                                       {1, 100, 1900, 1, -1, 3, F::All, 5, 8},
                                       {1, 500, 1700, 2, -1, 3, F::All, 5, 8}};
  EXPECT_EQ(instance_cost(all), 1200);
  all.pop_back();  // a member missing: no cost
  EXPECT_EQ(instance_cost(all), -1);
  // FromRoot: the members that entered before the root, from its entry to their exit.
  const std::vector<CollectiveSample> bcast = {{2, 1000, 1100, 0, 0, 3, F::FromRoot, 6, 4},
                                               {2, 200, 1900, 1, 0, 3, F::FromRoot, 6, 4},
                                               {2, 300, 1900, 2, 0, 3, F::FromRoot, 6, 4}};
  EXPECT_EQ(instance_cost(bcast), 900);
  // ToRoot: the root's exit after the last entry.
  const std::vector<CollectiveSample> reduce = {{3, 0, 5000, 0, 0, 2, F::ToRoot, 7, 4},
                                                {3, 4000, 4100, 1, 0, 2, F::ToRoot, 7, 4}};
  EXPECT_EQ(instance_cost(reduce), 1000);
  EXPECT_EQ(size_bucket(0), 0);
  EXPECT_EQ(size_bucket(8), 4);
}

TEST(CollectivesAsMeasured, TheRunsNetworkUsesThemAndAnIdealOneDoesNot) {
  replay::Collective c;
  c.rounds = 2;
  c.bytes = 8;
  c.measured = 777;
  LogGPS run;
  EXPECT_EQ(replay::collective_call_cost(run, c), 777);
  run.collectives_as_measured = false;
  EXPECT_EQ(replay::collective_call_cost(run, c), collective_cost(run, 2, 8));
  EXPECT_EQ(replay::collective_call_cost(LogGPS::ideal(), c), 0);
  c.measured = -1;
  EXPECT_EQ(replay::collective_call_cost(LogGPS{}, c), collective_cost(LogGPS{}, 2, 8));
}

}  // namespace
}  // namespace perfsift::kernels
