// Clock offsets of every rank against rank 0, measured at MPI_Init and MPI_Finalize.
#pragma once

#include <mpi.h>

#include <cstdint>

namespace perfsift::collect {

struct ClockOffset {
  int64_t offset_ns = 0;  // rank 0's clock minus this rank's
  int64_t error_ns = 0;   // bound on |true offset - offset_ns|
  int64_t local_ns = 0;   // this rank's clock when it was measured
};

// Binomial tree over `comm`: in round k every rank below 2^k that already knows its offset
// measures rank + 2^k (best of `rounds` ping-pongs, midpoint rule, error half the round
// trip) and hands it the sum of both offsets and both errors. All pairs of a round run at
// once: ceil(log2 P) rounds in all, so start-up does not grow with the rank count.
// Collective over `comm` (PMPI only, on `tag`).
ClockOffset measure_clock_offset(MPI_Comm comm, int rounds, int tag);

}  // namespace perfsift::collect
