// Several threads per rank in spill files: the per-thread streams merged into one rank
// (io::merge_thread_streams), and spill files of another format version refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/spill.h"
#include "io/trace_store.h"

using namespace perfsift::io;

namespace {

std::string temp_dir(const char *what) {
  auto d = std::filesystem::temp_directory_path() /
           ("perfsift-threads-" + std::string(what) + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

Event call(int32_t thread, int64_t t_enter, int32_t tag) {
  Event e;
  e.thread = thread;
  e.t_enter = t_enter;
  e.t_exit = t_enter + 5;
  e.tag = tag;
  return e;
}

RequestRecord request(int64_t id, int32_t thread, int64_t index) {
  RequestRecord r;
  r.id = id;
  r.event = thread_event(thread, index);
  return r;
}

CompletionRecord completion(int64_t id, int32_t thread, int64_t index) {
  CompletionRecord c;
  c.request = id;
  c.event = thread_event(thread, index);
  return c;
}

// Thread 0: tags 0, 1, 2 at t = 0, 20, 40; thread 1: tags 10, 11 at t = 10, 30; thread 2
// (a thread that exited early): tag 20 at t = 15. Request 7 started by thread 0's call 1,
// completed by thread 1's call 1; request 8 started by thread 1's call 0, completed by
// thread 0's call 2.
RankTrace three_threads() {
  RankTrace t;
  t.events = {call(0, 0, 0), call(1, 10, 10), call(0, 20, 1), call(2, 15, 20), call(1, 30, 11), call(0, 40, 2)};
  t.requests = {request(8, 1, 0), request(7, 0, 1)};
  t.completions = {completion(7, 1, 1), completion(8, 0, 2)};
  return t;
}

}  // namespace

TEST(ThreadStreams, MergedByEntryTimeWithRecordsRemapped) {
  RankTrace t = three_threads();
  merge_thread_streams(t);
  std::vector<int32_t> tags, threads;
  for (const auto &e : t.events) tags.push_back(e.tag), threads.push_back(e.thread);
  EXPECT_EQ(tags, (std::vector<int32_t>{0, 10, 20, 1, 11, 2}));
  EXPECT_EQ(threads, (std::vector<int32_t>{0, 1, 2, 0, 1, 0}));
  ASSERT_EQ(t.requests.size(), 2u);  // ordered by event
  EXPECT_EQ(t.requests[0].id, 8);
  EXPECT_EQ(t.requests[0].event, 1);  // thread 1's call 0: tag 10
  EXPECT_EQ(t.requests[1].id, 7);
  EXPECT_EQ(t.requests[1].event, 3);  // thread 0's call 1: tag 1
  ASSERT_EQ(t.completions.size(), 2u);
  EXPECT_EQ(t.completions[0].request, 7);
  EXPECT_EQ(t.completions[0].event, 4);  // thread 1's call 1: tag 11, another thread than the start
  EXPECT_EQ(t.completions[1].request, 8);
  EXPECT_EQ(t.completions[1].event, 5);  // thread 0's call 2
}

TEST(ThreadStreams, OneThreadIsLeftAsItIs) {
  RankTrace t;
  t.events = {call(0, 5, 0), call(0, 3, 1)};  // even out of time order
  t.requests = {request(0, 0, 1)};
  t.completions = {completion(0, 0, 0), completion(1, 0, 1)};
  merge_thread_streams(t);
  EXPECT_EQ(t.events[0].tag, 0);
  EXPECT_EQ(t.requests[0].event, 1);
  EXPECT_EQ(t.completions[1].event, 1);
}

TEST(ThreadStreams, RecordOfALostCallPointsPastTheEnd) {
  RankTrace t;
  t.events = {call(0, 0, 0), call(1, 1, 1)};
  t.completions = {completion(3, 1, 1)};  // thread 1's call 1 was cut by a crash
  merge_thread_streams(t);
  EXPECT_EQ(t.completions[0].event, 2);
}

TEST(ThreadStreams, SpillFileRoundTrip) {
  const std::string dir = temp_dir("roundtrip");
  const RankTrace t = three_threads();
  SpillWriter w;
  ASSERT_TRUE(w.open(dir, make_spill_header(1, 2, 0), nullptr));
  // As the collector writes them: each thread's records in its own chunks.
  for (int32_t k = 0; k < 3; ++k) {
    std::vector<Event> ev;
    for (const auto &e : t.events)
      if (e.thread == k) ev.push_back(e);
    std::vector<RequestRecord> rq;
    for (const auto &r : t.requests)
      if ((r.event >> kThreadEventShift) == k) rq.push_back(r);
    std::vector<CompletionRecord> cp;
    for (const auto &c : t.completions)
      if ((c.event >> kThreadEventShift) == k) cp.push_back(c);
    ASSERT_TRUE(w.write_records(ev, rq, cp, {}));
  }
  w.close();
  const SpillContents raw = read_spill(spill_path(dir, 1), false);
  EXPECT_EQ(raw.trace.events[3].thread, 1);  // file order, indices per thread
  const SpillContents back = read_spill(spill_path(dir, 1));
  ASSERT_EQ(back.trace.events.size(), 6u);
  std::vector<int32_t> tags;
  for (const auto &e : back.trace.events) tags.push_back(e.tag);
  EXPECT_EQ(tags, (std::vector<int32_t>{0, 10, 20, 1, 11, 2}));
  EXPECT_EQ(back.trace.completions[0].event, 4);
  std::filesystem::remove_all(dir);
}

// Spill files are read by the perfsift of the collector that wrote them: a version-1 file
// (72-byte events, one thread) and a newer one are refused in one line that says what to do.
TEST(ThreadStreams, OtherSpillVersionsAreRefused) {
  const std::string dir = temp_dir("v1");
  SpillHeader h = make_spill_header(0, 1, 0);
  h.version = 1;
  std::string events(2 * 72, '\0');
  Event a = call(0, 11, 4), b = call(0, 12, 5);
  std::memcpy(events.data(), &a, 72);
  std::memcpy(events.data() + 72, &b, 72);
  struct {
    uint32_t type, reserved;
    uint64_t bytes;
  } chunk{kChunkEvents, 0, events.size()};
  {
    std::ofstream out(spill_path(dir, 0), std::ios::binary);
    out.write(reinterpret_cast<const char *>(&h), sizeof h);
    out.write(reinterpret_cast<const char *>(&chunk), sizeof chunk);
    out.write(events.data(), static_cast<std::streamsize>(events.size()));
  }
  for (int32_t version : {kSpillVersion - 1, kSpillVersion + 1}) {
    h.version = version;
    {
      std::fstream f(spill_path(dir, 0), std::ios::binary | std::ios::in | std::ios::out);
      f.write(reinterpret_cast<const char *>(&h), sizeof h);
    }
    try {
      read_spill(spill_path(dir, 0));
      ADD_FAILURE() << "version " << version << " read";
    } catch (const Error &e) {
      const std::string expected = spill_path(dir, 0) + ": spill format version " + std::to_string(version) +
                                   "; this perfsift reads spill version " + std::to_string(kSpillVersion) +
                                   ": the run's data in this file cannot be "
                                   "read by this perfsift; recover it with the perfsift that collected the run";
      EXPECT_EQ(e.what(), expected);
    }
  }
  std::filesystem::remove_all(dir);
}
