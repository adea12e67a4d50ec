// Region paths name one chain of regions whatever bytes the names hold.
#include "io/region_path.h"

#include <gtest/gtest.h>

#include <random>

using namespace perfsift::io;

TEST(RegionPath, PlainNamesAreWrittenAsTheyAre) {
  EXPECT_EQ(child_region_path("", true, "solve"), "solve");
  EXPECT_EQ(child_region_path("solve", false, "smooth"), "solve/smooth");
  EXPECT_EQ(child_region_path("solve", false, "main loop"), "solve/main loop");
  EXPECT_EQ(child_region_path("solve", false, "say \"hi\""), "solve/say \"hi\"");
  EXPECT_EQ(split_region_path("solve/smooth"), (std::vector<std::string>{"solve", "smooth"}));
}

TEST(RegionPath, SlashesQuotesAndEmptyNamesAreQuoted) {
  EXPECT_EQ(child_region_path("", true, "io/read"), "\"io/read\"");
  EXPECT_EQ(child_region_path("a", false, "\"q\\"), "a/\"\\\"q\\\\\"");
  EXPECT_EQ(child_region_path("a", false, ""), "a/\"\"");
  const std::string p = child_region_path(child_region_path("", true, "io/read"), false, "x/y");
  EXPECT_EQ(split_region_path(p), (std::vector<std::string>{"io/read", "x/y"}));
  EXPECT_EQ(region_leaf_name(p), "x/y");
  EXPECT_EQ(p.substr(0, region_path_parent_end(p)), "\"io/read\"");
  EXPECT_EQ(region_path_parent_end("\"io/read\""), std::string::npos);
}

TEST(RegionPath, BareSlashesAndMalformedQuotesSplitWithoutThrowing) {
  EXPECT_EQ(split_region_path("\"a\"b/c"), (std::vector<std::string>{"\"a\"b", "c"}));
  EXPECT_EQ(split_region_path("\"open/x"), (std::vector<std::string>{"\"open", "x"}));
  EXPECT_EQ(region_name_of_component("io/read"), "io/read");  // no quoted component: as it stands
  EXPECT_EQ(region_name_of_component("\"io/read\""), "io/read");
}

TEST(RegionPath, RandomChainsRoundTrip) {
  const std::string alphabet = "ab/\"\\ \xff";
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::string> chain(1 + rng() % 4);
    std::string path;
    for (size_t k = 0; k < chain.size(); ++k) {
      for (size_t n = rng() % 6; n > 0; --n) chain[k] += alphabet[rng() % alphabet.size()];
      path = child_region_path(path, k == 0, chain[k]);
    }
    ASSERT_EQ(split_region_path(path), chain) << path;
    ASSERT_EQ(region_leaf_name(path), chain.back()) << path;
  }
}
