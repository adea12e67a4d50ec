// Assembling replay programs (program.h) event by event, in place of filling their columns
// by hand: a rank's messages, collective calls and request slots are added first (each
// returns its index on the rank), then an event opens, takes its items (which name those
// indices) and closes; an event that took no item is local and keeps its measured
// duration. Messages start unmatched and are matched at each end once the other end is
// known (a run split over processes matches them as the owners exchange keys); a run
// built in one place matches both ends at once (ProgramBuilder::message).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

#include "kernels/loggps.h"
#include "kernels/replay/program.h"

namespace perfsift::kernels::replay {

// Appends to one rank's program, which it does not own: the program must outlive it and
// stay where it is. Whoever holds the programs (a vector sized once) keeps a builder per
// rank beside them.
class RankProgramBuilder {
 public:
  RankProgramBuilder(RankProgram &program, int32_t rank);
  void reserve_events(size_t n) { m_p->events.reserve(n); }

  // What items name. A send of `bytes` and a receive keeping its measured duration until
  // matched; a collective call (collective_call builds one); a request slot, activated by
  // a post_* item and completed by complete().
  int32_t add_send(int64_t bytes);
  int32_t add_recv(int64_t measured_duration);
  int32_t add_collective(const Collective &c);
  int32_t add_request_slot() { return m_p->request_slots++; }
  // A message's end learns the other: the receiver's world rank and receive index, or
  // the sender's, its send index and the bytes sent (which the receive then keeps).
  void match_send(int32_t send, int32_t dst, int32_t recv_index);
  void match_recv(int32_t recv, int32_t src, int32_t send_index, int64_t bytes);
  // A call added before, changed once more is known (Finalize's measured remainder).
  Collective &collective(int32_t index) { return m_p->colls[static_cast<size_t>(index)]; }

  // One event: `gap` of computation since its lane's previous exit; `lane` its thread
  // (0: the thread that initialised MPI). Items between begin_event and end_event.
  void begin_event(int64_t gap, uint8_t lane = 0);
  void send(int32_t send) { item({ItemType::Send, send}); }
  void recv(int32_t recv) { item({ItemType::Recv, recv}); }
  void collective_call(int32_t coll) { item({ItemType::Collective, coll}); }
  void post_send(int32_t send, int32_t slot) { item({ItemType::PostSend, send, slot}); }
  void post_recv(int32_t recv, int32_t slot) { item({ItemType::PostRecv, recv, slot}); }
  void post_collective(int32_t coll, int32_t slot) { item({ItemType::PostCollective, coll, slot}); }
  void complete(int32_t slot) { item({ItemType::Complete, slot}); }
  void item(const Item &it);
  size_t items_in_event() const;
  // Closes the event; returns its index. Without items it is local: `measured_duration`.
  int64_t end_event(int64_t measured_duration = 0);
  // An event and its items in one call.
  int64_t event(int64_t gap, std::initializer_list<Item> items, int64_t measured_duration = 0, uint8_t lane = 0);
  int64_t event(int64_t gap, const std::vector<Item> &items, int64_t measured_duration = 0, uint8_t lane = 0);
  bool event_open() const { return m_open; }
  // Whether some event so far ran on a lane other than 0.
  bool laned_so_far() const { return !m_p->lane.empty(); }

  // A laned rank's steps in measured order (RankProgram::steps): posting or completing an
  // event; two per event, each lane's in its own order, added after the rank's last event.
  void add_step(int64_t event, bool completion);

  // Done: the columns at their exact sizes. Throws std::logic_error when an event is
  // still open or a laned rank's steps are not two per event. Matching its messages
  // (match_send, match_recv) and collective() may follow: they change no size.
  void finish();
  const RankProgram &program() const { return *m_p; }

 private:
  RankProgram *m_p;
  bool m_open = false;
  Event m_event;
};

// A collective call of `members` ranks: `instance` (instance_id of its communicator and
// sequence number), its flow, the root's world rank (-1: none), the bytes each member
// contributes; its LogGPS rounds per collective_rounds (`linear`: a linear algorithm).
Collective collective_call(int64_t instance, int32_t members, CollectiveFlow flow, int32_t root, int64_t bytes,
                           bool linear = false);

// Every rank of a run built in one place (ranks 0 .. nranks - 1), its messages matched at
// both ends as they are added.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(int32_t nranks);
  ProgramBuilder(const ProgramBuilder &) = delete;
  ProgramBuilder &operator=(const ProgramBuilder &) = delete;
  ProgramBuilder(ProgramBuilder &&) = default;  // the builders' programs move with their vector
  RankProgramBuilder &rank(int32_t r) { return m_builders[static_cast<size_t>(r)]; }
  // A message from src to dst of `bytes`, matched: its send index on src, receive index on dst.
  std::pair<int32_t, int32_t> message(int32_t src, int32_t dst, int64_t bytes);
  // The programs as built so far (every event closed).
  const std::vector<RankProgram> &programs() const { return m_programs; }
  // Every rank finished (RankProgramBuilder::finish), the programs moved out.
  std::vector<RankProgram> finish();

 private:
  std::vector<RankProgram> m_programs;
  std::vector<RankProgramBuilder> m_builders;
};

}  // namespace perfsift::kernels::replay
