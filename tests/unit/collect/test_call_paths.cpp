// Call-site keys (collect/call_sites.h): a call from a function named as the program's MPI
// wrapper is keyed by its path out to the wrapper's caller, one key per caller; any other
// call by its return address. The test binary is linked with -rdynamic so that dladdr
// names these functions, as it names a wrapper library's.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include "collect/call_sites.h"

using perfsift::collect::CallPaths;
using perfsift::collect::kPathKey;

namespace {
CallPaths g_paths;
}

// Stands for the collector's MPI wrapper: keys the return address into its caller.
extern "C" __attribute__((noinline, visibility("default"))) uint64_t perfsift_test_mpi_call() {
  const uint64_t key = g_paths.key(reinterpret_cast<uint64_t>(__builtin_return_address(0)));
  __asm__ volatile("" ::: "memory");
  return key;
}
extern "C" __attribute__((noinline, visibility("default"))) uint64_t perfsift_test_wrapper() {
  const uint64_t key = perfsift_test_mpi_call();
  __asm__ volatile("" ::: "memory");
  return key;
}
extern "C" __attribute__((noinline, visibility("default"))) uint64_t perfsift_test_caller_a() {
  const uint64_t key = perfsift_test_wrapper();
  __asm__ volatile("" ::: "memory");
  return key;
}
extern "C" __attribute__((noinline, visibility("default"))) uint64_t perfsift_test_caller_b() {
  const uint64_t key = perfsift_test_wrapper();
  __asm__ volatile("" ::: "memory");
  return key;
}

namespace {
std::string function_of(uint64_t address) {
  Dl_info info{};
  return dladdr(reinterpret_cast<void *>(address), &info) && info.dli_sname ? info.dli_sname : "";
}
}  // namespace

TEST(CallPaths, WrapperCallsAreKeyedByTheirCallers) {
  g_paths.configure({"perfsift_test_wrap*"}, 4);
  const uint64_t a = perfsift_test_caller_a(), b = perfsift_test_caller_b();
  ASSERT_TRUE(a & kPathKey);
  ASSERT_TRUE(b & kPathKey);
  EXPECT_NE(a, b);
  EXPECT_EQ(perfsift_test_caller_a(), a);  // the same path, the same key
  const auto fa = g_paths.frames(a), fb = g_paths.frames(b);
  ASSERT_EQ(fa.size(), 2u);
  ASSERT_EQ(fb.size(), 2u);
  EXPECT_EQ(fa[0], fb[0]);  // one return address in the wrapper
  EXPECT_EQ(function_of(fa[0]), "perfsift_test_wrapper");
  EXPECT_EQ(function_of(fa[1]), "perfsift_test_caller_a");
  EXPECT_EQ(function_of(fb[1]), "perfsift_test_caller_b");
}

TEST(CallPaths, OtherCallsAreKeyedByTheirReturnAddress) {
  g_paths.configure({"no_such_function"}, 4);
  const uint64_t a = perfsift_test_caller_a(), b = perfsift_test_caller_b();
  EXPECT_FALSE(a & kPathKey);
  EXPECT_EQ(a, b);  // both return into the wrapper, at one address
  EXPECT_EQ(function_of(a), "perfsift_test_wrapper");
}

TEST(CallPaths, NestedWrappersAreFollowedUpToTheDepth) {
  g_paths.configure({"perfsift_test_wrapper", "perfsift_test_caller_a"}, 2);
  const auto cut = g_paths.frames(perfsift_test_caller_a());
  ASSERT_EQ(cut.size(), 2u);  // the depth cuts inside the wrapper layer
  EXPECT_EQ(function_of(cut[1]), "perfsift_test_caller_a");
  g_paths.configure({"perfsift_test_wrapper", "perfsift_test_caller_a"}, 4);
  const auto whole = g_paths.frames(perfsift_test_caller_a());
  ASSERT_EQ(whole.size(), 3u);  // through both wrappers to the test that called them
  EXPECT_EQ(function_of(whole[1]), "perfsift_test_caller_a");
}
