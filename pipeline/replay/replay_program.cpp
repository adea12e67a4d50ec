// Assembling replay programs from the store: each owned rank's events, requests,
// completions and region executions, a block of ranks at a time, become a
// kernels::replay::RankProgram (built by a kernels::replay::RankProgramBuilder) and the
// model's side data (labels, message and request
// links, executions); each message's key goes to the match (message_matching.cpp).
// O(owned events) work; the records of one block of ranks held at a time.
#include "pipeline/replay/program_assembler.h"

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

ReplayProgramAssembler::ReplayProgramAssembler(const Context &ctx, ReplayModel &model)
    : m_ctx(ctx),
      m_model(model),
      m_off{ctx.store().offsets("requests"), ctx.store().offsets("completions"), ctx.store().offsets("steps")},
      m_traits(classify_ops(ctx.store().ops())),
      m_comm_members(count_comm_members(ctx, model)) {
  for (int32_t r = 0; r < ctx.nranks(); ++r) m_alive += !ctx.missing(r);
}

void ReplayProgramAssembler::start() {
  const int32_t first = m_ctx.first(), last = m_ctx.last();
  const int32_t owned = m_ctx.owned();
  m_model.programs.resize(static_cast<size_t>(owned));
  m_model.side.resize(static_cast<size_t>(owned));
  route.resize(static_cast<size_t>(m_ctx.nprocs()));
  m_finalize_exit.assign(static_cast<size_t>(owned), rp::kUnknown);
  m_finalize_coll.assign(static_cast<size_t>(owned), -1);
  m_building.resize(static_cast<size_t>(owned));
  m_programs.reserve(static_cast<size_t>(owned));
  for (int32_t r = first; r < last; ++r) {
    const size_t s = static_cast<size_t>(r - first);
    m_programs.emplace_back(m_model.programs[s], r);
    // Exact sizes: one entry per event (no growth slack, no shrinking copy).
    const auto events = static_cast<size_t>(m_ctx.store().event_offsets()[static_cast<size_t>(r) + 1] -
                                            m_ctx.store().event_offsets()[static_cast<size_t>(r)]);
    ReplayModel::Side &side = m_model.side[s];
    m_programs[s].reserve_events(events);
    side.enter.reserve(events);
    side.labels.reserve(events);
  }
}

