#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

#include "io/spill.h"
#include "io/trace_store.h"

using namespace perfsift::io;

namespace {
std::string temp_dir() {
  auto d = std::filesystem::temp_directory_path() / ("perfsift-spill-" + std::to_string(getpid()));
  std::filesystem::create_directories(d);
  return d.string();
}
SpillHeader header(int rank) { return make_spill_header(rank, 4, 123); }

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
  st.run.hostname_list = "node001,node017";
  st.run.rank_hosts = {0, 1, 1, 0};
  st.profile_part.rank = 2;
  st.profile_part.complete = false;
  st.profile_part.region_paths = {"(program)", "solve"};
  st.profile_part.metric_names = {"visits"};
  st.profile_part.profile = {1, 5};
  st.profile_part.comms = {{42, {0, 1, 2, 3}, {}}};
  st.profile_part.callsites = {{"/bin/app", 0x40, "main", 4, "app.c", 12, {}}};
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
  EXPECT_EQ(c.run.hostname_list, "node001,node017");
  EXPECT_EQ(c.run.rank_hosts, (std::vector<int32_t>{0, 1, 1, 0}));
  std::filesystem::remove_all(dir);

  // The state ends with the host names; a state without them is damaged, not read as
  // one of an earlier layout.
  const std::string whole = serialize_state(st);
  EXPECT_EQ(deserialize_state(whole).run.hostname_list, "node001,node017");
  const std::string without_hosts = whole.substr(0, whole.size() - 4 - st.run.hostname_list.size());
  EXPECT_THROW(deserialize_state(without_hosts), std::runtime_error);
}

// A call site reached through the program's MPI wrappers keeps its wrapper frames; a state
// written before they were kept (it ends after the collector's call cost) reads as direct
// calls, and a wrapper section for another number of sites is damage.
TEST(Spill, WrapperFramesRoundTripAndMayBeAbsent) {
  SpillState st;
  st.run.nranks = 1;
  st.profile_part.callsites = {{"/bin/app", 0x40, "main", 4, "app.c", 12, {}},
                               {"/bin/app", 0x90, "solve_p", 8, "", 0, {{"/lib/libw.so", 0x1c, "reduce", 0x1c}}}};
  const std::string whole = serialize_state(st);
  const auto back = deserialize_state(whole).profile_part.callsites;
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[0].via.empty());
  ASSERT_EQ(back[1].via.size(), 1u);
  EXPECT_EQ(back[1].via[0], st.profile_part.callsites[1].via[0]);

  const size_t section = 8 + 8 + (8 + 4 + 12 + 8 + 4 + 6 + 8);  // count, two frame lists, one frame
  const size_t after = 5 * 8 + 8;  // then the ranks' nodes and the network measurement, both empty
  const size_t start = whole.size() - after - section;
  const auto before = deserialize_state(whole.substr(0, start)).profile_part.callsites;
  ASSERT_EQ(before.size(), 2u);
  EXPECT_TRUE(before[1].via.empty());

  std::string other = whole;
  other[start] = 3;  // three sites' frames for two sites
  EXPECT_THROW(deserialize_state(other), std::runtime_error);
}

// A file as the collector writes it: two flushes of records, then the state chunk.
// Returns the byte offset where the second events chunk starts.
size_t write_sample(const std::string &dir, int rank) {
  SpillWriter w;
  EXPECT_TRUE(w.open(dir, header(rank), nullptr));
  std::vector<Event> ev(5);
  for (size_t i = 0; i < ev.size(); ++i) ev[i].t_enter = static_cast<int64_t>(i + 1);
  std::vector<RequestRecord> rq(2);
  std::vector<CompletionRecord> cp(1);
  std::vector<StepRecord> st(1);
  EXPECT_TRUE(w.write_records(ev, rq, cp, st));
  const size_t second = std::filesystem::file_size(w.path());
  EXPECT_TRUE(w.write_records(ev, rq, cp, st));
  SpillState s;
  s.run.nranks = 4;
  s.run.command = "./app";
  s.profile_part.rank = rank;
  s.profile_part.region_paths = {"(program)", "solve"};
  s.profile_part.metric_names = {"visits", "wall"};
  s.profile_part.profile = {1, 2, 3, 4};
  s.profile_part.comms = {{42, {0, 1, 2, 3}, {}}};
  s.profile_part.callsites = {{"/bin/app", 0x40, "main", 4, "app.c", 12, {}}};
  EXPECT_TRUE(w.write_state(s));
  w.close();
  return second;
}

