#include "event_spill.h"

#include <algorithm>
#include <vector>

#include "io/atomic_file.h"
#include "tick_clock.h"

namespace perfsift::collect {

void EventSpill::events_to_ns(ThreadState &ts, std::span<io::Event> events) {
  clock_refresh();  // the ratio up to now: every tick below was read before
  for (auto &e : events) {
    e.t_enter = std::max(ticks_to_ns(e.t_enter), ts.last_enter_ns);
    e.t_exit = std::max(ticks_to_ns(e.t_exit), e.t_enter);
    ts.last_enter_ns = e.t_enter;
  }
}

void EventSpill::prepare_for_disk(ThreadState &ts) {
  m_sites.resolve(ts.events.span().subspan(ts.prepared_events));
  events_to_ns(ts, ts.events.span().subspan(ts.prepared_events));
  ts.prepared_events = ts.events.size();
  if (ts.index == 0) m_regions.executions_to_ns();
}

bool EventSpill::spill(ThreadState &ts) {
  const std::lock_guard<std::mutex> lock(m_mutex);
  return spill_locked(ts);
}

bool EventSpill::spill_locked(ThreadState &ts) {
  if (m_closed_for_good) return true;
  const io::FileSizeSignalIgnored guard;  // past `ulimit -f`: an error, not a dead rank
  prepare_for_disk(ts);
  ts.spill_due = INT64_MAX;
  const bool main = ts.index == 0;
  const bool ok =
      m_file.is_open() &&
      m_file.write_records(
          ts.events.span().subspan(ts.written_events), ts.requests.span().subspan(ts.written_requests),
          ts.completions.span().subspan(ts.written_completions),
          main ? std::span<const io::StepRecord>(m_regions.executions()) : std::span<const io::StepRecord>());
  if (ok) {
    ts.spilled_events += static_cast<int64_t>(ts.events.size());
    ts.events.clear();
    ts.requests.clear();
    ts.completions.clear();
    ts.written_events = ts.written_requests = ts.written_completions = 0;
    ts.prepared_events = 0;
    if (main) m_regions.clear_executions();
    return true;
  }
  // No spill file (or it stopped taking data: disk full; a torn chunk ends it for good):
  // keep growing rather than drop; count so the report can say so.
  give_up_file();
  if ((ts.events.full() && !ts.events.grow()) || (ts.requests.full() && !ts.requests.grow()) ||
      (ts.completions.full() && !ts.completions.grow())) {
    m_warnings.say("out of memory for events and no spill file; tracing stops here");
    return false;
  }
  return true;
}

void EventSpill::write_committed(ThreadState &ts) {
  if (ts.prepared_events) return;  // after a failed spill: the file is closed anyway
  const size_t ne = ts.events.size_acquire(), nr = ts.requests.size_acquire(), nc = ts.completions.size_acquire();
  if (ne == ts.written_events && nr == ts.written_requests && nc == ts.written_completions) return;
  std::vector<io::Event> events(ts.events.data() + ts.written_events, ts.events.data() + ne);
  m_sites.resolve(events);
  events_to_ns(ts, events);
  const io::FileSizeSignalIgnored guard;
  if (m_file.write_records(events, {ts.requests.data() + ts.written_requests, nr - ts.written_requests},
                           {ts.completions.data() + ts.written_completions, nc - ts.written_completions}, {})) {
    ts.written_events = ne;
    ts.written_requests = nr;
    ts.written_completions = nc;
  } else {
    give_up_file();  // the threads keep their records in memory
  }
}

void EventSpill::write_copy(ThreadState &ts) {
  // In-flight first, then the size: a call committed in between is in [written, ne).
  const io::Event *flying = __atomic_load_n(&ts.in_flight, __ATOMIC_ACQUIRE);
  const size_t ne = ts.events.size_acquire(), nr = ts.requests.size_acquire(), nc = ts.completions.size_acquire();
  std::vector<io::Event> events(ts.events.data() + ts.written_events, ts.events.data() + ne);
  if (flying && flying == ts.events.data() + ne) {  // the thread is inside this call: keep it, marked
    io::Event e = *flying;
    e.t_exit = now_ticks();
    e.flags |= io::kInterrupted;
    e.region = m_regions.published_region();
    e.step = m_regions.published_step();
    events.push_back(e);
  }
  const size_t prepared = ts.prepared_events > ts.written_events ? ts.prepared_events - ts.written_events : 0;
  std::span<io::Event> fresh = std::span<io::Event>(events).subspan(std::min(prepared, events.size()));
  m_sites.resolve(fresh);
  events_to_ns(ts, fresh);
  m_file.write_records(events, {ts.requests.data() + ts.written_requests, nr - ts.written_requests},
                       {ts.completions.data() + ts.written_completions, nc - ts.written_completions}, {});
}

}  // namespace perfsift::collect
