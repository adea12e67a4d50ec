// Building replay programs from the store, matching messages, and the distributed
// replay driver.
//
// Matching (kernels/message_match.h): both sides number their own messages, so a match
// is a join on (c, s, d, t, k): senders route their keys to the receiver's owner, which
// answers with the receive's index. O(messages) work and one all-to-all each way.
#include "pipeline/replay/replay_model.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <cstdio>
#include <array>
#include <cstring>
#include <type_traits>
#include <sstream>
#include <unordered_map>

#include "config/schema.h"
#include "kernels/message_match.h"
#include "kernels/replay_cuts.h"
#include "kernels/replay_pass.h"
#include "pipeline/engine/check.h"
#include "pipeline/engine/op_traits.h"
#include "io/atomic_file.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {

using kernels::MessageKey;

struct SendKey {
  MessageKey key;
  int32_t send_index;
  int32_t send_event;  // in the sender: the receiver keeps it (/whatif/messages)
  int64_t bytes;
};
struct MatchReply {
  int32_t src, send_index, dst, recv_index;
};

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

// Each table's row offsets per rank (every rank of the run).
struct RecordOffsets {
  std::vector<int64_t> req_off, cmp_off, step_off;
};

// Requests, completions and region executions of a block of owned ranks [first, last)
// (one read each): the program is built a block at a time, so that these records (about
// 70 B per event) never exist for more than a block of ranks.
struct OwnedRecords {
  int32_t first = 0, last = 0;
  std::vector<io::RequestRecord> requests;
  std::vector<io::CompletionRecord> completions;
  std::vector<io::StepRecord> executions;
};

// Reads them into `r`, its vectors reused block after block (their pages faulted in once).
void read_owned_records(const Context &ctx, int32_t first, int32_t last, OwnedRecords &r) {
  const io::TraceStore &store = ctx.store();
  r.first = first;
  r.last = last;
  store.requests(first, last, r.requests);
  store.completions(first, last, r.completions);
  store.steps(first, last, r.executions);
}

// Per-rank building state, kept across event slices.
struct Building {
  // Per lane (thread, in order of first call; lane 0 initialised MPI): its previous exit.
  std::vector<int64_t> prev_exit = {0};
  std::vector<int32_t> lane_thread = {0};  // lane -> thread number
  int64_t lane0_enter = 0;                 // lane 0's latest entry (a new lane's origin)
  size_t next_request = 0, next_completion = 0;
  // Request ids are small and dense per rank (the collector numbers them): vectors.
  std::vector<int32_t> slot_of_id;        // id -> request slot, -1 none
  std::vector<int32_t> completion_of_id;  // id -> completion row (index into `completions`), -1 none
  kernels::MessageCounter sends, recvs;
  std::unordered_map<int32_t, int64_t> coll_seq;
  std::vector<std::pair<bool, int32_t>> slot_message;  // request slot -> (is a send, message index), or index -1
};

// Turns the owned ranks' events, slice by slice, into replay programs and side data;
// collects each send's key for its receiver's owner and each receive's key for the match.
class ProgramBuilder {
 public:
  ProgramBuilder(const Context &ctx, ReplayModel &model)
      : m_ctx(ctx),
        m_model(model),
        m_off{ctx.store().offsets("requests"), ctx.store().offsets("completions"), ctx.store().offsets("steps")},
        m_traits(classify_ops(ctx.store().ops())),
        m_comm_members(count_comm_members(ctx, model)) {
    for (int32_t r = 0; r < ctx.nranks(); ++r) m_alive += !ctx.missing(r);
  }

  // Sizes the programs and the building state of the owned ranks.
  void start();
  // The records of the next block of ranks [first, last), before its events, in place of
  // the previous block's.
  void load_block(int32_t first, int32_t last);
  // After the last block: the programs hold what matching needs.
  void release_records() { m_rec = {}; }
  // One slice of a rank's events; `index` is the first one's index within the rank.
  void add_events(int32_t rank, int64_t index, const io::Event *ev, const io::Event *end) {
    const size_t s = static_cast<size_t>(rank - m_ctx.first());
    for (int64_t i = index; ev != end; ++ev, ++i) add_event(rank, s, i, *ev);
  }

  // After the block of owned ranks [first, last) is built: its vectors are sized exactly,
  // and the sends between owned ranks whose receiver is built meet now (they need not
  // wait for the other processes' keys: at K = 1, all; their keys go).
  void finish_block(int32_t first, int32_t last);
  // A send's key meets its receive (an owned rank's): the receive learns its send, the send
  // its receive (directly when owned here; by a reply to `replies` of its owner).
  void meet(const SendKey &k, std::vector<std::vector<MatchReply>> &replies);
  void answer(const MatchReply &r);

  std::vector<std::vector<SendKey>> route;                     // per analysis process: sends to its ranks
  kernels::ReceiveIndex<std::pair<int32_t, int32_t>> waiting;  // key -> (slot, recv index)
  int64_t unmatched_sends = 0;                                 // owned receivers' keys no receive met
  std::vector<int64_t> finalize_exit;                          // per owned rank
  std::vector<int64_t> lanes_of_rank() const {
    std::vector<int64_t> out;
    for (const auto &b : m_building) out.push_back(static_cast<int64_t>(b.lane_thread.size()));
    return out;
  }
  // After the last event: the lanes' post and completion steps of ranks with several.
  void order_lanes();
  std::vector<int32_t> finalize_coll;  // per owned rank: its Finalize collective, -1 none
  int64_t local_max_finalize_enter = rp::kUnknown, local_end = 0;
  // Receives cancelled with MPI_Cancel (the completion says so): no message ever meets them.
  int64_t cancelled_receives = 0;