std::string read_bytes(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_bytes(const std::string &p, const std::string &b) { std::ofstream(p, std::ios::binary) << b; }
}  // namespace

TEST(Spill, TornTailKeepsCompleteRecords) {
  std::string dir = temp_dir();
  SpillWriter w;
  ASSERT_TRUE(w.open(dir, header(0), nullptr));
  std::vector<Event> ev(2);
  ev[0].t_enter = 11;
  w.write_chunk(kChunkEvents, ev.data(), ev.size() * sizeof(Event));
  w.close();
  std::string p = spill_path(dir, 0);
  auto size = std::filesystem::file_size(p);
  std::filesystem::resize_file(p, size - 10);
  SpillContents c = read_spill(p);
  ASSERT_EQ(c.trace.events.size(), 1u);
  EXPECT_EQ(c.trace.events[0].t_enter, 11);
  EXPECT_NE(c.warning.find("truncated at byte " + std::to_string(size - 10)), std::string::npos) << c.warning;
  EXPECT_NE(c.warning.find("kept its 1 complete records"), std::string::npos) << c.warning;
  std::filesystem::remove_all(dir);
}

// A kill during a flush cuts the file anywhere: at every byte, read_spill returns every
// complete record before the cut (with a warning when something was cut), or throws
// io::Error for a cut inside the header; it never crashes.
TEST(Spill, TruncatedAtEveryByteKeepsThePrefix) {
  std::string dir = temp_dir();
  const std::string p = spill_path(dir, 1);
  const size_t second = write_sample(dir, 1);
  const std::string full = read_bytes(p);
  const size_t chunk = 16;
  // A cut between chunks leaves a well-formed file: only those go without a warning.
  std::set<size_t> boundaries{full.size()};
  for (size_t start : {sizeof(SpillHeader), second}) {
    size_t at = start;
    boundaries.insert(at);
    for (size_t bytes : {5 * sizeof(Event), 2 * sizeof(RequestRecord), sizeof(CompletionRecord), sizeof(StepRecord)})
      boundaries.insert(at += chunk + bytes);
  }
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    write_bytes(p, full.substr(0, cut));
    if (cut < sizeof(SpillHeader)) {
      try {
        read_spill(p);
        ADD_FAILURE() << "cut at " << cut << " did not throw";
      } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(cut == 0 ? "empty" : "shorter than"), std::string::npos) << e.what();
      }
      continue;
    }
    SpillContents c = read_spill(p);
    EXPECT_EQ(c.header.rank, 1);
    const bool whole = cut == full.size();
    EXPECT_EQ(c.warning.empty(), boundaries.count(cut) == 1) << "cut at " << cut;
    EXPECT_EQ(c.has_state, whole) << "cut at " << cut;
    // Events of the first flush, then of the second: all complete ones before the cut.
    size_t expect = 0;
    for (size_t start : {sizeof(SpillHeader), second})
      if (cut > start + chunk) expect += std::min<size_t>(5, (cut - start - chunk) / sizeof(Event));
    ASSERT_EQ(c.trace.events.size(), expect) << "cut at " << cut;
    for (size_t i = 0; i < expect; ++i) EXPECT_EQ(c.trace.events[i].t_enter, static_cast<int64_t>(i % 5 + 1));
    if (whole) {
      EXPECT_EQ(c.trace.requests.size(), 4u);
      EXPECT_EQ(c.trace.profile.size(), 4u);
      EXPECT_EQ(c.trace.callsites.at(0).line, 12);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Spill, HeaderOnlyHasNoData) {
  std::string dir = temp_dir();
  SpillWriter w;
  ASSERT_TRUE(w.open(dir, header(3), nullptr));
  w.close();
  SpillContents c = read_spill(spill_path(dir, 3));
  EXPECT_EQ(c.header.rank, 3);
  EXPECT_TRUE(c.warning.empty());
  EXPECT_FALSE(c.has_state);
  EXPECT_TRUE(c.trace.events.empty());
  std::filesystem::remove_all(dir);
}

