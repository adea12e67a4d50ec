// The replay model's region executions (pipeline/replay/execution_log.h): every record
// reads back exactly, in order, whatever its values (negative regions, steps falling,
// times at the int64 limits, a begin after its end), also after packing its bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "pipeline/replay/execution_log.h"

using perfsift::io::StepRecord;
using perfsift::pipeline::ExecutionLog;

namespace {

void expect_same(const ExecutionLog &log, const std::vector<StepRecord> &want) {
  size_t k = 0;
  for (const StepRecord &x : log) {
    ASSERT_LT(k, want.size());
    EXPECT_EQ(x.region, want[k].region) << "record " << k;
    EXPECT_EQ(x.step, want[k].step) << "record " << k;
    EXPECT_EQ(x.t_begin, want[k].t_begin) << "record " << k;
    EXPECT_EQ(x.t_end, want[k].t_end) << "record " << k;
    ++k;
  }
  EXPECT_EQ(k, want.size());
}

std::vector<StepRecord> records(uint32_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<StepRecord> out;
  int64_t t = 1'000'000'000;
  for (size_t i = 0; i < n; ++i) {
    t += static_cast<int64_t>(rng() % 5'000'000);
    const int64_t len = static_cast<int64_t>(rng() % 80'000'000);
    out.push_back({static_cast<int32_t>(rng() % 40) - 1, static_cast<int32_t>(i / 7) - 1, t - len, t});
  }
  constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  constexpr int32_t ilo = std::numeric_limits<int32_t>::min(), ihi = std::numeric_limits<int32_t>::max();
  out.push_back({ihi, ilo, lo, hi});
  out.push_back({ilo, ihi, hi, lo});
  out.push_back({0, 0, 5, 3});
  return out;
}

TEST(ExecutionLog, EveryRecordReadsBackInOrder) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}}) {
    const auto want = records(static_cast<uint32_t>(n), n);
    const ExecutionLog log(want.begin(), want.end());
    expect_same(log, want);
  }
  const ExecutionLog none;
  EXPECT_TRUE(none.begin() == none.end());
  static_assert(std::input_iterator<ExecutionLog::iterator>);
}

TEST(ExecutionLog, PackedBytesUnpackToTheSameRecords) {
  const auto want = records(11, 500);
  const ExecutionLog log(want.begin(), want.end());
  std::vector<uint8_t> bytes;
  ExecutionLog::each_part(log, [&](const auto &v) { bytes.assign(v.begin(), v.end()); });
  EXPECT_LT(bytes.size(), want.size() * 12) << "a record takes about 8 B, not 24";
  ExecutionLog back;
  ExecutionLog::each_part(back, [&](auto &v) { v.assign(bytes.begin(), bytes.end()); });
  expect_same(back, want);
}

// Released after their last declared user (RegionExecutions): a stage reading them then
// is a bug that must stop the run, not read an empty log.
TEST(ExecutionLog, ReadingAReleasedLogIsAnInternalError) {
  const auto want = records(5, 100);
  ExecutionLog log(want.begin(), want.end());
  log.release();
  EXPECT_THROW(static_cast<void>(log.begin()), perfsift::InternalError);
  ExecutionLog::each_part(log, [](const auto &v) { EXPECT_TRUE(v.empty()); });
}

}  // namespace