 private:
  // The event being added.
  struct Call {
    int32_t rank;
    size_t s;   // its owned slot
    int64_t i;  // its index within the rank
    const io::Event &e;
    OpTraits t;
    bool inter;  // intercommunicator or interrupted: no messages
  };
  void add_event(int32_t rank, size_t s, int64_t i, const io::Event &e);
  void add_call_items(const Call &c);
  int32_t add_send(const Call &c, int32_t dst, int32_t tag, int32_t comm, int64_t bytes);
  // The message's bytes come with the send that meets it (match_messages).
  int32_t add_recv(const Call &c, int32_t src, int32_t tag, int32_t comm);
  int32_t add_coll(const Call &c, int32_t comm, int64_t bytes, int32_t root);
  void add_finalize(const Call &c);
  void activate_requests(const Call &c);
  void complete_requests(const Call &c);

  const Context &m_ctx;
  ReplayModel &m_model;
  const RecordOffsets m_off;
  OwnedRecords m_rec;  // the block being built
  const std::vector<OpTraits> m_traits;
  const std::vector<int32_t> m_comm_members;  // per communicator: members with data
  int32_t m_alive = 0;                        // ranks with data
  std::vector<Building> m_building;
};

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

void ProgramBuilder::meet(const SendKey &k, std::vector<std::vector<MatchReply>> &replies) {
  const auto found = waiting.take(k.key);
  if (!found) {
    ++unmatched_sends;
    return;
  }
  const auto [slot, ri] = *found;
  m_model.programs[static_cast<size_t>(slot)].recvs[static_cast<size_t>(ri)] =
      rp::RecvMessage::matched(k.bytes, k.key.src, k.send_index);
  m_model.side[static_cast<size_t>(slot)].recv_send_event[static_cast<size_t>(ri)] = k.send_event;
  const MatchReply r{k.key.src, k.send_index, k.key.dst, ri};
  const int owner = m_ctx.owner_of(k.key.src);
  if (owner == m_ctx.me())
    answer(r);
  else
    replies[static_cast<size_t>(owner)].push_back(r);
}

void ProgramBuilder::answer(const MatchReply &r) {
  rp::SendMessage &m =
      m_model.programs[static_cast<size_t>(r.src - m_ctx.first())].sends[static_cast<size_t>(r.send_index)];
  m.dst = r.dst;
  m.recv_index = r.recv_index;
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

// Collective. Match: send keys to the receiver's owner, replies back to the sender's
// owner (messages between this process's own ranks met as their blocks were built: the
// last block's finish_block left none). Returns the sends no receive met, counted by
// their receiver's owner.
int64_t match_messages(const Context &ctx, ProgramBuilder &built) {
  std::vector<std::vector<MatchReply>> replies(static_cast<size_t>(ctx.nprocs()));
  for (const SendKey &k : ctx.alltoallv(built.route)) built.meet(k, replies);
  built.route = {};
  for (const MatchReply &r : ctx.alltoallv(replies)) built.answer(r);
  return built.unmatched_sends;
}

// Collective: the run-wide figures (message and call counts, the measured end).
void count_run_figures(const Context &ctx, ReplayModel &model, int64_t unmatched_sends, int64_t cancelled_receives,
                       int64_t local_end) {
  int64_t sends = 0, receives = 0, collectives = 0, local_events = 0, events = 0;
  for (const auto &p : model.programs) {
    sends += static_cast<int64_t>(p.sends.size());
    receives += static_cast<int64_t>(p.recvs.size());
    collectives += static_cast<int64_t>(p.colls.size());
    events += static_cast<int64_t>(p.events.size());
    for (const auto &e : p.events) local_events += e.items == 0;
  }
  // Receives whose source is unknown never entered `waiting`; count them as unmatched too,
  // except the cancelled ones (MPI_Cancel: no partner by design, counted apart).
  int64_t unmatched_receives = -cancelled_receives;
  for (const auto &p : model.programs)
    for (const auto &r : p.recvs) unmatched_receives += r.src < 0;
  std::vector<int64_t> sums = {sends,        receives, unmatched_sends,    unmatched_receives,  collectives,
                               local_events, events,   cancelled_receives, model.threaded_ranks};
  ctx.allreduce_sum(sums);
  model.sends = sums[0];
  model.receives = sums[1];
  model.unmatched_sends = sums[2];
  model.unmatched_receives = sums[3];
  model.collectives = sums[4];
  model.local_events = sums[5];
  model.events = sums[6];
  model.cancelled_receives = sums[7];
  model.threaded_ranks = sums[8];
  MPI_Allreduce(MPI_IN_PLACE, &model.max_threads, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  MPI_Allreduce(&local_end, &model.measured_ns, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
}

}  // namespace

ProductBuilder matched_run_builder() {
  return {product_name<MatchedRun>(),
          "each owned rank's events as a replay program, messages matched across analysis processes",
          {},
          [](Context &ctx, const std::vector<std::string_view> &wanted) {
            ctx.progress().begin("matching messages");
            std::optional<OperationTally> tally;
            if (std::find(wanted.begin(), wanted.end(), product_name<OperationTotals>()) != wanted.end())
              tally.emplace(ctx.store().ops(), ctx.first(), ctx.owned());
            auto model = build_replay_model(ctx, kernels::LogGPS{}, tally ? &*tally : nullptr);
            ctx.progress().end();
            ctx.products().publish(MatchedRun{std::move(model)});
            if (tally) ctx.products().publish(tally->take());
          },
          {product_name<OperationTotals>()}};
}

ProductBuilder region_executions_builder() {
  return {product_name<RegionExecutions>(),
          "the matched run's region executions, released after their last user",
          {product_name<MatchedRun>()},
          [](Context &ctx, const std::vector<std::string_view> &) {
            ctx.products().publish(RegionExecutions{ctx.products().get<MatchedRun>().model});
          }};
}

std::shared_ptr<ReplayModel> build_replay_model(const Context &ctx, const kernels::LogGPS &params,
                                                OperationTally *tally) {
  auto model = std::make_shared<ReplayModel>();
  model->params = params;
  ProgramBuilder built(ctx, *model);
  built.start();
  const auto add_slice = [&](int32_t rank, int64_t index, const io::Event *ev, const io::Event *end) {
    built.add_events(rank, index, ev, end);
    if (tally) tally->add(rank, index, ev, end);
  };
  // Blocks of ranks, each its records then its events.
  ctx.progress().begin("building the replay program");
  ctx.in_rank_blocks(ctx.store().event_offsets(), 2 * ctx.config().get_int("analysis.rows_per_read"),
                     [&](int32_t a, int32_t b, int64_t round, int64_t rounds) {
                       built.load_block(a, b);
                       ctx.scan_events(a, b, add_slice);
                       built.finish_block(a, b);
                       ctx.progress().update(static_cast<double>(round + 1) / static_cast<double>(rounds));
                     });
  built.release_records();
  ctx.progress().end();
  set_finalize_remainders(ctx, *model, built);
  built.order_lanes();
  for (int64_t lanes : built.lanes_of_rank()) {
    model->threaded_ranks += lanes > 1;
    model->max_threads = std::max(model->max_threads, lanes);
  }
  const int64_t unmatched_sends = match_messages(ctx, built);
  count_run_figures(ctx, *model, unmatched_sends, built.cancelled_receives, built.local_end);
  return model;
}

std::vector<int32_t> matched_receives(const ReplayModel &model, size_t s) {
  const auto &recvs = model.programs[s].recvs;
  const auto &event = model.side[s].recv_event;
  std::vector<int32_t> order;
  for (size_t ri = 0; ri < recvs.size(); ++ri)
    if (recvs[ri].send_index >= 0) order.push_back(static_cast<int32_t>(ri));
  const auto by_sender = [&](int32_t a, int32_t b) {
    return recvs[static_cast<size_t>(a)].src < recvs[static_cast<size_t>(b)].src;
  };
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && event[static_cast<size_t>(order[j])] == event[static_cast<size_t>(order[i])]) ++j;
    if (j - i > 1)
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(i), order.begin() + static_cast<std::ptrdiff_t>(j),
                       by_sender);
    i = j;
  }
  return order;
}

