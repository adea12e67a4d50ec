// Which ranks write the trace store, and the other ranks' traces handed to them.
//
// A parallel HDF5 write costs every process of its communicator a file open and close
// and a few collective rounds per compressed table, whatever the bytes: on many small
// ranks that, not the data, is the time (64 ranks of an empty program: 0.29 s). So the
// consecutive ranks of one node whose records together fit in `aggregate_bytes` hand
// them to the first of them, and only these writers open the store. Big traces keep
// more writers (each group stays under the bound), so compression still spreads over
// many processes and no writer holds more than the bound of other ranks' records.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::collect {

struct StoreWriters {
  bool writer = true;
  int writer_rank = -1;              // in the plan's communicator: who writes this rank's trace
  std::vector<int> members;          // on a writer: the other ranks whose traces it writes, in order
  MPI_Comm writers = MPI_COMM_NULL;  // on a writer: the writers, in rank order
  int group_count = 0;               // writers in all

  StoreWriters() = default;
  StoreWriters(const StoreWriters &) = delete;
  StoreWriters &operator=(const StoreWriters &) = delete;
  ~StoreWriters();
};

// The bytes of a trace's records, the measure the groups are bounded by.
uint64_t record_bytes(const io::RankTrace &t);

// Collective over `comm` (PMPI only). `aggregate_bytes` 0: every rank writes its own.
// Ranks of a node that are not consecutive in `comm` are never grouped: a writer's
// ranks must be one block of the store's rows.
void plan_store_writers(MPI_Comm comm, uint64_t my_record_bytes, uint64_t aggregate_bytes, StoreWriters &plan);

// Collective over `comm`: `owned` holds this rank's trace; a writer appends its members'
// traces in rank order, a member sends its own and keeps it (for the spill fallback).
// Point-to-point on `tag`.
void gather_traces(MPI_Comm comm, const StoreWriters &plan, std::vector<io::RankTrace> &owned, int tag);

}  // namespace perfsift::collect
