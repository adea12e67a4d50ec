#include <gtest/gtest.h>

#include "config/collect_config.h"

using namespace perfsift::config;

namespace {
EnvLookup no_env() {
  return [](const std::string &) { return std::nullopt; };
}
std::string error_of(const std::string &text) {
  try {
    parse(collect_keys(), text, "collect.toml", no_env());
  } catch (const ConfigError &e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, DefaultsWhenEmpty) {
  Values v = parse(collect_keys(), "", "", no_env());
  EXPECT_EQ(v.get_int("buffer_mb"), 64);
  EXPECT_EQ(v.get_list("papi.events").size(), 6u);
  EXPECT_EQ(v.get_list("papi.events")[0], "PAPI_TOT_CYC");
}

TEST(Config, UnknownKeyNamesPlaceAndNearest) {
  EXPECT_EQ(
      error_of("buffer_mb = 8\nbufer_mb = 3\n"),
      "collect.toml:2:1: unknown key 'bufer_mb'; did you mean 'buffer_mb'? (perfsift lists every key with --help)");
  EXPECT_EQ(
      error_of("[papi]\nevent = []\n"),
      "collect.toml:2:1: unknown key 'papi.event'; did you mean 'papi.events'? (perfsift lists every key with --help)");
}

TEST(Config, WrongTypeShowsExample) {
  std::string e = error_of("buffer_mb = \"big\"\n");
  EXPECT_NE(e.find("collect.toml:1:"), std::string::npos) << e;
  EXPECT_NE(e.find("must be integer, e.g. buffer_mb = 64"), std::string::npos) << e;
}

TEST(Config, SyntaxErrorHasLineAndColumn) {
  std::string e = error_of("buffer_mb = = 3\n");
  EXPECT_EQ(e.rfind("collect.toml:1:", 0), 0u) << e;
}

TEST(Config, EnvironmentOverridesFile) {
  auto env = [](const std::string &k) -> std::optional<std::string> {
    if (k == "PERFSIFT_PAPI_EVENTS") return std::string("perf::TASK-CLOCK, PAPI_TOT_INS");
    if (k == "PERFSIFT_OUTPUT") return std::string("/tmp/x.h5");
    return std::nullopt;
  };
  CollectConfig c = load_collect_config("", env);
  ASSERT_EQ(c.papi_events.size(), 2u);
  EXPECT_EQ(c.papi_events[0], "perf::TASK-CLOCK");
  EXPECT_EQ(c.output, "/tmp/x.h5");
  EXPECT_EQ(c.spill_dir, "/tmp/x.h5.spill");
}

TEST(Config, BadEnvironmentValueIsNamed) {
  auto env = [](const std::string &k) -> std::optional<std::string> {
    if (k == "PERFSIFT_BUFFER_MB") return std::string("lots");
    return std::nullopt;
  };
  try {
    load_collect_config("", env);
    FAIL();
  } catch (const ConfigError &e) {
    EXPECT_NE(std::string(e.what()).find("PERFSIFT_BUFFER_MB='lots': expected integer"), std::string::npos);
  }
}

TEST(Config, Nearest) { EXPECT_EQ(nearest("clock.sync_round", {"clock.sync_rounds", "output"}), "clock.sync_rounds"); }

TEST(Config, PythonSitesOnUnlessTurnedOff) {
  EXPECT_TRUE(load_collect_config("", no_env()).python_sites);
  EXPECT_FALSE(parse(collect_keys(), "[python]\nsites = false\n", "collect.toml", no_env()).get_bool("python.sites"));
  auto off = [](const std::string &k) -> std::optional<std::string> {
    if (k == "PERFSIFT_PYTHON_SITES") return std::string("0");
    return std::nullopt;
  };
  EXPECT_FALSE(load_collect_config("", off).python_sites);
}

// The program's MPI wrappers: none by default (calls sited at their return address); a
// comma list from the environment; a depth that cannot hold a wrapper and its caller refused.
TEST(Config, SiteWrappersAndDepth) {
  const CollectConfig plain = load_collect_config("", no_env());
  EXPECT_TRUE(plain.site_wrappers.empty());
  EXPECT_EQ(plain.site_depth, 4);
  auto env = [](const std::string &k) -> std::optional<std::string> {
    if (k == "PERFSIFT_SITE_WRAPPERS") return std::string("Foam::reduce*, exchange");
    if (k == "PERFSIFT_SITE_DEPTH") return std::string("6");
    return std::nullopt;
  };
  const CollectConfig c = load_collect_config("", env);
  EXPECT_EQ(c.site_wrappers, (std::vector<std::string>{"Foam::reduce*", "exchange"}));
  EXPECT_EQ(c.site_depth, 6);
  auto shallow = [](const std::string &k) -> std::optional<std::string> {
    if (k == "PERFSIFT_SITE_DEPTH") return std::string("1");
    return std::nullopt;
  };
  try {
    load_collect_config("", shallow);
    FAIL();
  } catch (const ConfigError &e) {
    EXPECT_EQ(std::string(e.what()), "PERFSIFT_SITE_DEPTH: sites.depth must be 2 to 16");
  }
}