void ReplayProgramAssembler::load_block(int32_t first, int32_t last) {
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

void ReplayProgramAssembler::add_event(int32_t rank, size_t s, int64_t i, const io::Event &e) {
  rp::RankProgramBuilder &p = m_programs[s];
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
  if (lane > 0 && !p.laned_so_far()) {
    // From now on exits cannot come from the next enter: the ones so far (lane 0) still do.
    std::vector<int64_t> exits(p.program().events.size());
    for (size_t k = 0; k < exits.size(); ++k) exits[k] = m_model.measured_exit(s, k);
    side.exit = std::move(exits);
  }
  p.begin_event(e.t_enter - b.prev_exit[lane], static_cast<uint8_t>(lane));
  if (lane == 0) b.lane0_enter = e.t_enter;
  b.prev_exit[lane] = e.t_exit;
  local_end = std::max(local_end, e.t_exit);
  side.enter.push_back(e.t_enter);
  if (p.laned_so_far()) side.exit.push_back(e.t_exit);
  side.last_exit = e.t_exit;
  side.labels.push_back(e.region, static_cast<uint32_t>(e.site), e.op);
  add_call_items(c);
  activate_requests(c);
  complete_requests(c);
  p.end_event(e.t_exit - e.t_enter);
}

// The call's own messages and collective (blocking calls), and Finalize.
void ReplayProgramAssembler::add_call_items(const Call &c) {
  rp::RankProgramBuilder &p = m_programs[c.s];
  const io::Event &e = c.e;
  const OpTraits &t = c.t;
  const bool message = e.peer >= 0 && !(e.flags & io::kProcNull) && !c.inter;
  if (!c.inter && (t.cls == OpClass::Send || t.cls == OpClass::Sendrecv) && message)
    p.send(add_send(c, e.peer, e.tag, e.comm, e.bytes - e.bytes_recv));
  if (!c.inter && t.cls == OpClass::Recv && message) p.recv(add_recv(c, e.peer, e.tag, e.comm));
  if (!c.inter && t.cls == OpClass::Collective && e.comm >= 0) {
    const bool rooted = t.flow != kernels::CollectiveFlow::All;
    p.collective_call(add_coll(c, e.comm, e.bytes, rooted ? e.peer : -1));
  }
  if (t.cls == OpClass::Finalize) add_finalize(c);
}

int32_t ReplayProgramAssembler::add_send(const Call &c, int32_t dst, int32_t tag, int32_t comm, int64_t bytes) {
  ReplayModel::Side &side = m_model.side[c.s];
  const int32_t idx = m_programs[c.s].add_send(bytes);
  side.send_event.push_back(static_cast<int32_t>(c.i));
  side.send_done.push_back(-1);
  const MessageKey key = m_building[c.s].sends.next(comm, c.rank, dst, tag);
  route[static_cast<size_t>(m_ctx.owner_of(dst))].push_back({key, idx, static_cast<int32_t>(c.i), bytes});
  return idx;
}

int32_t ReplayProgramAssembler::add_recv(const Call &c, int32_t src, int32_t tag, int32_t comm) {
  ReplayModel::Side &side = m_model.side[c.s];
  const int32_t idx = m_programs[c.s].add_recv(c.e.t_exit - c.e.t_enter);
  side.recv_event.push_back(static_cast<int32_t>(c.i));
  side.recv_done.push_back(-1);
  side.recv_send_event.push_back(-1);
  if (src >= 0 && src < m_ctx.nranks())
    waiting.add(m_building[c.s].recvs.next(comm, src, c.rank, tag), {static_cast<int32_t>(c.s), idx});
  return idx;
}

int32_t ReplayProgramAssembler::add_coll(const Call &c, int32_t comm, int64_t bytes, int32_t root) {
  const int64_t instance = rp::instance_id(comm, m_building[c.s].coll_seq[comm]++);
  const int32_t members = comm >= 0 && comm < static_cast<int32_t>(m_comm_members.size()) ? m_comm_members[comm] : 1;
  m_model.side[c.s].coll_event.push_back(static_cast<int32_t>(c.i));
  return m_programs[c.s].add_collective(rp::collective_call(instance, members, c.t.flow, root, bytes, c.t.linear));
}

void ReplayProgramAssembler::add_finalize(const Call &c) {
  rp::Collective coll;  // no rounds nor bytes: its cost is its measured remainder (set_finalize_remainders)
  coll.instance = rp::instance_id(-2, 0);
  coll.members = m_alive;
  coll.flow = kernels::CollectiveFlow::Finalize;
  m_model.side[c.s].coll_event.push_back(static_cast<int32_t>(c.i));
  m_finalize_coll[c.s] = m_programs[c.s].add_collective(coll);
  m_finalize_exit[c.s] = c.e.t_exit;
  m_local_max_finalize_enter = std::max(m_local_max_finalize_enter, c.e.t_enter);
  m_programs[c.s].collective_call(m_finalize_coll[c.s]);
}

// Requests this call activated (nonblocking operations, MPI_Start).
void ReplayProgramAssembler::activate_requests(const Call &c) {
  rp::RankProgramBuilder &p = m_programs[c.s];
  Building &b = m_building[c.s];
  const auto &requests = m_rec.requests;
  const size_t req_end = static_cast<size_t>(m_off.req_off[c.rank + 1] - m_off.req_off[m_rec.first]);
  while (b.next_request < req_end && requests[b.next_request].event < c.i) ++b.next_request;
  for (; b.next_request < req_end && requests[b.next_request].event == c.i; ++b.next_request) {
    const io::RequestRecord &q = requests[b.next_request];
    if (c.t.templ || c.inter || q.id < 0) continue;  // persistent templates: MPI_Start activates them
    // Peer -1: MPI_PROC_NULL (no message; the request completes at once) or a partner the
    // collector could not name; neither has a send to meet. -2 is a wildcard, resolved below.
    const bool send = q.kind == io::kReqSend && q.peer >= 0, recv = q.kind == io::kReqRecv && q.peer != -1,
               coll = q.kind == io::kReqCollective && q.comm >= 0;
    if (!send && !recv && !coll) {
      b.slot_of_id[static_cast<size_t>(q.id)] = -1;
      continue;
    }
    const int32_t slot = p.add_request_slot();
    b.slot_of_id[static_cast<size_t>(q.id)] = slot;
    b.slot_message.resize(static_cast<size_t>(slot) + 1, {false, -1});
    if (send) {
      const int32_t m = add_send(c, q.peer, q.tag, q.comm, q.bytes);
      b.slot_message[static_cast<size_t>(slot)] = {true, m};
      p.post_send(m, slot);
    } else if (recv) {
      const int32_t row = b.completion_of_id[static_cast<size_t>(q.id)];
      const io::CompletionRecord *done = row < 0 ? nullptr : &m_rec.completions[static_cast<size_t>(row)];
      const bool resolved = done && done->source >= 0 && !done->cancelled;
      if (done && done->cancelled) ++cancelled_receives;
      const int32_t m = add_recv(c, resolved ? done->source : -1, resolved ? done->tag : q.tag, q.comm);
      b.slot_message[static_cast<size_t>(slot)] = {false, m};
      p.post_recv(m, slot);
    } else {
      const bool rooted = c.t.flow != kernels::CollectiveFlow::All;
      p.post_collective(add_coll(c, q.comm, c.e.bytes, rooted ? c.e.peer : -1), slot);
    }
  }
}

// Requests this call completed; the receive half of a Sendrecv.
void ReplayProgramAssembler::complete_requests(const Call &c) {
  rp::RankProgramBuilder &p = m_programs[c.s];
  ReplayModel::Side &side = m_model.side[c.s];
  Building &b = m_building[c.s];
  const auto &completions = m_rec.completions;
  const size_t cmp_end = static_cast<size_t>(m_off.cmp_off[c.rank + 1] - m_off.cmp_off[m_rec.first]);
  while (b.next_completion < cmp_end && completions[b.next_completion].event < c.i) ++b.next_completion;
  for (; b.next_completion < cmp_end && completions[b.next_completion].event == c.i; ++b.next_completion) {
    const io::CompletionRecord &done = completions[b.next_completion];
    if (done.request < 0) {
      if (c.t.cls == OpClass::Sendrecv && done.source >= 0 && !c.inter)
        p.recv(add_recv(c, done.source, done.tag, c.e.comm));
      continue;
    }
    if (static_cast<size_t>(done.request) < b.slot_of_id.size() &&
        b.slot_of_id[static_cast<size_t>(done.request)] >= 0) {
      const int32_t slot = b.slot_of_id[static_cast<size_t>(done.request)];
      p.complete(slot);
      const auto [is_send, m] = b.slot_message[static_cast<size_t>(slot)];
      if (m >= 0) (is_send ? side.send_done : side.recv_done)[static_cast<size_t>(m)] = static_cast<int32_t>(c.i);
    }
  }
}

// A laned rank's steps: merges each lane's post (measured enter) and completion (measured
// exit) steps by time; at equal times a post goes first (a call entered when another ended
// may be what that one waited for). Each lane keeps its own order.
void ReplayProgramAssembler::order_lanes(size_t s) {
  rp::RankProgramBuilder &builder = m_programs[s];
  const rp::RankProgram &p = builder.program();
  if (!builder.laned_so_far()) return;
  const ReplayModel::Side &side = m_model.side[s];
  const size_t lanes = m_building[s].lane_thread.size();
  std::vector<std::vector<int32_t>> of_lane(lanes);
  for (size_t i = 0; i < p.events.size(); ++i) of_lane[p.lane[i]].push_back(static_cast<int32_t>(i));
  std::vector<size_t> next(lanes, 0);  // per lane: 2 x its events done + phase
  auto time_of = [&](size_t l) {
    const size_t i = static_cast<size_t>(of_lane[l][next[l] / 2]);
    return std::pair{next[l] % 2 ? m_model.measured_exit(s, i) : side.enter[i], static_cast<int>(next[l] % 2)};
  };
  for (size_t done = 0; done < 2 * p.events.size(); ++done) {
    size_t best = lanes;
    for (size_t l = 0; l < lanes; ++l)
      if (next[l] < 2 * of_lane[l].size() && (best == lanes || time_of(l) < time_of(best))) best = l;
    builder.add_step(of_lane[best][next[best] / 2], next[best] % 2 == 1);
    ++next[best];
  }
}

void ReplayProgramAssembler::finish_block(int32_t first, int32_t last) {
  // Exact sizes, a rank at a time: the program is most of the stage's memory, and the
  // growth slack of every rank at once was a tenth of it.
  for (int32_t r = first; r < last; ++r) {
    const size_t s = static_cast<size_t>(r - m_ctx.first());
    ReplayModel::Side &d = m_model.side[s];
    order_lanes(s);
    m_programs[s].finish();
    d.exit.shrink_to_fit();
    d.enter.shrink_to_fit();
    for (auto *v : {&d.send_event, &d.recv_event, &d.recv_send_event, &d.send_done, &d.recv_done, &d.coll_event})
      v->shrink_to_fit();
    d.labels.seal();
    Building done;  // what was only for the rank's events goes; its lanes stay (lanes_of_rank)
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

void ReplayProgramAssembler::set_finalize_remainders() {
  int64_t max_finalize_enter = m_local_max_finalize_enter;
  MPI_Allreduce(MPI_IN_PLACE, &max_finalize_enter, 1, MPI_INT64_T, MPI_MAX, m_ctx.comm());
  for (size_t s = 0; s < m_finalize_coll.size(); ++s)
    if (m_finalize_coll[s] >= 0)
      m_programs[s].collective(m_finalize_coll[s]).remainder =
          std::max<int64_t>(0, m_finalize_exit[s] - max_finalize_enter);
}

}  // namespace perfsift::pipeline::program_building
