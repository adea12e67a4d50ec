// Each rank's node as the store records it: two levels where the ranks ran on several
// nodes, one level (and why) otherwise.
#include <gtest/gtest.h>

#include "pipeline/replay/run_network_estimate.h"

using perfsift::io::RunInfo;
using perfsift::pipeline::rank_placement;

namespace {
RunInfo run(int32_t nranks, std::string hosts, std::vector<int32_t> rank_hosts) {
  RunInfo r;
  r.nranks = nranks;
  r.hostname_list = std::move(hosts);
  r.rank_hosts = std::move(rank_hosts);
  return r;
}
}  // namespace

TEST(RankPlacement, RanksOnTwoNodesGiveEachRanksNode) {
  std::vector<int32_t> node_of;
  EXPECT_EQ(rank_placement(run(4, "nodea,nodeb", {0, 0, 1, 1}), node_of), "on-node pairs");
  EXPECT_EQ(node_of, (std::vector<int32_t>{0, 0, 1, 1}));
}

TEST(RankPlacement, OneNodeOrAStoreThatDoesNotSayIsOneLevel) {
  std::vector<int32_t> node_of = {7};
  EXPECT_EQ(rank_placement(run(3, "nodea", {0, 0, 0}), node_of), "on-node pairs");
  EXPECT_TRUE(node_of.empty());
  // Older stores: hosts without each rank's.
  EXPECT_EQ(rank_placement(run(3, "nodea", {}), node_of), "on-node pairs");
  EXPECT_TRUE(node_of.empty());
  EXPECT_EQ(rank_placement(run(3, "nodea,nodeb", {}), node_of),
            "all pairs (the store does not say which rank ran on which host)");
  EXPECT_TRUE(node_of.empty());
}

TEST(RankPlacement, ARecordThatDoesNotFitTheRunIsSaidAndIgnored) {
  std::vector<int32_t> node_of;
  const std::string short_one = rank_placement(run(4, "nodea,nodeb", {0, 1}), node_of);
  EXPECT_NE(short_one.find("does not fit its 4 ranks and 2 hosts"), std::string::npos) << short_one;
  EXPECT_TRUE(node_of.empty());
  const std::string beyond = rank_placement(run(2, "nodea,nodeb", {0, 2}), node_of);
  EXPECT_NE(beyond.find("ignored"), std::string::npos) << beyond;
  EXPECT_TRUE(node_of.empty());
}