namespace {
template <class T>
void put(std::vector<char> &b, const std::vector<T> &v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const int64_t n = static_cast<int64_t>(v.size());
  b.insert(b.end(), reinterpret_cast<const char *>(&n), reinterpret_cast<const char *>(&n) + sizeof n);
  if (n)
    b.insert(b.end(), reinterpret_cast<const char *>(v.data()), reinterpret_cast<const char *>(v.data() + v.size()));
}
template <class T>
void get(const char *&p, std::vector<T> &v) {
  int64_t n = 0;
  std::memcpy(&n, p, sizeof n);
  p += sizeof n;
  v.resize(static_cast<size_t>(n));
  if (n) std::memcpy(static_cast<void *>(v.data()), p, static_cast<size_t>(n) * sizeof(T));
  p += static_cast<size_t>(n) * sizeof(T);
}
}  // namespace

namespace {
// One rank's share of the model, field by field, for both packing and unpacking: `f`
// is called on each vector in the same order either way. The per-message timing links
// (exit, recv_event, *_done, coll_event) stay with the owner: only the owner's
// message table (pipeline/replay/matched_messages.h) reads them.
template <class Program, class Side, class Timings, class F>
void each_field(Program &p, Side &d, Timings &t, F &&f) {
  f(p.events);
  f(p.items);
  f(p.sends);
  f(p.recvs);
  f(p.colls);
  f(p.owns);
  f(p.lane);
  f(p.steps);
  rp::TimingColumn::each_part(t, f);
  kernels::replay::BlockDeltaColumn::each_part(d.enter, f);
  CallLabels::each_part(d.labels, f);
  f(d.send_event);
  ExecutionLog::each_part(d.executions, f);
}
}  // namespace

std::shared_ptr<ReplayModel> gather_whole(const Context &ctx, const ReplayModel &m) {
  std::vector<char> mine;
  const rp::TimingColumn none;
  for (size_t s = 0; s < m.programs.size(); ++s) {
    const auto &p = m.programs[s];
    put(mine, std::vector<int32_t>{p.rank, p.request_slots});
    each_field(p, m.side[s], s < m.baseline.size() ? m.baseline[s] : none, [&](const auto &v) { put(mine, v); });
  }
  const auto all = ctx.allgatherv(mine);
  auto w = std::make_shared<ReplayModel>();
  w->params = m.params;
  w->measured_ns = m.measured_ns;
  w->events = m.events;
  w->sends = m.sends;
  w->receives = m.receives;
  w->unmatched_sends = m.unmatched_sends;
  w->unmatched_receives = m.unmatched_receives;
  w->cancelled_receives = m.cancelled_receives;
  w->collectives = m.collectives;
  w->local_events = m.local_events;
  w->comm_owners = m.comm_owners;
  const char *p = all.data(), *end = all.data() + all.size();
  while (p < end) {
    rp::RankProgram q;
    ReplayModel::Side d;
    rp::TimingColumn t;
    std::vector<int32_t> head;
    get(p, head);
    q.rank = head[0];
    q.request_slots = head[1];
    each_field(q, d, t, [&](auto &v) { get(p, v); });
    w->programs.push_back(std::move(q));
    w->side.push_back(std::move(d));
    w->baseline.push_back(std::move(t));
  }
  return w;
}

