// collect/request_table.h with both kinds of MPI handle: integers (MPICH: MPI_Request is an
// int, e.g. 0xac000003, negative as a signed int) and pointers (Open MPI).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "collect/request_table.h"

namespace {

using perfsift::collect::RequestTable;

auto never = [](int) { return false; };
auto any = [](int) { return true; };

template <class Key>
void exercise(const std::vector<Key> &keys) {
  RequestTable<Key, int> t;
  // Far beyond the initial 256 slots: the table grows and rehashes every key.
  for (size_t i = 0; i < keys.size(); ++i) t.push(keys[i], static_cast<int>(i), never);
  for (size_t i = 0; i < keys.size(); ++i) {
    const int *v = t.front(keys[i]);
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(*v, static_cast<int>(i));
  }
  // A second request under a reused handle value completes after the first.
  t.push(keys[7], -7, never);
  int out = 0;
  ASSERT_TRUE(t.take_prefer(keys[7], any, out, never));
  EXPECT_EQ(out, 7);
  ASSERT_TRUE(t.take_prefer(keys[7], any, out, never));
  EXPECT_EQ(out, -7);
  EXPECT_EQ(t.front(keys[7]), nullptr);
  // Backward-shift deletion keeps every other key reachable.
  for (size_t i = 0; i < keys.size(); i += 2) t.pop(keys[i]);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i == 7) continue;
    const int *v = t.front(keys[i]);
    if (i % 2 == 0) {
      EXPECT_EQ(v, nullptr) << i;
    } else {
      ASSERT_NE(v, nullptr) << i;
      EXPECT_EQ(*v, static_cast<int>(i));
    }
  }
}

TEST(RequestTable, IntegerHandles) {
  std::vector<int> keys;
  for (uint32_t i = 0; i < 3000; ++i) keys.push_back(static_cast<int>(0xac000000u | i));  // MPICH's request kind
  exercise(keys);
}

TEST(RequestTable, PointerHandles) {
  static char pool[3000 * 16];
  std::vector<void *> keys;
  for (size_t i = 0; i < 3000; ++i) keys.push_back(pool + i * 16);
  exercise(keys);
}

}  // namespace
