#include "call_sites.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <sched.h>
#include <unwind.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "python_frames.h"

namespace perfsift::collect {

bool g_site_paths = false;
CallPaths g_call_paths;

namespace {

constexpr int kMaxDepth = 16;
// Frames of the collector between the unwinder and the MPI call's return address (this
// file, Call, the MPI wrapper), with room to spare.
constexpr int kCollectorFrames = 8;

// The function a return address lies in, per thread: the decision costs a lock and a
// dladdr once per address; after that a hit costs a multiply and a compare.
struct Decision {
  uint64_t address = 0;
  uint32_t generation = 0;  // of the configuration it was decided under
  bool wrapper = false;
};
constexpr int kDecisionBits = 7;
thread_local std::array<Decision, 1u << kDecisionBits> t_decisions;

struct Unwound {
  std::array<uint64_t, kMaxDepth + kCollectorFrames> ip{};
  int n = 0, limit = 0;
};

_Unwind_Reason_Code collect_ip(_Unwind_Context *ctx, void *arg) {
  auto &u = *static_cast<Unwound *>(arg);
  if (u.n >= u.limit) return _URC_END_OF_STACK;
  u.ip[u.n++] = _Unwind_GetIP(ctx);
  return _URC_NO_REASON;
}

std::string demangled(const char *name) {
  int status = 0;
  char *dem = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = (status == 0 && dem) ? dem : name;
  std::free(dem);
  return s;
}

io::CallFrame resolve_frame(uint64_t address) {
  io::CallFrame f;
  Dl_info info{};
  if (address && dladdr(reinterpret_cast<void *>(address), &info)) {
    f.module = info.dli_fname ? info.dli_fname : "";
    f.offset = address - reinterpret_cast<uint64_t>(info.dli_fbase);
    if (info.dli_sname) {
      f.function = demangled(info.dli_sname);
      f.fn_offset = address - reinterpret_cast<uint64_t>(info.dli_saddr);
    }
  }
  return f;
}

}  // namespace

void CallPaths::configure(std::vector<std::string> patterns, int depth) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  m_patterns = std::move(patterns);
  m_depth = std::clamp(depth, 1, kMaxDepth);
  m_wrapper.clear();
  m_path_ids.clear();
  m_paths.clear();
  ++m_generation;
  g_site_paths = !m_patterns.empty() && m_depth > 1;
}

uint64_t CallPaths::key(uint64_t return_address) {
  return is_wrapper(return_address) ? path_key(return_address) : return_address;
}

bool CallPaths::is_wrapper(uint64_t address) {
  Decision &d = t_decisions[(address * 0x9e3779b97f4a7c15u) >> (64 - kDecisionBits)];
  if (d.address != address || d.generation != m_generation) d = {address, m_generation, decide_wrapper(address)};
  return d.wrapper;
}

bool CallPaths::decide_wrapper(uint64_t address) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  const auto known = m_wrapper.find(address);
  if (known != m_wrapper.end()) return known->second;
  Dl_info info{};
  bool wrapper = false;
  if (dladdr(reinterpret_cast<void *>(address), &info) && info.dli_sname) {
    const std::string full = demangled(info.dli_sname);
    const std::string bare = full.substr(0, full.find('('));  // without the parameter list
    for (const auto &p : m_patterns)
      if (fnmatch(p.c_str(), bare.c_str(), 0) == 0 || fnmatch(p.c_str(), full.c_str(), 0) == 0 ||
          fnmatch(p.c_str(), info.dli_sname, 0) == 0)
        wrapper = true;
  }
  m_wrapper.emplace(address, wrapper);
  return wrapper;
}

// The path from the MPI call's return address out through the wrapper layer: each frame
// that lies in a wrapper is followed by its caller, up to the first that does not (the
// code the user wrote) or the depth.
uint64_t CallPaths::path_key(uint64_t return_address) {
  Unwound u;
  u.limit = m_depth + kCollectorFrames;
  _Unwind_Backtrace(collect_ip, &u);
  const auto first = std::find(u.ip.begin(), u.ip.begin() + u.n, return_address);
  if (first == u.ip.begin() + u.n) return return_address;  // no unwind information: the one frame
  std::vector<uint64_t> path{return_address};
  for (auto it = first + 1; it < u.ip.begin() + u.n && static_cast<int>(path.size()) < m_depth; ++it) {
    path.push_back(*it);
    if (!is_wrapper(*it)) break;
  }
  const std::lock_guard<std::mutex> lock(m_mutex);
  const auto known = m_path_ids.find(path);
  if (known != m_path_ids.end()) return known->second;
  const uint64_t key = m_paths.size() | kPathKey;
  m_paths.push_back(path);
  m_path_ids.emplace(std::move(path), key);
  return key;
}

std::vector<uint64_t> CallPaths::frames(uint64_t key) {
  // Bounded: a crash flush may run on a thread that was stopped holding the lock.
  std::unique_lock<std::mutex> lock(m_mutex, std::try_to_lock);
  for (int tries = 0; !lock.owns_lock() && tries < 10000; ++tries) {
    sched_yield();
    lock.try_lock();
  }
  const uint64_t id = key & ~kPathKey;
  return lock.owns_lock() && id < m_paths.size() ? m_paths[id] : std::vector<uint64_t>{};
}

io::CallSite CallSites::site_of(uint64_t key) {
  std::vector<uint64_t> path{key};
  if (key & kPathKey) path = g_call_paths.frames(key);
  io::CallSite cs;
  if (path.empty()) return cs;
  io::CallFrame f = resolve_frame(path.back());
  cs.module = std::move(f.module);
  cs.offset = f.offset;
  cs.function = std::move(f.function);
  cs.fn_offset = f.fn_offset;
  for (size_t i = 0; i + 1 < path.size(); ++i) cs.via.push_back(resolve_frame(path[i]));
  return cs;
}

void CallSites::resolve(std::span<io::Event> events) {
  for (auto &e : events) {
    auto [it, inserted] = m_site_ids.emplace(e.site, static_cast<int32_t>(m_sites.size()));
    if (inserted) m_sites.push_back(is_python_site(e.site) ? python_call_site(e.site) : site_of(e.site));
    e.site = static_cast<uint64_t>(it->second);
  }
}

}  // namespace perfsift::collect
