// The replay model's own assembler (not for stages): reads the owned ranks' events, a
// block of ranks at a time, into kernels::replay programs (through the kernel's
// RankProgramBuilder) and their side data (pipeline/replay/replay_program.cpp), and
// carries each message's key to the match (pipeline/replay/message_matching.cpp).
// build_replay_model drives it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/message_match.h"
#include "kernels/replay/program_builder.h"
#include "pipeline/engine/op_traits.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline::program_building {

// A send's key, routed to its receiver's owner.
struct SendKey {
  kernels::MessageKey key;
  int32_t send_index;
  int32_t send_event;  // in the sender: the receiver keeps it (/whatif/messages)
  int64_t bytes;
};
// A matched receive, sent back to its sender's owner.
struct MatchReply {
  int32_t src, send_index, dst, recv_index;
};

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

class ReplayProgramAssembler {
 public:
  // Sets the model's comm_owners (every communicator's owning processes).
  ReplayProgramAssembler(const Context &ctx, ReplayModel &model);
  ReplayProgramAssembler(const ReplayProgramAssembler &) = delete;
  ReplayProgramAssembler &operator=(const ReplayProgramAssembler &) = delete;

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

  // After the block of owned ranks [first, last) is built: the lanes of its laned ranks
  // are ordered (their post and completion steps), its vectors are sized exactly, and the
  // sends between owned ranks whose receiver is built meet now (they need not
  // wait for the other processes' keys: at K = 1, all; their keys go).
  void finish_block(int32_t first, int32_t last);
  // A send's key meets its receive (an owned rank's): the receive learns its send, the send
  // its receive (directly when owned here; by a reply to `replies` of its owner).
  void meet(const SendKey &k, std::vector<std::vector<MatchReply>> &replies);
  void answer(const MatchReply &r);

  std::vector<std::vector<SendKey>> route;                     // per analysis process: sends to its ranks
  kernels::ReceiveIndex<std::pair<int32_t, int32_t>> waiting;  // key -> (slot, recv index)
  int64_t unmatched_sends = 0;                                 // owned receivers' keys no receive met
  std::vector<int64_t> lanes_of_rank() const {
    std::vector<int64_t> out;
    for (const auto &b : m_building) out.push_back(static_cast<int64_t>(b.lane_thread.size()));
    return out;
  }
  // Collective, after the last block. Finalize: everything after the last rank entered is
  // the measured remainder.
  void set_finalize_remainders();
  int64_t local_end = 0;
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
  void order_lanes(size_t s);

  const Context &m_ctx;
  ReplayModel &m_model;
  const RecordOffsets m_off;
  OwnedRecords m_rec;  // the block being built
  const std::vector<OpTraits> m_traits;
  const std::vector<int32_t> m_comm_members;  // per communicator: members with data
  int32_t m_alive = 0;                        // ranks with data
  std::vector<Building> m_building;
  // Per owned rank: appends to m_model.programs (sized once, in start()).
  std::vector<kernels::replay::RankProgramBuilder> m_programs;
  std::vector<int64_t> m_finalize_exit;  // per owned rank
  std::vector<int32_t> m_finalize_coll;  // per owned rank: its Finalize collective, -1 none
  int64_t m_local_max_finalize_enter = kernels::replay::kUnknown;
};

// Collective. Match: send keys to the receiver's owner, replies back to the sender's
// owner (messages between this process's own ranks met as their blocks were built: the
// last block's finish_block left none). Returns the sends no receive met, counted by
// their receiver's owner.
int64_t match_messages(const Context &ctx, ReplayProgramAssembler &built);

}  // namespace perfsift::pipeline::program_building
