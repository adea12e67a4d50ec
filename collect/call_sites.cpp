#include "call_sites.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdlib>

#include "python_frames.h"

namespace perfsift::collect {

void CallSites::resolve(std::span<io::Event> events) {
  for (auto &e : events) {
    auto [it, inserted] = m_site_ids.emplace(e.site, static_cast<int32_t>(m_sites.size()));
    if (inserted) {
      io::CallSite cs;
      Dl_info info{};
      if (is_python_site(e.site)) {
        cs = python_call_site(e.site);
      } else if (e.site && dladdr(reinterpret_cast<void *>(e.site), &info)) {
        cs.module = info.dli_fname ? info.dli_fname : "";
        cs.offset = e.site - reinterpret_cast<uint64_t>(info.dli_fbase);
        if (info.dli_sname) {
          int status = 0;
          char *dem = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
          cs.function = (status == 0 && dem) ? dem : info.dli_sname;
          std::free(dem);
          cs.fn_offset = e.site - reinterpret_cast<uint64_t>(info.dli_saddr);
        }
      }
      m_sites.push_back(std::move(cs));
    }
    e.site = static_cast<uint64_t>(it->second);
  }
}

}  // namespace perfsift::collect
