#include "papi_counters.h"

#include <papi.h>

namespace perfsift::collect {

void PapiCounters::start(const std::vector<std::string> &wanted, Warnings &warnings, io::RunInfo &run) {
  std::vector<std::string> unavailable;
  int rc = PAPI_library_init(PAPI_VER_CURRENT);
  if (rc != PAPI_VER_CURRENT) {
    for (const auto &e : wanted) unavailable.push_back(e);
    if (!wanted.empty())
      warnings.say("PAPI could not start (" + std::string(PAPI_strerror(rc)) + "); no counters recorded");
  } else if (!wanted.empty()) {
    PAPI_create_eventset(&m_set);
    std::string reasons;
    for (const auto &e : wanted) {
      int r = PAPI_add_named_event(m_set, e.c_str());
      if (r == PAPI_OK) {
        m_names.push_back(e);
      } else {
        unavailable.push_back(e);
        reasons += (reasons.empty() ? "" : ", ") + e + " (" + PAPI_strerror(r) + ")";
      }
    }
    if (!reasons.empty())
      warnings.say("counters unavailable on this machine: " + reasons + "; the store records them as missing");
    if (m_names.empty()) {
      PAPI_cleanup_eventset(m_set);
      PAPI_destroy_eventset(&m_set);
      m_set = -1;
    } else if ((rc = PAPI_start(m_set)) != PAPI_OK) {
      warnings.say(std::string("PAPI_start failed (") + PAPI_strerror(rc) + "); no counters recorded");
      unavailable.insert(unavailable.end(), m_names.begin(), m_names.end());
      m_names.clear();
      m_set = -1;
    }
  }
  run.counters_unavailable = unavailable;
  run.counters_recorded = m_names;
}

void PapiCounters::read(std::vector<long long> &out) const {
  out.assign(m_names.size(), 0);
  if (m_set >= 0 && !out.empty()) PAPI_read(m_set, out.data());
}

void PapiCounters::stop() {
  if (m_set < 0) return;
  std::vector<long long> v(m_names.size());
  PAPI_stop(m_set, v.data());
}

}  // namespace perfsift::collect
