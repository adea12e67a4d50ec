// The engine's life: its rank states set up for a full or a resumed replay, the spare
// states resumed replays recycle, and the public Engine's calls into its state.
#include "kernels/replay/engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/replay/engine_core.h"

namespace perfsift::kernels::replay {

EngineCore::EngineCore(const std::vector<RankProgram> &programs, const Scenario &scenario, int32_t nranks,
                       bool record_timings, bool distributed)
    : m_prog(programs),
      m_sc(scenario),
      m_net(scenario.network()),
      m_record(record_timings),
      m_distributed(distributed) {
  m_slot_of.assign(static_cast<size_t>(nranks), -1);
  if (scenario.resume) {
    auto &spare = spare_states();
    for (auto it = spare.begin(); it != spare.end(); ++it)
      if (it->size() == programs.size()) {
        m_state = std::move(*it);
        spare.erase(it);
        break;
      }
    m_recycled = true;
    m_touched_flag.assign(programs.size(), 0);
  }
  m_state.resize(programs.size());
  m_end.assign(programs.size(), 0);
  if (m_record) m_timings.resize(programs.size());
  if (m_record) m_lane_timings.resize(programs.size());
  m_converge = scenario.resume && scenario.stop_when_converged;
  for (size_t s = 0; s < programs.size(); ++s) {
    const RankProgram &p = programs[s];
    m_slot_of[static_cast<size_t>(p.rank)] = static_cast<int32_t>(s);
    if (p.laned() && scenario.resume)
      throw std::logic_error("replay: resuming is for single-stream programs (rank " + std::to_string(p.rank) +
                             " has several lanes)");
  }
  if (m_converge) m_rank_dirty.assign(programs.size(), 0);
  // Clean cuts stop a replay only where nothing but the zeroed wait changed.
  if (m_converge && scenario.cuts && scenario.cuts->size() == programs.size() && scenario.gaps.empty() &&
      scenario.send_bytes.empty() && scenario.event_flags.empty())
    m_cuts = scenario.cuts;
  for (size_t s = 0; s < programs.size(); ++s) {
    const RankProgram &p = programs[s];
    RankState &st = m_state[s];
    if (scenario.resume) {
      // Resumed: every rank rests at its cut until the replay needs it (join).
      // Its cut is found when it joins (a binary search per rank and candidate was a
      // tenth of the domino search): until then only whether it ended by the resume time.
      // (A recycled state is fresh but for these two, set here for every rank.)
      st.live = false;
      st.cursor = 0;
      if (p.events.empty()) continue;
      if (scenario.resume->last_exit_max(s) > scenario.resume_at) {
        st.cursor = kCutPending;
        ++m_unfinished;
      } else {
        st.cursor = static_cast<int64_t>(p.events.size());
        m_end[s] = scenario.resume->end[s];
      }
      continue;
    }
    st.slot_ref.assign(static_cast<size_t>(p.request_slots), -1);
    st.send_start.assign(p.sends.size(), kUnknown);
    st.recv_post.assign(p.sends.size(), kUnknown);  // per send: the receiver's post time
    st.coll_enter.assign(p.colls.size(), kUnknown);
    st.recv_send_start.assign(p.recvs.size(), kUnknown);
    st.recv_posted.assign(p.recvs.size(), kUnknown);
    if (m_record && !p.laned()) m_timings[s].reserve(p.events.size());
    if (p.laned()) {
      const size_t lanes = static_cast<size_t>(*std::max_element(p.lane.begin(), p.lane.end())) + 1;
      st.lane_now.assign(lanes, 0);
      st.lane_enter.assign(lanes, 0);
      st.lane_started.assign(lanes, 0);
      st.lane_started[0] = 1;
      if (m_record) m_lane_timings[s].resize(p.events.size());  // completed out of event order
    }
    if (!p.events.empty()) ++m_unfinished;
    st.queued = true;
    m_queue.push_back(static_cast<int32_t>(s));
  }
  if (scenario.resume) {
    if (!scenario.resume->coll_members.empty() &&
        scenario.resume->member_begin.size() != scenario.resume->member_instances.size() + 1)
      throw std::logic_error("replay: resuming from a snapshot whose collective members are not indexed");
    if (!m_converge) {
      // Every rank replays from its cut to its end.
      for (size_t s = 0; s < programs.size(); ++s) need(static_cast<int32_t>(s), INT64_MAX);
    } else if (scenario.zero_wait_rank >= 0 && scenario.zero_wait_rank < nranks) {
      if (const int32_t z = m_slot_of[static_cast<size_t>(scenario.zero_wait_rank)]; z >= 0)
        need(z, scenario.zero_wait_event);
    }
  }
}

EngineCore::~EngineCore() {
  if (!m_recycled) return;
  constexpr size_t kSpare = 16;  // a domino search batch's engines (kernels/domino.cpp)
  auto &spare = spare_states();
  if (spare.size() >= kSpare || m_state.size() != m_prog.size()) return;
  for (const int32_t s : m_touched) m_state[static_cast<size_t>(s)] = RankState{};
  spare.push_back(std::move(m_state));
}

bool EngineCore::spare_states_fresh() {
  for (const auto &states : spare_states())
    for (const RankState &st : states) {
      RankState fresh;
      fresh.live = st.live;
      fresh.cursor = st.cursor;
      if (!(st == fresh)) return false;
    }
  return true;
}

std::vector<std::vector<EngineCore::RankState>> &EngineCore::spare_states() {
  thread_local std::vector<std::vector<RankState>> spare;
  return spare;
}

Engine::Engine(const std::vector<RankProgram> &programs, const Scenario &scenario, int32_t nranks, bool record_timings,
               bool distributed)
    : m_core(std::make_unique<EngineCore>(programs, scenario, nranks, record_timings, distributed)) {}
Engine::~Engine() = default;
void Engine::release_spare_states() { EngineCore::release_spare_states(); }
bool Engine::spare_states_fresh() { return EngineCore::spare_states_fresh(); }
size_t Engine::spare_state_sets() { return EngineCore::spare_state_sets(); }

bool Engine::advance() { return m_core->advance(); }
bool Engine::finished() const { return m_core->finished(); }
bool Engine::conflict() const { return m_core->conflict(); }
bool Engine::aborted() const { return m_core->aborted(); }
bool Engine::converged() const { return m_core->converged(); }
int64_t Engine::unfinished() const { return m_core->unfinished(); }
int64_t Engine::release_stuck() { return m_core->release_stuck(); }
int64_t Engine::released() const { return m_core->released(); }

Outbox Engine::take_outbox() { return m_core->take_outbox(); }
void Engine::apply(const SendPost &p) { m_core->apply(p); }
void Engine::apply(const RecvPost &p) { m_core->apply(p); }
void Engine::apply(const Arrival &a) { m_core->apply(a); }
void Engine::apply(const Pull &p) { m_core->apply(p); }

int64_t Engine::off_snapshot() const { return m_core->off_snapshot(); }
bool Engine::idle() const { return m_core->idle(); }
Engine::Frontier Engine::frontier() const { return m_core->frontier(); }
bool Engine::lead_passes_threshold(int64_t lead) const { return m_core->lead_passes_threshold(lead); }

RoundReport Engine::round_report(bool moved) const { return m_core->round_report(moved); }
RoundEnd Engine::round_end(const RoundReport &sum) const { return m_core->round_end(sum); }
void Engine::abort() { m_core->abort(); }
void Engine::stop_shifted(int64_t delta) { m_core->stop_shifted(delta); }
bool Engine::shifted() const { return m_core->shifted(); }
int64_t Engine::shifted_makespan() const { return m_core->shifted_makespan(); }
int64_t Engine::converged_makespan() const { return m_core->converged_makespan(); }

const std::vector<int64_t> &Engine::end_times() const { return m_core->end_times(); }
const std::vector<TimingColumn> &Engine::timings() { return m_core->timings(); }
std::vector<TimingColumn> Engine::take_timings() { return m_core->take_timings(); }
void Engine::set_event_sink(EventSink sink, SinkEvents which) { m_core->set_event_sink(std::move(sink), which); }
Snapshot Engine::take_snapshot() { return m_core->take_snapshot(); }
void Engine::lend_posting_events(PostingEvents::Borrowed sends, PostingEvents::Borrowed recvs,
                                 PostingEvents::Borrowed colls) {
  m_core->lend_posting_events(std::move(sends), std::move(recvs), std::move(colls));
}

}  // namespace perfsift::kernels::replay