std::string error_of(const std::string &p) {
  try {
    read_spill(p);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Spill, BadHeadersAreOneLineErrors) {
  std::string dir = temp_dir();
  const std::string p = spill_path(dir, 0);
  write_sample(dir, 0);
  const std::string good = read_bytes(p);
  auto with = [&](size_t at, int32_t v) {
    std::string b = good;
    std::memcpy(b.data() + at, &v, sizeof v);
    write_bytes(p, b);
    return error_of(p);
  };
  EXPECT_NE(with(offsetof(SpillHeader, version), 7).find("spill format version 7; this perfsift reads spill version 3"),
            std::string::npos);
  EXPECT_NE(with(offsetof(SpillHeader, nranks), -5).find("damaged spill header: rank 0 of -5 ranks"),
            std::string::npos);
  EXPECT_NE(with(offsetof(SpillHeader, nranks), 2000000000).find("damaged spill header"), std::string::npos);
  EXPECT_NE(with(offsetof(SpillHeader, rank), 4).find("damaged spill header: rank 4 of 4"), std::string::npos);
  std::ofstream(p) << "hello world, not a spill file at all";
  EXPECT_NE(error_of(p).find("not a perfsift spill file"), std::string::npos);
  EXPECT_EQ(error_of(p).find('\n'), std::string::npos);
  std::filesystem::remove_all(dir);
}

// Garbage after a valid header: an error for damage in the first chunk, the chunks before
// the damage otherwise; never a crash nor an allocation sized by a garbage count.
TEST(Spill, GarbageNeverCrashes) {
  std::string dir = temp_dir();
  const std::string p = spill_path(dir, 0);
  write_sample(dir, 0);
  const std::string good = read_bytes(p);
  uint64_t x = 88172645463325252ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  // All garbage after the header: an error naming the place.
  std::string b = good.substr(0, sizeof(SpillHeader));
  for (int i = 0; i < 4000; ++i) b += static_cast<char>(next());
  write_bytes(p, b);
  EXPECT_NE(error_of(p).find("damaged at byte 32"), std::string::npos) << error_of(p);
  // Random bytes overwritten anywhere past the header, and huge lengths in every 8-byte slot.
  int kept = 0;
  for (int round = 0; round < 3000; ++round) {
    b = good;
    if (round < static_cast<int>((good.size() - sizeof(SpillHeader)) / 4)) {
      const uint32_t huge = round % 2 ? 0xffffffffu : 0x80000001u;
      std::memcpy(b.data() + sizeof(SpillHeader) + 4 * round, &huge, sizeof huge);
    } else {
      for (int k = 0; k < 1 + static_cast<int>(next() % 4); ++k)
        b[sizeof(SpillHeader) + next() % (good.size() - sizeof(SpillHeader))] = static_cast<char>(next());
    }
    write_bytes(p, b);
    try {
      SpillContents c = read_spill(p);
      EXPECT_LE(c.trace.events.size(), good.size() / sizeof(Event));
      if (c.has_state) {
        EXPECT_EQ(c.trace.profile.size(), c.trace.region_paths.size() * c.trace.metric_names.size());
      }
      ++kept;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
    }
  }
  EXPECT_GT(kept, 0);
  std::filesystem::remove_all(dir);
}

TEST(Spill, ForeignFileIsRejected) {
  std::string dir = temp_dir();
  std::ofstream(dir + "/rank-0.bin") << "hello world, not a spill file at all";
  EXPECT_THROW(read_spill(dir + "/rank-0.bin"), Error);
  std::filesystem::remove_all(dir);
}
