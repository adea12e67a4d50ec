// A replayed rank's program: its events (MPI calls separated by computation), what each
// does to the network (items), and the messages, collective calls and request slots the
// items name. kernels/replay/program_builder.h assembles them.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/loggps.h"

namespace perfsift::kernels::replay {

inline constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();

// The n-th collective call on a communicator is the same instance on every member
// (MPI orders collectives per communicator). comm = -2 names MPI_Finalize.
inline int64_t instance_id(int32_t comm, int64_t sequence) { return (int64_t{comm + 2} << 40) | sequence; }
inline int32_t instance_comm(int64_t instance) { return static_cast<int32_t>(instance >> 40) - 2; }

// What an event does to the network. A blocking send is a post and a completion in one
// event; MPI_Sendrecv holds a send and a receive; MPI_Waitall completes several requests.
enum class ItemType : uint8_t {
  Send,            // blocking send of sends[index]
  Recv,            // blocking receive of recvs[index]
  PostSend,        // nonblocking send of sends[index] (request slot in Item::slot)
  PostRecv,        // nonblocking receive of recvs[index]
  Collective,      // blocking collective colls[index]
  PostCollective,  // nonblocking collective colls[index]
  Complete,        // completes the request in slot `index`
};
// 8 bytes: the replay keeps one or two per event.
struct Item {
  Item() : type(ItemType::Complete), index(0) {}
  Item(ItemType t, int32_t i, int32_t s = -1) : type(t), index(i), slot(s) {}
  ItemType type : 3;
  int32_t index : 29;  // up to 2^28 messages, collectives or requests per rank
  int32_t slot = -1;   // request slot activated by a Post* item
};
static_assert(sizeof(Item) == 8);

// 16 bytes. A local event (items == 0) keeps its measured duration: owns[first_item].
struct Event {
  int64_t gap = 0;  // measured computation before the event, ns
  int32_t first_item = 0;
  uint16_t items = 0;
  uint16_t flags = 0;
};
static_assert(sizeof(Event) == 16);

struct SendMessage {
  int64_t bytes = 0;
  int32_t dst = -1;         // world rank of the receiver; -1 when unmatched
  int32_t recv_index = -1;  // index into the receiver's recvs
};
// 16 bytes: a matched receive keeps its send's bytes, an unmatched one (src < 0) its
// measured duration, in one field (nothing reads the bytes of a receive no send met).
struct RecvMessage {
  int64_t value = 0;
  int32_t src = -1;  // world rank of the sender; -1 when unmatched
  int32_t send_index = -1;
  static RecvMessage matched(int64_t bytes, int32_t src, int32_t send_index) { return {bytes, src, send_index}; }
  static RecvMessage unmatched(int64_t duration) { return {duration, -1, -1}; }
  int64_t bytes() const { return src >= 0 ? value : 0; }
  int64_t own_unmatched() const { return src < 0 ? value : 0; }
};
static_assert(sizeof(RecvMessage) == 16);
struct Collective {
  int64_t instance = 0;  // instance_id(communicator, sequence number): the same on every member
  int32_t members = 1;   // ranks expected to take part
  int32_t root = -1;     // world rank of the root (rooted flows)
  CollectiveFlow flow = CollectiveFlow::All;
  int64_t rounds = 0, bytes = 0;  // LogGPS cost inputs (kernels/loggps.h collective_cost)
  int64_t remainder = 0;          // Finalize: the measured time after the last member arrived
  // The run's own cost of calls like this one (operation, size, members: the run's
  // collectives as measured), used instead of the rounds on the run's network; -1: none.
  int64_t measured = -1;
};
// A collective's cost after its synchronisation point on network `net`.
inline int64_t collective_call_cost(const LogGPS &net, const Collective &c) {
  if (c.flow == CollectiveFlow::Finalize) return c.remainder;
  if (net.collectives_as_measured && c.measured >= 0) return c.measured;
  return collective_cost(net, c.rounds, c.bytes);
}

struct RankProgram {
  int32_t rank = 0;
  std::vector<Event> events;
  std::vector<Item> items;
  std::vector<SendMessage> sends;
  std::vector<RecvMessage> recvs;
  std::vector<Collective> colls;
  std::vector<int64_t> owns;  // durations of local events
  int32_t request_slots = 0;
  // A rank calling MPI from several threads: each event's lane (its thread; 0 the one that
  // initialised MPI), and the lanes' steps in measured order, two per event: event << 1 to
  // post it, event << 1 | 1 to complete it. Each lane runs its own clock (an event enters
  // at its lane's previous exit plus its gap; a lane's first event at lane 0's latest
  // entry plus its gap); posting and completing in measured order keeps every dependency between the
  // lanes (a message, a request completed by another thread) ahead of its use. Both empty
  // for a single stream.
  std::vector<uint8_t> lane;
  std::vector<int32_t> steps;
  bool laned() const { return !steps.empty(); }
  // A local event keeping `duration`.
  void add_local(int64_t gap, int64_t duration) {
    events.push_back({gap, static_cast<int32_t>(owns.size()), 0, 0});
    owns.push_back(duration);
  }
};

}  // namespace perfsift::kernels::replay
