// The collector's short measurement of the network, beside its clock synchronisation at
// MPI_Finalize, for the parameters a run with few messages cannot give the replay
// (pipeline/replay/run_network_estimate.h). Rank 0 and one partner per level (the next rank
// on its node, the first on another node) exchange, on a private communicator:
//   16 ping-pongs of each of 8 B, 2 KiB, 8 KiB and 32 KiB (half a round trip: a transfer;
//      the time in the 8-byte send: a send overhead);
//   16 receives of 8 bytes already there (Iprobe saw them; the time in MPI_Recv);
//   2 bursts of 16 back-to-back 8-byte MPI_Isend (the intervals: gaps).
// About 200 messages per pair, small ones first: a fraction of a millisecond on an idle
// node. Rank 0 asks a partner no more once 5 ms have gone with it (ranks waiting for a
// core), keeping what it measured: at most 10 ms and a round trip in all. The time it took
// rank 0 is stored beside the samples (/network_probe cost_ns).
#pragma once

#include <mpi.h>

#include <vector>

#include "io/trace_model.h"

namespace perfsift::collect {

// Collective over `comm` (PMPI only, on tags `tag` to `tag` + 3); `rank_hosts`: each rank's node. The
// samples on rank 0, empty elsewhere and on a single rank.
io::NetworkProbe measure_network(MPI_Comm comm, const std::vector<int32_t> &rank_hosts, int tag);

}  // namespace perfsift::collect
