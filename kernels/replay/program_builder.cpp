// Assembling replay programs (see program_builder.h).
#include "kernels/replay/program_builder.h"

#include <stdexcept>
#include <string>

namespace perfsift::kernels::replay {

RankProgramBuilder::RankProgramBuilder(RankProgram &program, int32_t rank) : m_p(&program) { m_p->rank = rank; }

int32_t RankProgramBuilder::add_send(int64_t bytes) {
  m_p->sends.push_back({bytes, -1, -1});
  return static_cast<int32_t>(m_p->sends.size() - 1);
}

int32_t RankProgramBuilder::add_recv(int64_t measured_duration) {
  m_p->recvs.push_back(RecvMessage::unmatched(measured_duration));
  return static_cast<int32_t>(m_p->recvs.size() - 1);
}

int32_t RankProgramBuilder::add_collective(const Collective &c) {
  m_p->colls.push_back(c);
  return static_cast<int32_t>(m_p->colls.size() - 1);
}

void RankProgramBuilder::match_send(int32_t send, int32_t dst, int32_t recv_index) {
  SendMessage &m = m_p->sends[static_cast<size_t>(send)];
  m.dst = dst;
  m.recv_index = recv_index;
}

void RankProgramBuilder::match_recv(int32_t recv, int32_t src, int32_t send_index, int64_t bytes) {
  m_p->recvs[static_cast<size_t>(recv)] = RecvMessage::matched(bytes, src, send_index);
}

void RankProgramBuilder::begin_event(int64_t gap, uint8_t lane) {
  if (m_open) throw std::logic_error("replay program: an event begins before the last one ended");
  // Lanes are held from the first event off lane 0 on; the ones before ran on lane 0.
  if (lane > 0 && m_p->lane.empty()) m_p->lane.assign(m_p->events.size(), 0);
  if (!m_p->lane.empty()) m_p->lane.push_back(lane);
  m_event = Event{};
  m_event.gap = gap;
  m_event.first_item = static_cast<int32_t>(m_p->items.size());
  m_open = true;
}

void RankProgramBuilder::item(const Item &it) {
  if (!m_open) throw std::logic_error("replay program: an item outside an event");
  m_p->items.push_back(it);
}

size_t RankProgramBuilder::items_in_event() const {
  return m_open ? m_p->items.size() - static_cast<size_t>(m_event.first_item) : 0;
}

int64_t RankProgramBuilder::end_event(int64_t measured_duration) {
  if (!m_open) throw std::logic_error("replay program: an event ends that did not begin");
  m_event.items = static_cast<uint16_t>(items_in_event());
  m_open = false;
  if (m_event.items == 0)
    m_p->add_local(m_event.gap, measured_duration);
  else
    m_p->events.push_back(m_event);
  return static_cast<int64_t>(m_p->events.size() - 1);
}

int64_t RankProgramBuilder::event(int64_t gap, std::initializer_list<Item> items, int64_t measured_duration,
                                  uint8_t lane) {
  begin_event(gap, lane);
  for (const Item &it : items) item(it);
  return end_event(measured_duration);
}

int64_t RankProgramBuilder::event(int64_t gap, const std::vector<Item> &items, int64_t measured_duration,
                                  uint8_t lane) {
  begin_event(gap, lane);
  for (const Item &it : items) item(it);
  return end_event(measured_duration);
}

void RankProgramBuilder::add_step(int64_t event, bool completion) {
  // Two steps per event: sized once the events are in, no shrinking copy in finish().
  if (m_p->steps.empty()) m_p->steps.reserve(2 * m_p->events.size());
  m_p->steps.push_back(static_cast<int32_t>(event) << 1 | static_cast<int32_t>(completion));
}

void RankProgramBuilder::finish() {
  if (m_open) throw std::logic_error("replay program: rank " + std::to_string(m_p->rank) + " ends inside an event");
  if (!m_p->steps.empty() && m_p->steps.size() != 2 * m_p->events.size())
    throw std::logic_error("replay program: rank " + std::to_string(m_p->rank) +
                           " has lanes whose steps are not two per event");
  m_p->events.shrink_to_fit();
  m_p->owns.shrink_to_fit();
  m_p->items.shrink_to_fit();
  m_p->sends.shrink_to_fit();
  m_p->recvs.shrink_to_fit();
  m_p->colls.shrink_to_fit();
  m_p->lane.shrink_to_fit();
  m_p->steps.shrink_to_fit();
}

Collective collective_call(int64_t instance, int32_t members, CollectiveFlow flow, int32_t root, int64_t bytes,
                           bool linear) {
  Collective c;
  c.instance = instance;
  c.members = members;
  c.flow = flow;
  c.root = root;
  c.rounds = collective_rounds(members, linear);
  c.bytes = bytes;
  return c;
}

ProgramBuilder::ProgramBuilder(int32_t nranks) : m_programs(static_cast<size_t>(nranks)) {
  m_builders.reserve(m_programs.size());
  for (int32_t r = 0; r < nranks; ++r) m_builders.emplace_back(m_programs[static_cast<size_t>(r)], r);
}

std::pair<int32_t, int32_t> ProgramBuilder::message(int32_t src, int32_t dst, int64_t bytes) {
  RankProgramBuilder &s = rank(src), &d = rank(dst);
  const int32_t si = s.add_send(bytes), ri = d.add_recv(0);
  s.match_send(si, dst, ri);
  d.match_recv(ri, src, si, bytes);
  return {si, ri};
}

std::vector<RankProgram> ProgramBuilder::finish() {
  for (RankProgramBuilder &b : m_builders) b.finish();
  m_builders.clear();
  return std::move(m_programs);
}

}  // namespace perfsift::kernels::replay