namespace {
// A round's blob for one destination: the three counts, then the records of each kind.
template <class T>
void put_records(std::vector<char> &blob, const std::vector<T> &v) {
  static_assert(std::is_trivially_copyable_v<T>);
  blob.insert(blob.end(), reinterpret_cast<const char *>(v.data()),
              reinterpret_cast<const char *>(v.data() + v.size()));
}
// What crosses owners in one round, per destination.
struct RoundTraffic {
  std::vector<rp::Engine::SendPost> sends;
  std::vector<rp::Engine::RecvPost> recvs;
  std::vector<rp::Engine::Arrival> arrivals;
  std::vector<rp::Engine::Pull> pulls;
  bool empty() const { return sends.empty() && recvs.empty() && arrivals.empty() && pulls.empty(); }
};
// One engine's posts and collective arrivals, per destination process: posts to their
// rank's owner, arrivals to every other owner of the communicator (every other process for
// MPI_Finalize's). Engine and PassEngine outboxes alike.
template <class Box, class Traffic>
void route_outbox(const Context &ctx, const ReplayModel &model, const Box &box, std::vector<Traffic> &to) {
  for (const auto &p : box.sends) to[static_cast<size_t>(ctx.owner_of(p.dst))].sends.push_back(p);
  for (const auto &p : box.recvs) to[static_cast<size_t>(ctx.owner_of(p.src))].recvs.push_back(p);
  for (const auto &a : box.arrivals) {
    const int32_t comm = rp::instance_comm(a.instance);
    if (comm >= 0 && comm < static_cast<int32_t>(model.comm_owners.size())) {
      for (int k : model.comm_owners[static_cast<size_t>(comm)])
        if (k != ctx.me()) to[static_cast<size_t>(k)].arrivals.push_back(a);
    } else {
      for (int k = 0; k < ctx.nprocs(); ++k)
        if (k != ctx.me()) to[static_cast<size_t>(k)].arrivals.push_back(a);
    }
  }
}
// One engine's traffic for one destination: its index and four counts, then the posts,
// arrivals and pulls.
void pack_round(std::vector<char> &blob, int64_t engine, const RoundTraffic &t) {
  if (t.empty()) return;  // nothing: no record at all
  const int64_t head[5] = {engine, static_cast<int64_t>(t.sends.size()), static_cast<int64_t>(t.recvs.size()),
                           static_cast<int64_t>(t.arrivals.size()), static_cast<int64_t>(t.pulls.size())};
  blob.insert(blob.end(), reinterpret_cast<const char *>(head), reinterpret_cast<const char *>(head + 5));
  put_records(blob, t.sends);
  put_records(blob, t.recvs);
  put_records(blob, t.arrivals);
  put_records(blob, t.pulls);
}
template <class T>
const char *take_records(const char *at, int64_t n, std::vector<T> &out) {
  if (n == 0) return at;  // (memcpy must not see the null data of an empty vector)
  const size_t old = out.size();
  out.resize(old + static_cast<size_t>(n));
  std::memcpy(static_cast<void *>(out.data() + old), at, static_cast<size_t>(n) * sizeof(T));
  return at + static_cast<size_t>(n) * sizeof(T);
}
// One engine's traffic from one source; returns where the next begins.
const char *unpack_round(const char *at, const char *end, int64_t engines, int64_t &engine, RoundTraffic &t) {
  int64_t head[5];
  PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(sizeof head), "a replay round's blob is cut short");
  std::memcpy(head, at, sizeof head);
  at += sizeof head;
  engine = head[0];
  PERFSIFT_CHECK(engine >= 0 && engine < engines, "a replay round names a replay that does not exist");
  PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(
                                 head[1] * sizeof(rp::Engine::SendPost) + head[2] * sizeof(rp::Engine::RecvPost) +
                                 head[3] * sizeof(rp::Engine::Arrival) + head[4] * sizeof(rp::Engine::Pull)),
                 "a replay round's blob is cut short");
  at = take_records(at, head[1], t.sends);
  at = take_records(at, head[2], t.recvs);
  at = take_records(at, head[3], t.arrivals);
  return take_records(at, head[4], t.pulls);
}

// The other ends' exit_max for messages whose partner another process owns: each side
// tells the partner's owner its own exit_max at the event posting its side.
void exchange_partner_exit_max(const Context &ctx, const ReplayModel &model, rp::Snapshot &snap) {
  struct Record {
    int32_t rank, to_send;  // the partner rank; 1: set its send's, 0: its receive's
    int64_t index, exit_max;
  };
  std::vector<std::vector<Record>> out(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    auto exit_max_at = [&](int32_t e) {
      return e == rp::Snapshot::kNever ? INT64_MAX : snap.exit_max_at(s, static_cast<size_t>(e));
    };
    for (size_t k = 0; k < p.recvs.size(); ++k)
      if (const auto &m = p.recvs[k]; m.src >= 0 && ctx.owner_of(m.src) != ctx.me())
        out[static_cast<size_t>(ctx.owner_of(m.src))].push_back(
            {m.src, 1, m.send_index, exit_max_at(snap.recv_event[s][k])});
    for (size_t k = 0; k < p.sends.size(); ++k)
      if (const auto &m = p.sends[k]; m.dst >= 0 && ctx.owner_of(m.dst) != ctx.me())
        out[static_cast<size_t>(ctx.owner_of(m.dst))].push_back(
            {m.dst, 0, m.recv_index, exit_max_at(snap.send_event[s][k])});
  }
  const auto in = ctx.alltoallv(out);
  std::vector<int32_t> slot(static_cast<size_t>(ctx.nranks()), -1);
  for (size_t s = 0; s < model.programs.size(); ++s)
    slot[static_cast<size_t>(model.programs[s].rank)] = static_cast<int32_t>(s);
  for (const Record &r : in) {
    const int32_t s = slot[static_cast<size_t>(r.rank)];
    PERFSIFT_CHECK(s >= 0, "a message's partner is not owned by the process it was sent to");
    auto &v = r.to_send ? snap.send_partner_exit_max[static_cast<size_t>(s)]
                        : snap.recv_partner_exit_max[static_cast<size_t>(s)];
    v[static_cast<size_t>(r.index)] = r.exit_max;
  }
}
}  // namespace

