// The rank's live requests by handle, numbered in the order traced calls start them, and
// the communicators of matched messages (MPI_Mprobe/Improbe) until MPI_(I)mrecv.
// Shared by the threads: under MPI_THREAD_MULTIPLE the recorders hold SharedTables.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <unordered_map>

#include "recorder.h"
#include "request_table.h"

namespace perfsift::collect {

class LiveRequests {
 public:
  // A request a traced call started, with its id and the calling thread set. A
  // persistent request's next activation replaces its state; others queue.
  RequestState add(MPI_Request handle, const RequestState &state);
  RequestState *find(MPI_Request handle) { return m_table.front(handle); }
  void drop(MPI_Request handle) { m_table.pop(handle); }
  // Completion: the handle's live request, the calling thread's own first (several live
  // requests may share a handle value: Open MPI's requests completed at once), and its
  // removal (persistent ones stay).
  RequestState *find_completing(MPI_Request handle);
  void drop_completing(MPI_Request handle);
  // Before a completion call: the handle's live request, taken out of the table (a
  // persistent one stays), so that another thread cannot take it for a request MPI
  // starts under the same handle value once this one is freed. False when none.
  bool claim(MPI_Request handle, RequestState &out);
  // A claimed request the call did not complete goes back, first in line.
  void give_back(MPI_Request handle, const RequestState &state) { m_table.push_front(handle, state); }

  void remember_message(MPI_Message m, int32_t comm) { m_message_comm[m] = comm; }
  int32_t take_message(MPI_Message m) {
    auto it = m_message_comm.find(m);
    if (it == m_message_comm.end()) return -1;
    int32_t c = it->second;
    m_message_comm.erase(it);
    return c;
  }

 private:
  RequestTable<MPI_Request, RequestState> m_table;
  std::unordered_map<MPI_Message, int32_t> m_message_comm;
  int64_t m_next_id = 0;
};

}  // namespace perfsift::collect
