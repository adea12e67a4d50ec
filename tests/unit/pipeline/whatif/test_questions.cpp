// What-if questions name any region: every question a stage generates for a region
// (quote_region) parses back to that region, whatever bytes its name holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "io/region_path.h"
#include "pipeline/whatif/questions.h"

using namespace perfsift::pipeline;

namespace {

// Random names of the kinds users write and worse: spaces, tabs, quotes, backslashes,
// slashes, markup, non-UTF-8 bytes, keywords, long names.
std::vector<std::string> hostile_names(size_t count, uint32_t seed) {
  const std::vector<std::string> pieces = {"main", " ",    "\t",       "\"",   "\\", "/",    "<",  ">", "&",     "and",
                                           "of",   "\xff", "\xe2\x82", "loop", "io", "read", "\n", "'", "region"};
  std::mt19937 rng(seed);
  std::vector<std::string> names = {
      "and", "of", "main loop", "io/read", "a\"b", "back\\slash", "\"", "\\", std::string(1024, 'x') + " y"};
  while (names.size() < count) {
    std::string n;
    const size_t parts = 1 + rng() % 6;
    for (size_t k = 0; k < parts; ++k) n += pieces[rng() % pieces.size()];
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);  // region paths are unique
  }
  return names;
}

}  // namespace

TEST(Questions, GeneratedQuestionsParseBackToTheirRegion) {
  // A random region tree of hostile names, with paths as the collector writes them.
  const auto names = hostile_names(500, 7);
  std::mt19937 rng(11);
  std::vector<std::string> paths = {"(program)"};
  std::vector<std::vector<std::string>> chains = {{}};
  for (const auto &n : names) {
    const size_t parent = rng() % 3 == 0 ? 0 : rng() % paths.size();
    paths.push_back(perfsift::io::child_region_path(paths[parent], parent == 0, n));
    chains.push_back(chains[parent]);
    chains.back().push_back(n);
  }
  for (size_t id = 1; id < paths.size(); ++id) {
    ASSERT_EQ(perfsift::io::split_region_path(paths[id]), chains[id]) << paths[id];
    const std::string q = quote_region(paths[id]);
    for (const std::string &text : {"balance region " + q, "zero-wait region " + q, "balance steps of " + q,
                                    "balance step 3 of " + q + " and ideal-network", "scale 0.5000 region " + q}) {
      Question parsed;
      ASSERT_NO_THROW(parsed = parse_question(text, paths)) << text;
      ASSERT_EQ(parsed.clauses.size(), 1u) << text;
      EXPECT_EQ(parsed.clauses[0].sel.region_id, static_cast<int32_t>(id)) << text;
    }
  }
}

TEST(Questions, NamesHoldingSlashesAreOneRegion) {
  using perfsift::io::child_region_path;
  // Top-level "io/read" and "read" below "io" are two regions with two paths.
  const std::vector<std::string> paths = {"(program)", "io", child_region_path("", true, "io/read"),
                                          child_region_path("io", false, "read")};
  EXPECT_EQ(paths[2], "\"io/read\"");
  EXPECT_EQ(paths[3], "io/read");
  EXPECT_EQ(parse_question("balance region \"io/read\"", paths).clauses[0].sel.region_id, 2);
  EXPECT_EQ(parse_question("balance region io/read", paths).clauses[0].sel.region_id, 3);
  EXPECT_EQ(quote_region(paths[2]), "\"io/read\"");
  // A name written in quotes that names no region is tried as a path ("outer/a b").
  const std::vector<std::string> nested = {"(program)", "outer", "outer/a b"};
  EXPECT_EQ(parse_question("balance region \"outer/a b\"", nested).clauses[0].sel.region_id, 2);
}

TEST(Questions, PlainNamesStayUnquoted) {
  EXPECT_EQ(quote_region("solve/smooth"), "solve/smooth");
  EXPECT_EQ(quote_region("main loop"), "\"main loop\"");
  EXPECT_EQ(quote_region("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(quote_region("and"), "\"and\"");
}

TEST(Questions, QuotesWithinAWordAndErrors) {
  const std::vector<std::string> paths = {"(program)", "outer/a b", "outer"};
  EXPECT_EQ(parse_question("balance region outer/\"a b\"", paths).clauses[0].sel.region_id, 1);
  EXPECT_EQ(parse_question("balance region \"outer\"", paths).clauses[0].sel.region_id, 2);
  EXPECT_THROW(parse_question("balance region \"outer", paths), QuestionError);
  // Unquoted, the name's words are separate words: the question says what it missed.
  EXPECT_THROW(parse_question("balance region outer/a b", paths), QuestionError);
}

TEST(Questions, AUniqueLeafNameSelectsItsRegion) {
  const std::vector<std::string> paths = {"(program)", "iteration", "iteration/work", "setup/io", "solve/io"};
  EXPECT_EQ(parse_question("balance region work", paths).clauses[0].sel.region_id, 2);
  EXPECT_EQ(parse_question("balance region iteration", paths).clauses[0].sel.region_id, 1);
  try {
    parse_question("balance region io", paths);
    FAIL() << "an ambiguous leaf was accepted";
  } catch (const QuestionError &e) {
    EXPECT_NE(std::string(e.what()).find("'io' names 2 regions (setup/io, solve/io); write the whole path"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_question("balance region wrk", paths);
    FAIL() << "a missing region was accepted";
  } catch (const QuestionError &e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'work'?"), std::string::npos) << e.what();
  }
}