namespace {
// Collective: advances `engines` (each a scenario over the owned ranks) in shared exchange
// rounds, one all-to-all and one reduction per round for all of them, until each has
// finished, aborted or (resumed ones) is back on its snapshot. Returns which converged.
std::vector<uint8_t> run_rounds(const Context &ctx, const ReplayModel &model, const std::vector<rp::Engine *> &engines,
                                const std::vector<uint8_t> &converge) {
  const int np = ctx.nprocs();
  const size_t n = engines.size();
  std::vector<uint8_t> done(n, 0), converged(n, 0), moved(n, 0);
  size_t active = n;
  while (active > 0) {
    // Engines are independent: threads take them in turn (results do not depend on it).
#pragma omp parallel for schedule(dynamic, 1) if (active > 1)
    for (size_t e = 0; e < n; ++e) moved[e] = !done[e] && engines[e]->advance();
    if (np > 1) {
      // Route what crossed owners; arrivals go to every other owner of the communicator.
      std::vector<std::vector<char>> blobs(static_cast<size_t>(np));
      for (size_t e = 0; e < n; ++e) {
        if (done[e]) continue;
        const auto box = engines[e]->take_outbox();
        std::vector<RoundTraffic> to(static_cast<size_t>(np));
        route_outbox(ctx, model, box, to);
        for (const auto &p : box.pulls) to[static_cast<size_t>(ctx.owner_of(p.rank))].pulls.push_back(p);
        for (size_t k = 0; k < blobs.size(); ++k)
          if (static_cast<int>(k) != ctx.me()) pack_round(blobs[k], static_cast<int64_t>(e), to[k]);
      }
      // One exchange per round for every engine and kind, applied in the order sent.
      const std::vector<char> in = ctx.alltoallv(blobs);
      for (const char *at = in.data(), *end = in.data() + in.size(); at < end;) {
        RoundTraffic got;
        int64_t e = 0;
        at = unpack_round(at, end, static_cast<int64_t>(n), e, got);
        rp::Engine &engine = *engines[static_cast<size_t>(e)];
        for (const auto &p : got.sends) engine.apply(p);
        for (const auto &p : got.recvs) engine.apply(p);
        for (const auto &a : got.arrivals) engine.apply(a);
        for (const auto &p : got.pulls) engine.apply(p);
        moved[static_cast<size_t>(e)] |= !got.empty();
      }
    }
    // Every engine's report combined over processes (Engine::combine as two reductions);
    // all decide alike.
    using Report = rp::Engine::RoundReport;
    std::vector<int64_t> sums(Report::kSums * n, 0), maxima(Report::kMaxima * n, INT64_MIN);
    std::vector<Report> report(n);
    for (size_t e = 0; e < n; ++e)
      if (!done[e]) engines[e]->round_report(moved[e]).encode(&sums[Report::kSums * e], &maxima[Report::kMaxima * e]);
    MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_INT64_T, MPI_SUM, ctx.comm());
    MPI_Allreduce(MPI_IN_PLACE, maxima.data(), static_cast<int>(maxima.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
    for (size_t e = 0; e < n; ++e)
      if (!done[e]) report[e] = Report::decode(&sums[Report::kSums * e], &maxima[Report::kMaxima * e]);
    std::vector<int64_t> released(n, 0);
    std::vector<uint8_t> stuck_here(n, 0);
    bool stuck = false;
    for (size_t e = 0; e < n; ++e) {
      if (done[e]) continue;
      switch (engines[e]->round_end(report[e])) {
        case rp::Engine::RoundEnd::Continue:
          continue;
        case rp::Engine::RoundEnd::Stuck:
          // Stuck everywhere at once: release every blocked rank together (a crashed rank or
          // a message the trace lacks), so the answer does not depend on the split.
          released[e] = engines[e]->release_stuck();
          stuck_here[e] = 1;
          stuck |= converge[e] != 0;
          continue;
        case rp::Engine::RoundEnd::Abort:
          engines[e]->abort();
          break;
        case rp::Engine::RoundEnd::Converged:
          converged[e] = 1;
          break;
        case rp::Engine::RoundEnd::Shifted:
          engines[e]->stop_shifted(report[e].shift_low);
          break;
        case rp::Engine::RoundEnd::Finished:
          break;
      }
      done[e] = 1;
      --active;
    }
    if (stuck) {
      MPI_Allreduce(MPI_IN_PLACE, released.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, ctx.comm());
      for (size_t e = 0; e < n; ++e)
        if (stuck_here[e] && converge[e] && released[e] == 0) {
          converged[e] = 1;  // every rank rests where the snapshot holds
          done[e] = 1;
          --active;
        }
    }
  }
  return converged;
}

constexpr int64_t kReplayAgain = std::numeric_limits<int64_t>::min();

// Collective: the run's end for an engine `run_rounds` finished (INT64_MAX: aborted;
// kReplayAgain: an assumed arrival came otherwise).
std::vector<int64_t> makespans(const Context &ctx, const std::vector<rp::Engine *> &engines,
                               const std::vector<uint8_t> &converged) {
  const size_t n = engines.size();
  std::vector<int64_t> end(3 * n, 0);
  for (size_t e = 0; e < n; ++e) {
    if (engines[e]->shifted()) {
      end[e] = engines[e]->shifted_makespan();  // the same on every process
    } else if (converged[e] || engines[e]->converged()) {
      end[e] = engines[e]->converged_makespan();
    } else {
      for (int64_t t : engines[e]->end_times()) end[e] = std::max(end[e], t);
    }
    end[n + e] = engines[e]->aborted() ? 1 : 0;
    end[2 * n + e] = engines[e]->conflict() ? 1 : 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, end.data(), static_cast<int>(end.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  for (size_t e = 0; e < n; ++e) {
    if (end[n + e]) end[e] = std::numeric_limits<int64_t>::max();
    if (end[2 * n + e]) end[e] = kReplayAgain;
  }
  end.resize(n);
  return end;
}
}  // namespace

std::vector<int64_t> replay_distributed(const Context &ctx, const ReplayModel &model,
                                        const std::vector<rp::Scenario> &scenarios,
                                        const std::vector<rp::EventSink> &sinks, std::vector<int64_t> *released) {
  PERFSIFT_CHECK(sinks.empty() || sinks.size() == scenarios.size(), "one event sink per scenario, or none");
  std::vector<std::unique_ptr<rp::Engine>> owned;
  std::vector<rp::Engine *> engines;
  std::vector<uint8_t> converge;
  for (size_t e = 0; e < scenarios.size(); ++e) {
    const rp::Scenario &sc = scenarios[e];
    owned.push_back(std::make_unique<rp::Engine>(model.programs, sc, ctx.nranks(), false, ctx.nprocs() > 1));
    if (!sinks.empty() && sinks[e]) owned.back()->set_event_sink(sinks[e], rp::SinkEvents::Waited);
    engines.push_back(owned.back().get());
    converge.push_back(sc.resume && sc.stop_when_converged);
  }
  auto out = makespans(ctx, engines, run_rounds(ctx, model, engines, converge));
  if (released) {
    released->assign(engines.size(), 0);
    for (size_t e = 0; e < engines.size(); ++e) (*released)[e] = engines[e]->released();
    MPI_Allreduce(MPI_IN_PLACE, released->data(), static_cast<int>(released->size()), MPI_INT64_T, MPI_SUM, ctx.comm());
  }
  // A rested member's assumed arrival came otherwise: those again, every member replayed.
  std::vector<rp::Scenario> again;
  std::vector<rp::EventSink> again_sinks;
  for (size_t e = 0; e < out.size(); ++e)
    if (out[e] == kReplayAgain) {
      again.push_back(scenarios[e]);
      again.back().assume_resting_arrivals = false;
      if (!sinks.empty()) again_sinks.push_back(sinks[e]);
    }
  if (!again.empty()) {
    std::vector<int64_t> again_released;
    const auto redone = replay_distributed(ctx, model, again, again_sinks, released ? &again_released : nullptr);
    for (size_t e = 0, k = 0; e < out.size(); ++e)
      if (out[e] == kReplayAgain) {
        if (released) (*released)[e] = again_released[k];
        out[e] = redone[k++];
      }
  }
  return out;
}

namespace {
// A snapshot of the model's replay borrows the model's posting events (4 B per message end
// and collective call not held twice); a whole-run copy (gather_whole) keeps only the
// sends', and its snapshots hold their own.
std::array<rp::PostingEvents::Borrowed, 3> posting_events_of(const ReplayModel &model) {
  std::array<rp::PostingEvents::Borrowed, 3> lent;  // sends, receives, collective calls
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    const auto &d = model.side[s];
    if (d.send_event.size() != p.sends.size() || d.recv_event.size() != p.recvs.size() ||
        d.coll_event.size() != p.colls.size())
      return {};
    lent[0].push_back(&d.send_event);
    lent[1].push_back(&d.recv_event);
    lent[2].push_back(&d.coll_event);
  }
  return lent;
}

void lend_posting_events(const ReplayModel &model, rp::Engine &engine) {
  auto lent = posting_events_of(model);
  if (!lent[0].empty()) engine.lend_posting_events(std::move(lent[0]), std::move(lent[1]), std::move(lent[2]));
}
}  // namespace

ReplayOutcome replay_distributed(const Context &ctx, const ReplayModel &model, const rp::Scenario &sc,
                                 bool record_timings, const rp::EventSink &sink, rp::Snapshot *snapshot) {
  rp::Engine engine(model.programs, sc, ctx.nranks(), record_timings, ctx.nprocs() > 1);
  if (sink) engine.set_event_sink(sink, rp::SinkEvents::Waited);
  if (snapshot) lend_posting_events(model, engine);
  const std::vector<rp::Engine *> one = {&engine};
  const auto converged = run_rounds(ctx, model, one, {static_cast<uint8_t>(sc.resume && sc.stop_when_converged)});
  ReplayOutcome out;
  out.makespan_ns = makespans(ctx, one, converged)[0];
  if (out.makespan_ns == kReplayAgain) {
    rp::Scenario careful = sc;
    careful.assume_resting_arrivals = false;
    return replay_distributed(ctx, model, careful, record_timings, sink, snapshot);
  }
  int64_t released = engine.released();
  MPI_Allreduce(&released, &out.released, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  if (snapshot) {
    // The timings go to the caller, who keeps them and lends them back to the snapshot
    // (12.5 B per event held once).
    *snapshot = engine.take_snapshot();
    exchange_partner_exit_max(ctx, model, *snapshot);
    MPI_Allreduce(MPI_IN_PLACE, &snapshot->run_end, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
    out.timings = std::exchange(snapshot->own_timings, {});
    return out;
  }
  if (record_timings) out.timings = engine.take_timings();
  return out;
}

size_t questions_sharing_a_pass(const Context &ctx, const ReplayModel &model,
                                const std::vector<rp::Scenario> &scenarios) {
  // Every process must decide alike: a scenario's changed sizes may touch another's ranks only.
  std::vector<const rp::Scenario *> pass;
  for (const auto &sc : scenarios) pass.push_back(&sc);
  auto fit = static_cast<int64_t>(rp::sharing_a_pass(model.programs, pass));
  MPI_Allreduce(MPI_IN_PLACE, &fit, 1, MPI_INT64_T, MPI_MIN, ctx.comm());
  return static_cast<size_t>(fit);
}

namespace {
// replay_one_pass of W scenarios (as many slots as scenarios: none replays for nothing).
template <int W>
std::optional<std::vector<int64_t>> replay_one_pass_of(const Context &ctx, const ReplayModel &model,
                                                       const std::vector<rp::Scenario> &scenarios,
                                                       const std::vector<rp::EventSink> &sinks,
                                                       std::vector<rp::TimingColumn> *first_timings) {
  using Pass = rp::PassEngine<W>;
  std::vector<const rp::Scenario *> pass;
  for (const auto &sc : scenarios) pass.push_back(&sc);
  const int np = ctx.nprocs();
  Pass engine(model.programs, pass, ctx.nranks(), np > 1);
  if (first_timings) engine.record_first_timings();
  for (size_t l = 0; l < sinks.size(); ++l)
    if (sinks[l]) engine.set_event_sink(l, sinks[l], rp::SinkEvents::Waited);
  // Rounds as run_rounds: advance, route what crossed owners (arrivals to the other owners
  // of the communicator), one all-to-all, then one reduction of (moved, unfinished).
  while (true) {
    int64_t state[2] = {engine.advance() ? 1 : 0, 0};
    if (np > 1) {
      const auto box = engine.take_outbox();
      std::vector<std::vector<char>> blobs(static_cast<size_t>(np));
      std::vector<typename Pass::Outbox> to(static_cast<size_t>(np));
      route_outbox(ctx, model, box, to);
      for (size_t k = 0; k < blobs.size(); ++k) {
        const int64_t head[3] = {static_cast<int64_t>(to[k].sends.size()), static_cast<int64_t>(to[k].recvs.size()),
                                 static_cast<int64_t>(to[k].arrivals.size())};
        if (static_cast<int>(k) == ctx.me() || (head[0] | head[1] | head[2]) == 0) continue;
        blobs[k].insert(blobs[k].end(), reinterpret_cast<const char *>(head), reinterpret_cast<const char *>(head + 3));
        put_records(blobs[k], to[k].sends);
        put_records(blobs[k], to[k].recvs);
        put_records(blobs[k], to[k].arrivals);
      }
      const std::vector<char> in = ctx.alltoallv(blobs);
      for (const char *at = in.data(), *end = in.data() + in.size(); at < end;) {
        int64_t head[3];
        PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(sizeof head),
                       "a one-pass replay round's blob is cut short");
        std::memcpy(head, at, sizeof head);
        at += sizeof head;
        PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(head[0] * sizeof(typename Pass::SendPost) +
                                                               head[1] * sizeof(typename Pass::RecvPost) +
                                                               head[2] * sizeof(typename Pass::Arrival)),
                       "a one-pass replay round's blob is cut short");
        typename Pass::Outbox got;
        at = take_records(at, head[0], got.sends);
        at = take_records(at, head[1], got.recvs);
        at = take_records(at, head[2], got.arrivals);
        for (const auto &p : got.sends) engine.apply(p);
        for (const auto &p : got.recvs) engine.apply(p);
        for (const auto &a : got.arrivals) engine.apply(a);
        state[0] = 1;
      }
    }
    state[1] = engine.unfinished();
    MPI_Allreduce(MPI_IN_PLACE, state, 2, MPI_INT64_T, MPI_SUM, ctx.comm());
    if (state[1] == 0) break;
    if (state[0] == 0) return std::nullopt;  // blocked for good somewhere: one by one
  }
  std::vector<int64_t> end = engine.latest_ends(scenarios.size());
  MPI_Allreduce(MPI_IN_PLACE, end.data(), static_cast<int>(end.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  if (first_timings) *first_timings = engine.take_first_timings();
  return end;
}
}  // namespace

std::optional<std::vector<int64_t>> replay_one_pass(const Context &ctx, const ReplayModel &model,
                                                    const std::vector<rp::Scenario> &scenarios,
                                                    const std::vector<rp::EventSink> &sinks,
                                                    std::vector<rp::TimingColumn> *first_timings) {
  PERFSIFT_CHECK(scenarios.size() >= 2, "one pass replays 2 scenarios or more");
  return rp::with_pass_width(
      scenarios.size(), [&]<int W>() { return replay_one_pass_of<W>(ctx, model, scenarios, sinks, first_timings); });
}

std::optional<rp::Snapshot> snapshot_of_replay(const Context &ctx, const ReplayModel &model, const rp::Scenario &sc,
                                               std::vector<rp::TimingColumn> timings) {
  auto starts = rp::replayed_send_starts(model.programs, timings, sc);
  // What crossed owners during the replay, routed as its rounds routed it.
  rp::Engine::Outbox in;
  if (const int np = ctx.nprocs(); np > 1) {
    std::vector<rp::Engine::Outbox> to(static_cast<size_t>(np));
    route_outbox(ctx, model, rp::delivered_elsewhere(model.programs, timings, starts, ctx.nranks(), sc), to);
    std::vector<std::vector<rp::Engine::SendPost>> sends(static_cast<size_t>(np));
    std::vector<std::vector<rp::Engine::RecvPost>> recvs(static_cast<size_t>(np));
    std::vector<std::vector<rp::Engine::Arrival>> arrivals(static_cast<size_t>(np));
    for (size_t k = 0; k < to.size(); ++k) {
      sends[k] = std::move(to[k].sends);
      recvs[k] = std::move(to[k].recvs);
      arrivals[k] = std::move(to[k].arrivals);
    }
    in.sends = ctx.alltoallv(sends);
    in.recvs = ctx.alltoallv(recvs);
    in.arrivals = ctx.alltoallv(arrivals);
  }
  auto snap = rp::snapshot_from_timings(model.programs, std::move(timings), std::move(starts), ctx.nranks(), in,
                                        posting_events_of(model));
  int rebuilt = snap.has_value() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &rebuilt, 1, MPI_INT, MPI_MIN, ctx.comm());
  if (!rebuilt) return std::nullopt;
  exchange_partner_exit_max(ctx, model, *snap);
  MPI_Allreduce(MPI_IN_PLACE, &snap->run_end, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  return snap;
}

std::vector<std::vector<int64_t>> clean_cuts(const Context &ctx, const ReplayModel &model,
                                             const rp::Snapshot &snapshot) {
  rp::CutPlan plan(model.programs, snapshot, ctx.nranks());
  // Every rank held somewhere, each with the same number of candidates.
  std::array<int64_t, 3> agree = {plan.candidates() == rp::CutPlan::kNone ? INT64_MIN : plan.candidates(),
                                  plan.candidates() == rp::CutPlan::kNone ? INT64_MIN : -plan.candidates(),
                                  static_cast<int64_t>(model.programs.size())};
  MPI_Allreduce(MPI_IN_PLACE, agree.data(), 2, MPI_INT64_T, MPI_MAX, ctx.comm());
  MPI_Allreduce(MPI_IN_PLACE, &agree[2], 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  const int64_t count = agree[0];
  if (count <= 0 || -agree[1] != count || agree[2] != ctx.nranks())
    return std::vector<std::vector<int64_t>>(model.programs.size());
  // The k-th candidate the same instance everywhere.
  std::vector<int64_t> low(static_cast<size_t>(count), INT64_MAX), high(static_cast<size_t>(count), INT64_MIN);
  if (plan.candidates() == count) low = high = plan.instances();
  MPI_Allreduce(MPI_IN_PLACE, low.data(), static_cast<int>(count), MPI_INT64_T, MPI_MIN, ctx.comm());
  MPI_Allreduce(MPI_IN_PLACE, high.data(), static_cast<int>(count), MPI_INT64_T, MPI_MAX, ctx.comm());
  // Messages crossing owners meet at the receiver's owner; instances at owner instance % np.
  std::vector<std::vector<rp::CutPlan::End>> ends(static_cast<size_t>(ctx.nprocs()));
  for (const auto &e : plan.remote_ends()) ends[static_cast<size_t>(ctx.owner_of(e.rank))].push_back(e);
  for (const auto &e : ctx.alltoallv(ends)) plan.add_remote(e);
  std::vector<std::vector<rp::CutPlan::Span>> spans(static_cast<size_t>(ctx.nprocs()));
  for (const auto &s : plan.spans())
    spans[static_cast<size_t>(static_cast<uint64_t>(s.instance) % static_cast<uint64_t>(ctx.nprocs()))].push_back(s);
  plan.merge_spans(ctx.alltoallv(spans));
  std::vector<uint8_t> crossed = plan.candidates() == count ? plan.crossed() : std::vector<uint8_t>(low.size(), 0);
  for (size_t k = 0; k < crossed.size(); ++k) crossed[k] |= low[k] != high[k];
  MPI_Allreduce(MPI_IN_PLACE, crossed.data(), static_cast<int>(crossed.size()), MPI_UINT8_T, MPI_MAX, ctx.comm());
  return plan.clean(crossed);
}

namespace {
// Every LogGPS parameter once: its key in a parameter file, its attribute in /whatif, its
// help and range. Defaults come from kernels::LogGPS.
struct LogGPSField {
  const char *key, *attribute, *help;
  double kernels::LogGPS::*real;  // one of the two is set
  int64_t kernels::LogGPS::*integer;
  double min, max;
};
const std::vector<LogGPSField> &loggps_fields() {
  using P = kernels::LogGPS;
  static const std::vector<LogGPSField> fields = {
      {"L_ns", "L_ns", "latency, ns", &P::L, nullptr, 0, 1e12},
      {"os0_ns", "os_ns", "send overhead per message, ns", &P::os0, nullptr, 0, 1e12},
      {"os1_ns_per_byte", "os_ns_per_byte", "send overhead per byte, ns", &P::os1, nullptr, 0, 1e6},
      {"or0_ns", "or_ns", "receive overhead per message, ns", &P::or0, nullptr, 0, 1e12},
      {"or1_ns_per_byte", "or_ns_per_byte", "receive overhead per byte, ns", &P::or1, nullptr, 0, 1e6},
      {"g_ns", "g_ns", "gap between injections, ns", &P::g, nullptr, 0, 1e12},
      {"G_ns_per_byte", "G_ns_per_byte", "gap per byte, ns", &P::G, nullptr, 0, 1e6},
      {"S_bytes", "S_bytes", "eager to rendezvous threshold, bytes", nullptr, &P::S, 0, 9e18},
      {"s_bytes", "s_bytes", "packet size threshold, bytes", nullptr, &P::s, 1, 9e18},
  };
  return fields;
}

const std::vector<config::KeyDef> &loggps_keys() {
  static const std::vector<config::KeyDef> keys = [] {
    const kernels::LogGPS defaults;
    std::vector<config::KeyDef> k;
    for (const auto &f : loggps_fields())
      k.push_back({std::string("loggps.") + f.key, f.real ? config::Type::Float : config::Type::Int,
                   f.real ? config::Value(defaults.*f.real) : config::Value(defaults.*f.integer), "", f.help, f.min,
                   f.max});
    return k;
  }();
  return keys;
}

// TOML floats need a decimal point or exponent.
std::string toml_float(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  std::string s = b;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

kernels::LogGPS read_loggps(const std::string &path) {
  const auto v =
      config::parse_file(loggps_keys(), path, [](const std::string &) { return std::optional<std::string>{}; });
  kernels::LogGPS p;
  for (const auto &f : loggps_fields()) {
    const std::string key = std::string("loggps.") + f.key;
    if (f.real)
      p.*f.real = v.get_float(key);
    else
      p.*f.integer = v.get_int(key);
  }
  p.source = path;
  return p;
}

void write_loggps(const std::string &path, const kernels::LogGPS &p, const std::string &comment) {
  std::ostringstream os;
  os << "# LogGPS parameters for perfsift's replay (perfsift calibrate).\n# " << comment << "\n[loggps]\n";
  for (const auto &f : loggps_fields()) {
    os << f.key << " = ";
    if (f.real)
      os << toml_float(p.*f.real) << "\n";
    else
      os << p.*f.integer << "\n";
  }
  io::write_file_atomically(path, os.str());
}

std::vector<std::pair<std::string, io::AttrValue>> loggps_attributes(const kernels::LogGPS &p) {
  std::vector<std::pair<std::string, io::AttrValue>> out = {{"loggps_source", p.source}};
  for (const auto &f : loggps_fields())
    out.emplace_back(std::string("loggps_") + f.attribute,
                     f.real ? io::AttrValue(p.*f.real) : io::AttrValue(p.*f.integer));
  return out;
}

}  // namespace perfsift::pipeline
