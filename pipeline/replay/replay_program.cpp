// Building replay programs from the store: each owned rank's events, requests,
// completions and region executions, a block of ranks at a time, become a
// kernels::replay::RankProgram and the model's side data (labels, message and request
// links, executions); each message's key goes to the match (message_matching.cpp).
// O(owned events) work; the records of one block of ranks held at a time.
#include "pipeline/replay/program_builder.h"

#include <algorithm>

#include "kernels/replay.h"

namespace perfsift::pipeline::program_building {

namespace rp = kernels::replay;
using kernels::MessageKey;

namespace {

// Per communicator: its members with data (what a collective on it waits for; an
// intercommunicator's collectives span both groups, and the store holds it once, as one
// side sees it); sets the model's comm_owners, the analysis processes owning a member.
std::vector<int32_t> count_comm_members(const Context &ctx, ReplayModel &model) {
  const auto &comms = ctx.store().comms();
  std::vector<int32_t> comm_members(comms.size(), 0);
  model.comm_owners.assign(comms.size(), {});
  for (size_t c = 0; c < comms.size(); ++c) {
    std::vector<int> owners;
    for (const auto *group : {&comms[c].members, &comms[c].remote})
      for (int32_t m : *group)
        if (m >= 0 && m < ctx.nranks() && !ctx.missing(m)) {
          ++comm_members[c];
          owners.push_back(ctx.owner_of(m));
        }
    std::sort(owners.begin(), owners.end());
    owners.erase(std::unique(owners.begin(), owners.end()), owners.end());
    model.comm_owners[c] = std::move(owners);
  }
  return comm_members;
}

// Reads them into `r`, its vectors reused block after block (their pages faulted in once).
void read_owned_records(const Context &ctx, int32_t first, int32_t last, OwnedRecords &r) {
  const io::TraceStore &store = ctx.store();
  r.first = first;
  r.last = last;
  store.requests(first, last, r.requests);
  store.completions(first, last, r.completions);
  store.steps(first, last, r.executions);
}

}  // namespace

ProgramBuilder::ProgramBuilder(const Context &ctx, ReplayModel &model)
    : m_ctx(ctx),
      m_model(model),
      m_off{ctx.store().offsets("requests"), ctx.store().offsets("completions"), ctx.store().offsets("steps")},
      m_traits(classify_ops(ctx.store().ops())),
      m_comm_members(count_comm_members(ctx, model)) {
  for (int32_t r = 0; r < ctx.nranks(); ++r) m_alive += !ctx.missing(r);
}

void ProgramBuilder::start() {
  const int32_t first = m_ctx.first(), last = m_ctx.last();
  const int32_t owned = m_ctx.owned();
  m_model.programs.resize(static_cast<size_t>(owned));
  m_model.side.resize(static_cast<size_t>(owned));
  route.resize(static_cast<size_t>(m_ctx.nprocs()));
  finalize_exit.assign(static_cast<size_t>(owned), rp::kUnknown);
  finalize_coll.assign(static_cast<size_t>(owned), -1);
  m_building.resize(static_cast<size_t>(owned));
  for (int32_t r = first; r < last; ++r) {
    const size_t s = static_cast<size_t>(r - first);
    m_model.programs[s].rank = r;
    // Exact sizes: one entry per event (no growth slack, no shrinking copy).
    const auto events = static_cast<size_t>(m_ctx.store().event_offsets()[static_cast<size_t>(r) + 1] -
                                            m_ctx.store().event_offsets()[static_cast<size_t>(r)]);
    ReplayModel::Side &side = m_model.side[s];
    m_model.programs[s].events.reserve(events);
    side.enter.reserve(events);
    side.labels.reserve(events);
  }
}

void ProgramBuilder::load_block(int32_t first, int32_t last) {
  read_owned_records(m_ctx, first, last, m_rec);
  const auto &req_off = m_off.req_off, &cmp_off = m_off.cmp_off, &step_off = m_off.step_off;
  for (int32_t r = m_rec.first; r < m_rec.last; ++r) {
    const size_t s = static_cast<size_t>(r - m_ctx.first());
    Building &b = m_building[s];
    int64_t max_id = -1;
    for (int64_t k = req_off[r]; k < req_off[r + 1]; ++k)
      max_id = std::max(max_id, m_rec.requests[static_cast<size_t>(k - req_off[first])].id);
    b.slot_of_id.assign(static_cast<size_t>(max_id + 1), -1);
    b.completion_of_id.assign(static_cast<size_t>(max_id + 1), -1);
    for (int64_t k = cmp_off[r]; k < cmp_off[r + 1]; ++k) {
      const auto &c = m_rec.completions[static_cast<size_t>(k - cmp_off[first])];
      if (c.request >= 0 && c.request <= max_id)
        b.completion_of_id[static_cast<size_t>(c.request)] = static_cast<int32_t>(k - cmp_off[first]);
    }
    const auto steps = m_rec.executions.begin();
    m_model.side[s].executions =
        ExecutionLog(steps + (step_off[r] - step_off[first]), steps + (step_off[r + 1] - step_off[first]));
    b.next_request = static_cast<size_t>(req_off[r] - req_off[first]);
    b.next_completion = static_cast<size_t>(cmp_off[r] - cmp_off[first]);
  }
}

void ProgramBuilder::add_event(int32_t rank, size_t s, int64_t i, const io::Event &e) {
  rp::RankProgram &p = m_model.programs[s];
  ReplayModel::Side &side = m_model.side[s];
  Building &b = m_building[s];
  const Call c{rank,
               s,
               i,
               e,
               e.op < m_traits.size() ? m_traits[e.op] : OpTraits{},
               (e.flags & (io::kInterComm | io::kInterrupted)) != 0};
  // The event's lane; a thread's first call starts from lane 0's latest entry (its
  // creation is not traced; an entry does not carry that call's own waiting).
  size_t lane =
      static_cast<size_t>(std::find(b.lane_thread.begin(), b.lane_thread.end(), e.thread) - b.lane_thread.begin());
  if (lane == b.lane_thread.size()) {
    if (lane == 255)
      lane = 0;  // more threads than lanes: the rest share lane 0
    else {
      b.lane_thread.push_back(e.thread);
      b.prev_exit.push_back(b.lane0_enter);
    }
  }
  if (lane > 0 && p.lane.empty()) {
    p.lane.assign(p.events.size(), 0);
    // From now on exits cannot come from the next enter: the ones so far (lane 0) still do.
    std::vector<int64_t> exits(p.events.size());
    for (size_t k = 0; k < exits.size(); ++k) exits[k] = m_model.measured_exit(s, k);
    side.exit = std::move(exits);
  }
  if (!p.lane.empty()) p.lane.push_back(static_cast<uint8_t>(lane));
  rp::Event out;
  out.gap = e.t_enter - b.prev_exit[lane];
  out.first_item = static_cast<int32_t>(p.items.size());
  if (lane == 0) b.lane0_enter = e.t_enter;
  b.prev_exit[lane] = e.t_exit;
  local_end = std::max(local_end, e.t_exit);
  side.enter.push_back(e.t_enter);
  if (!p.lane.empty()) side.exit.push_back(e.t_exit);
  side.last_exit = e.t_exit;
  side.labels.push_back(e.region, static_cast<uint32_t>(e.site), e.op);
  add_call_items(c);
  activate_requests(c);
  complete_requests(c);
  out.items = static_cast<uint16_t>(p.items.size() - static_cast<size_t>(out.first_item));
  if (out.items == 0)
    p.add_local(out.gap, e.t_exit - e.t_enter);
  else
    p.events.push_back(out);
}

// The call's own messages and collective (blocking calls), and Finalize.
void ProgramBuilder::add_call_items(const Call &c) {
  rp::RankProgram &p = m_model.programs[c.s];
  const io::Event &e = c.e;
  const OpTraits &t = c.t;
  const bool message = e.peer >= 0 && !(e.flags & io::kProcNull) && !c.inter;
  if (!c.inter && (t.cls == OpClass::Send || t.cls == OpClass::Sendrecv) && message)
    p.items.push_back({rp::ItemType::Send, add_send(c, e.peer, e.tag, e.comm, e.bytes - e.bytes_recv)});
  if (!c.inter && t.cls == OpClass::Recv && message)
    p.items.push_back({rp::ItemType::Recv, add_recv(c, e.peer, e.tag, e.comm)});
  if (!c.inter && t.cls == OpClass::Collective && e.comm >= 0) {
    const bool rooted = t.flow != kernels::CollectiveFlow::All;
    p.items.push_back({rp::ItemType::Collective, add_coll(c, e.comm, e.bytes, rooted ? e.peer : -1)});
  }
  if (t.cls == OpClass::Finalize) add_finalize(c);
}

int32_t ProgramBuilder::add_send(const Call &c, int32_t dst, int32_t tag, int32_t comm, int64_t bytes) {
  rp::RankProgram &p = m_model.programs[c.s];
  ReplayModel::Side &side = m_model.side[c.s];
  const auto idx = static_cast<int32_t>(p.sends.size());
  p.sends.push_back({bytes, -1, -1});
  side.send_event.push_back(static_cast<int32_t>(c.i));
  side.send_done.push_back(-1);
  const MessageKey key = m_building[c.s].sends.next(comm, c.rank, dst, tag);
  route[static_cast<size_t>(m_ctx.owner_of(dst))].push_back({key, idx, static_cast<int32_t>(c.i), bytes});
  return idx;
}

int32_t ProgramBuilder::add_recv(const Call &c, int32_t src, int32_t tag, int32_t comm) {
  rp::RankProgram &p = m_model.programs[c.s];
  ReplayModel::Side &side = m_model.side[c.s];
  const auto idx = static_cast<int32_t>(p.recvs.size());
  p.recvs.push_back(rp::RecvMessage::unmatched(c.e.t_exit - c.e.t_enter));
  side.recv_event.push_back(static_cast<int32_t>(c.i));
  side.recv_done.push_back(-1);
  side.recv_send_event.push_back(-1);
  if (src >= 0 && src < m_ctx.nranks())
    waiting.add(m_building[c.s].recvs.next(comm, src, c.rank, tag), {static_cast<int32_t>(c.s), idx});
  return idx;
}

int32_t ProgramBuilder::add_coll(const Call &c, int32_t comm, int64_t bytes, int32_t root) {
  rp::RankProgram &p = m_model.programs[c.s];
  rp::Collective coll;
  coll.instance = rp::instance_id(comm, m_building[c.s].coll_seq[comm]++);
  coll.members = comm >= 0 && comm < static_cast<int32_t>(m_comm_members.size()) ? m_comm_members[comm] : 1;
  coll.flow = c.t.flow;
  coll.root = root;
  coll.rounds = kernels::collective_rounds(coll.members, c.t.linear);
  coll.bytes = bytes;
  p.colls.push_back(coll);
  m_model.side[c.s].coll_event.push_back(static_cast<int32_t>(c.i));
  return static_cast<int32_t>(p.colls.size() - 1);
}

void ProgramBuilder::add_finalize(const Call &c) {
  rp::RankProgram &p = m_model.programs[c.s];
  rp::Collective coll;
  coll.instance = rp::instance_id(-2, 0);
  coll.members = m_alive;
  coll.flow = kernels::CollectiveFlow::Finalize;
  p.colls.push_back(coll);
  m_model.side[c.s].coll_event.push_back(static_cast<int32_t>(c.i));
  finalize_coll[c.s] = static_cast<int32_t>(p.colls.size() - 1);
  finalize_exit[c.s] = c.e.t_exit;
  local_max_finalize_enter = std::max(local_max_finalize_enter, c.e.t_enter);
  p.items.push_back({rp::ItemType::Collective, finalize_coll[c.s]});
}

// Requests this call activated (nonblocking operations, MPI_Start).
void ProgramBuilder::activate_requests(const Call &c) {
  rp::RankProgram &p = m_model.programs[c.s];
  Building &b = m_building[c.s];
  const auto &requests = m_rec.requests;
  const size_t req_end = static_cast<size_t>(m_off.req_off[c.rank + 1] - m_off.req_off[m_rec.first]);
  while (b.next_request < req_end && requests[b.next_request].event < c.i) ++b.next_request;
  for (; b.next_request < req_end && requests[b.next_request].event == c.i; ++b.next_request) {
    const io::RequestRecord &q = requests[b.next_request];
    if (c.t.templ || c.inter || q.id < 0) continue;  // persistent templates: MPI_Start activates them
    const int32_t slot = p.request_slots++;
    b.slot_of_id[static_cast<size_t>(q.id)] = slot;
    b.slot_message.resize(static_cast<size_t>(p.request_slots), {false, -1});
    if (q.kind == io::kReqSend && q.peer >= 0) {
      const int32_t m = add_send(c, q.peer, q.tag, q.comm, q.bytes);
      b.slot_message[static_cast<size_t>(slot)] = {true, m};
      p.items.push_back({rp::ItemType::PostSend, m, slot});
    } else if (q.kind == io::kReqRecv) {
      const int32_t row = b.completion_of_id[static_cast<size_t>(q.id)];
      const io::CompletionRecord *done = row < 0 ? nullptr : &m_rec.completions[static_cast<size_t>(row)];
      const bool resolved = done && done->source >= 0 && !done->cancelled;
      if (done && done->cancelled) ++cancelled_receives;
      const int32_t m = add_recv(c, resolved ? done->source : -1, resolved ? done->tag : q.tag, q.comm);
      b.slot_message[static_cast<size_t>(slot)] = {false, m};
      p.items.push_back({rp::ItemType::PostRecv, m, slot});
    } else if (q.kind == io::kReqCollective && q.comm >= 0) {
      const bool rooted = c.t.flow != kernels::CollectiveFlow::All;
      p.items.push_back({rp::ItemType::PostCollective, add_coll(c, q.comm, c.e.bytes, rooted ? c.e.peer : -1), slot});
    } else {
      --p.request_slots;
      b.slot_of_id[static_cast<size_t>(q.id)] = -1;
    }
  }
}

// Requests this call completed; the receive half of a Sendrecv.
void ProgramBuilder::complete_requests(const Call &c) {
  rp::RankProgram &p = m_model.programs[c.s];
  ReplayModel::Side &side = m_model.side[c.s];
  Building &b = m_building[c.s];
  const auto &completions = m_rec.completions;
  const size_t cmp_end = static_cast<size_t>(m_off.cmp_off[c.rank + 1] - m_off.cmp_off[m_rec.first]);
  while (b.next_completion < cmp_end && completions[b.next_completion].event < c.i) ++b.next_completion;
  for (; b.next_completion < cmp_end && completions[b.next_completion].event == c.i; ++b.next_completion) {
    const io::CompletionRecord &done = completions[b.next_completion];
    if (done.request < 0) {
      if (c.t.cls == OpClass::Sendrecv && done.source >= 0 && !c.inter)
        p.items.push_back({rp::ItemType::Recv, add_recv(c, done.source, done.tag, c.e.comm)});
      continue;
    }
    if (static_cast<size_t>(done.request) < b.slot_of_id.size() &&
        b.slot_of_id[static_cast<size_t>(done.request)] >= 0) {
      const int32_t slot = b.slot_of_id[static_cast<size_t>(done.request)];
      p.items.push_back({rp::ItemType::Complete, slot});
      const auto [is_send, m] = b.slot_message[static_cast<size_t>(slot)];
      if (m >= 0) (is_send ? side.send_done : side.recv_done)[static_cast<size_t>(m)] = static_cast<int32_t>(c.i);
    }
  }
}

// Merges each lane's post (measured enter) and completion (measured exit) steps by time;
// at equal times a post goes first (a call entered when another ended may be what that
// one waited for). Each lane keeps its own order.
void ProgramBuilder::order_lanes() {
  for (size_t s = 0; s < m_model.programs.size(); ++s) {
    rp::RankProgram &p = m_model.programs[s];
    if (p.lane.empty()) continue;
    const ReplayModel::Side &side = m_model.side[s];
    const size_t lanes = m_building[s].lane_thread.size();
    std::vector<std::vector<int32_t>> of_lane(lanes);
    for (size_t i = 0; i < p.events.size(); ++i) of_lane[p.lane[i]].push_back(static_cast<int32_t>(i));
    std::vector<size_t> next(lanes, 0);  // per lane: 2 x its events done + phase
    auto time_of = [&](size_t l) {
      const size_t i = static_cast<size_t>(of_lane[l][next[l] / 2]);
      return std::pair{next[l] % 2 ? m_model.measured_exit(s, i) : side.enter[i], static_cast<int>(next[l] % 2)};
    };
    p.steps.reserve(2 * p.events.size());
    while (p.steps.size() < 2 * p.events.size()) {
      size_t best = lanes;
      for (size_t l = 0; l < lanes; ++l)
        if (next[l] < 2 * of_lane[l].size() && (best == lanes || time_of(l) < time_of(best))) best = l;
      p.steps.push_back(of_lane[best][next[best] / 2] << 1 | static_cast<int32_t>(next[best] % 2));
      ++next[best];
    }
  }
}

void ProgramBuilder::finish_block(int32_t first, int32_t last) {
  // Exact sizes, a rank at a time: the program is most of the stage's memory, and the
  // growth slack of every rank at once was a tenth of it.
  for (int32_t r = first; r < last; ++r) {
    const size_t s = static_cast<size_t>(r - m_ctx.first());
    rp::RankProgram &p = m_model.programs[s];
    ReplayModel::Side &d = m_model.side[s];
    p.events.shrink_to_fit();
    p.owns.shrink_to_fit();
    p.items.shrink_to_fit();
    p.sends.shrink_to_fit();
    p.recvs.shrink_to_fit();
    p.colls.shrink_to_fit();
    p.lane.shrink_to_fit();
    d.exit.shrink_to_fit();
    d.enter.shrink_to_fit();
    for (auto *v : {&d.send_event, &d.recv_event, &d.recv_send_event, &d.send_done, &d.recv_done, &d.coll_event})
      v->shrink_to_fit();
    d.labels.seal();
    Building done;  // what was only for the rank's events goes; its lanes stay (order_lanes)
    done.lane_thread = std::move(m_building[s].lane_thread);
    m_building[s] = std::move(done);
  }
  std::vector<std::vector<MatchReply>> none;  // an owned sender is answered directly
  auto &mine = route[static_cast<size_t>(m_ctx.me())];
  size_t kept = 0;
  for (const SendKey &k : mine)
    if (k.key.dst < last)
      meet(k, none);
    else
      mine[kept++] = k;
  mine.resize(kept);
  if (kept == 0) std::vector<SendKey>().swap(mine);
}

// Collective. Finalize: everything after the last rank entered is the measured remainder.
void set_finalize_remainders(const Context &ctx, ReplayModel &model, const ProgramBuilder &built) {
  int64_t max_finalize_enter = built.local_max_finalize_enter;
  MPI_Allreduce(MPI_IN_PLACE, &max_finalize_enter, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  for (size_t s = 0; s < built.finalize_coll.size(); ++s)
    if (built.finalize_coll[s] >= 0)
      model.programs[s].colls[static_cast<size_t>(built.finalize_coll[s])].remainder =
          std::max<int64_t>(0, built.finalize_exit[s] - max_finalize_enter);
}

}  // namespace perfsift::pipeline::program_building
