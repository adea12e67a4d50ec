#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <cstring>
#include <fstream>

#include "io/spill.h"

using namespace perfsift::io;

namespace {
std::string temp_dir() {
  auto d = std::filesystem::temp_directory_path() / ("perfsift-spill-" + std::to_string(getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}
SpillHeader header(int rank) { return make_spill_header(rank, 4, 123); }
}  // namespace

TEST(Spill, RoundTripEventsAndState) {
  std::string dir = temp_dir();
  SpillWriter w;
  ASSERT_TRUE(w.open(dir, header(2), nullptr));
  std::vector<Event> ev(3);
  ev[1].t_enter = 7;
  ev[2].peer = 3;
  ASSERT_TRUE(w.write_chunk(kChunkEvents, ev.data(), ev.size() * sizeof(Event)));
  ASSERT_TRUE(w.write_chunk(kChunkEvents, ev.data(), sizeof(Event)));
  SpillState st;
  st.run.nranks = 4;
  st.run.command = "./app -x";
  st.run.counters_unavailable = {"PAPI_TOT_INS"};
  st.profile_part.rank = 2;
  st.profile_part.complete = false;
  st.profile_part.region_paths = {"(program)", "solve"};
  st.profile_part.metric_names = {"visits"};
  st.profile_part.profile = {1, 5};
  st.profile_part.comms = {{42, {0, 1, 2, 3}, {}}};
  st.profile_part.callsites = {{"/bin/app", 0x40, "main", 4, "app.c", 12}};
  ASSERT_TRUE(w.write_state(st));
  w.close();
  SpillContents c = read_spill(spill_path(dir, 2));
  EXPECT_EQ(c.header.rank, 2);
  EXPECT_EQ(c.header.start_ns, 123);
  ASSERT_EQ(c.trace.events.size(), 4u);
  EXPECT_EQ(c.trace.events[1].t_enter, 7);
  EXPECT_EQ(c.trace.events[2].peer, 3);
  ASSERT_TRUE(c.has_state);
  EXPECT_FALSE(c.trace.complete);
  EXPECT_EQ(c.run.command, "./app -x");
  EXPECT_EQ(c.run.counters_unavailable, std::vector<std::string>{"PAPI_TOT_INS"});
  EXPECT_EQ(c.trace.region_paths[1], "solve");
  EXPECT_EQ(c.trace.comms[0].members.size(), 4u);
  EXPECT_EQ(c.trace.callsites[0].line, 12);
  std::filesystem::remove_all(dir);
}

TEST(Spill, TornTailIsDroppedWithWarning) {
  std::string dir = temp_dir();
  SpillWriter w;
  ASSERT_TRUE(w.open(dir, header(0), nullptr));
  std::vector<Event> ev(2);
  w.write_chunk(kChunkEvents, ev.data(), ev.size() * sizeof(Event));
  w.close();
  std::string p = spill_path(dir, 0);
  auto size = std::filesystem::file_size(p);
  std::filesystem::resize_file(p, size - 10);
  SpillContents c = read_spill(p);
  EXPECT_TRUE(c.trace.events.empty());
  EXPECT_NE(c.warning.find("torn chunk"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Spill, ForeignFileIsRejected) {
  std::string dir = temp_dir();
  std::ofstream(dir + "/rank-0.bin") << "hello world, not a spill file at all";
  EXPECT_THROW(read_spill(dir + "/rank-0.bin"), std::runtime_error);
  std::filesystem::remove_all(dir);
}
