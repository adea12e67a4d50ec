#include <gtest/gtest.h>

#include "kernels/rank_set.h"

#include "kernels/message_balance.h"

using namespace perfsift;

TEST(MessageBalance, CountsUnmatchedPerChannel) {
  using kernels::Channel;
  std::vector<Channel> sends = {{0, 0, 1, 5}, {0, 0, 1, 5}, {0, 1, 0, 5}, {1, 0, 1, 5}};
  std::vector<Channel> recvs = {{0, 0, 1, 5}, {0, 1, 0, 5}, {0, 1, 0, 5}, {0, 2, 0, 9}};
  auto b = kernels::balance_messages(sends, recvs);
  EXPECT_EQ(b.sends, 4);
  EXPECT_EQ(b.receives, 4);
  EXPECT_EQ(b.unmatched_sends, 2);     // one more 0->1 tag 5 on comm 0, and comm 1's message
  EXPECT_EQ(b.unmatched_receives, 2);  // one more 1->0, and the 2->0 tag 9
  EXPECT_EQ(b.channels_with_unmatched, 4);
}

TEST(MessageBalance, AllMatched) {
  std::vector<kernels::Channel> m = {{0, 0, 1, 1}, {0, 1, 0, 1}};
  auto b = kernels::balance_messages(m, m);
  EXPECT_EQ(b.unmatched_sends + b.unmatched_receives, 0);
}

TEST(RankSet, BriefRangesStayShort) {
  using namespace perfsift::kernels;
  EXPECT_EQ(format_ranges_brief({{0, 3}, {7, 7}}), "0-3,7");
  RankRanges many;
  for (int32_t r = 0; r < 1000; r += 2) many.push_back({r, r});
  const std::string b = format_ranges_brief(many, 40);
  EXPECT_LE(b.size(), 40u);
  EXPECT_EQ(b.substr(0, 6), "0,2,4,");
  EXPECT_NE(b.find("...(500 ranks)"), std::string::npos);
}
