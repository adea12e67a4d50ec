// Ranks calling MPI from several threads (RankProgram::lane, steps): each lane runs its
// own clock, posts and completions in measured order.
#include "kernels/replay/engine_core.h"

namespace perfsift::kernels::replay {

bool EngineCore::try_lane_step(int32_t s) {
  const RankProgram &p = m_prog[static_cast<size_t>(s)];
  RankState &st = touch(s);
  const int32_t code = p.steps[static_cast<size_t>(st.step)];
  const size_t i = static_cast<size_t>(code >> 1);
  const Event &e = p.events[i];
  const size_t lane = p.lane[i];
  if (!(code & 1)) {               // post
    if (!st.lane_started[lane]) {  // a thread's first call: from lane 0's latest entry
      st.lane_now[lane] = st.lane_enter[0];
      st.lane_started[lane] = 1;
    }
    const int64_t gap = m_sc.gap(static_cast<size_t>(s), i, e.gap);
    st.lane_enter[lane] = st.lane_now[lane] + gap;
    post_items(s, e, st.lane_enter[lane]);
    ++st.step;
    return true;
  }
  const int64_t enter = st.lane_enter[lane];
  int64_t exit = enter, nowait_exit = enter;
  if (!complete_event(s, e, enter, event_flags(s, static_cast<int64_t>(i)), exit, nowait_exit)) return false;
  if (m_record) m_lane_timings[static_cast<size_t>(s)][i] = {enter, exit, nowait_exit};
  m_sink.see(s, static_cast<int64_t>(i), {enter, exit, nowait_exit});
  st.lane_now[lane] = exit;
  st.release = false;
  m_end[static_cast<size_t>(s)] = std::max(m_end[static_cast<size_t>(s)], exit);
  ++st.step;
  if (++st.cursor == static_cast<int64_t>(p.events.size())) {
    --m_unfinished;
    return false;
  }
  return true;
}

void EngineCore::settle_lanes() {
  for (size_t s = 0; s < m_lane_timings.size(); ++s) {
    if (m_lane_timings[s].empty()) continue;
    m_timings[s].reserve(m_lane_timings[s].size());
    for (const EventTiming &t : m_lane_timings[s]) m_timings[s].push_back(t);
    std::vector<EventTiming>().swap(m_lane_timings[s]);
  }
}

}  // namespace perfsift::kernels::replay
