// Call sites: events hold a call-site key while in memory, and a call-site id once they
// leave it. The key is the MPI call's return address, or, when that lies in one of the
// program's own MPI wrapper functions (collect TOML `sites.wrappers`), the id of the short
// call path that reaches past the wrapper layer to the caller. Each new key is resolved
// once (dladdr: module, offset, demangled function), into the table the store keeps
// beside the events.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/trace_model.h"
#include "python_frames.h"

namespace perfsift::collect {

// Set once at start-up when wrapper functions are named: only then may a call need a path.
extern bool g_site_paths;

// Keys of call paths carry this bit; a return address (user space) never does.
inline constexpr uint64_t kPathKey = uint64_t{1} << 63;

// The call paths of calls made from the program's MPI wrapper functions. Whether a
// return address lies in a wrapper is decided once per address (dladdr and the
// patterns) and cached; only calls from a wrapper pay an unwind.
class CallPaths {
 public:
  // Wrapper functions as glob patterns of their names (demangled, with or without the
  // parameter list, or mangled); depth: most frames in a path. Forgets what an earlier
  // configuration decided.
  void configure(std::vector<std::string> patterns, int depth);
  uint64_t key(uint64_t return_address);
  // The frames of path `key`: the MPI call's return address first, the caller of the
  // wrapper layer last.
  std::vector<uint64_t> frames(uint64_t key);

 private:
  bool decide_wrapper(uint64_t address);
  bool is_wrapper(uint64_t address);
  uint64_t path_key(uint64_t return_address);

  std::vector<std::string> m_patterns;
  int m_depth = 4;
  uint32_t m_generation = 0;
  std::mutex m_mutex;
  std::unordered_map<uint64_t, bool> m_wrapper;  // return address -> lies in a wrapper function
  std::map<std::vector<uint64_t>, uint64_t> m_path_ids;
  std::vector<std::vector<uint64_t>> m_paths;
};

extern CallPaths g_call_paths;

// What a traced call records as its site, decided here for every MPI call: the Python line
// that made it, else the call path through the program's own MPI wrappers, else the return
// address. A program without an interpreter or named wrappers pays two tests of a flag.
inline uint64_t call_site_key(void *return_address) {
  const auto ra = reinterpret_cast<uint64_t>(return_address);
  if (__builtin_expect(g_python_sites, 0))
    if (const uint64_t python = python_site_key(ra); is_python_site(python)) return python;
  return __builtin_expect(g_site_paths, 0) ? g_call_paths.key(ra) : ra;
}

class CallSites {
 public:
  // Replaces call-site keys by local call-site ids.
  void resolve(std::span<io::Event> events);
  const std::vector<io::CallSite> &table() const { return m_sites; }

 private:
  io::CallSite site_of(uint64_t key);

  std::unordered_map<uint64_t, int32_t> m_site_ids;
  std::vector<io::CallSite> m_sites;
};

}  // namespace perfsift::collect
