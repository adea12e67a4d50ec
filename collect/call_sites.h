// Call sites: events hold the return address of their MPI call while in memory, and a
// call-site id once they leave it. Each new address is resolved once (dladdr: module,
// offset, demangled function), into the table the store keeps beside the events.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::collect {

class CallSites {
 public:
  // Replaces return addresses by local call-site ids.
  void resolve(std::span<io::Event> events);
  const std::vector<io::CallSite> &table() const { return m_sites; }

 private:
  std::unordered_map<uint64_t, int32_t> m_site_ids;
  std::vector<io::CallSite> m_sites;
};

}  // namespace perfsift::collect
