#include "live_requests.h"

#include "thread_buffers.h"

namespace perfsift::collect {

namespace {

struct StartedHere {
  int32_t thread;
  bool operator()(const RequestState &s) const { return s.thread == thread; }
};
StartedHere started_here() { return {t_thread ? t_thread->index : 0}; }
// A persistent request stays in the table when it completes (a lambda: inlined).
constexpr auto is_persistent = [](const RequestState &s) { return s.persistent; };

}  // namespace

RequestState LiveRequests::add(MPI_Request handle, const RequestState &state) {
  RequestState st = state;
  st.id = m_next_id++;
  st.thread = t_thread ? t_thread->index : 0;
  m_table.push(handle, st, is_persistent);
  return st;
}

RequestState *LiveRequests::find_completing(MPI_Request handle) { return m_table.find_prefer(handle, started_here()); }

void LiveRequests::drop_completing(MPI_Request handle) {
  RequestState gone;
  m_table.take_prefer(handle, started_here(), gone, is_persistent);
}

bool LiveRequests::claim(MPI_Request handle, RequestState &out) {
  if (handle == MPI_REQUEST_NULL) return false;
  const RequestState *st = find_completing(handle);
  if (!st) return false;
  out = *st;
  if (!out.persistent) m_table.take_prefer(handle, started_here(), out, [](const RequestState &) { return false; });
  return true;
}

}  // namespace perfsift::collect
