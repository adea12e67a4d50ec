// This rank's communicators, indexed in order of first sight: each one's members (and
// remote group) as world ranks, and a key that every member derives alike, by which
// the store joins one communicator's records across ranks.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::collect {

class CommTable {
 public:
  void add(MPI_Comm comm);
  // Index of `comm` (added on first sight); *inter tells whether it is an
  // intercommunicator. -1 for MPI_COMM_NULL.
  int32_t index(MPI_Comm comm, bool *inter = nullptr);
  // A freed handle: a later communicator may get its value.
  void forget(MPI_Comm comm);
  // `peer` of communicator `index` (of its remote group when `remote`) as a world rank.
  int32_t world_rank(int32_t index, int peer, bool remote) const;
  const std::vector<io::CommRecord> &records() const { return m_comms; }

 private:
  std::unordered_map<MPI_Comm, int32_t> m_index_of_handle;
  std::vector<io::CommRecord> m_comms;
  std::vector<uint8_t> m_inter;
  MPI_Comm m_last_comm = MPI_COMM_NULL;  // one-entry cache: most calls reuse a communicator
  int32_t m_last_index = -1;
  std::unordered_map<uint64_t, int32_t> m_hash_seen;
};

}  // namespace perfsift::collect
