#include "clock_sync.h"

#include <climits>

#include "tick_clock.h"

namespace perfsift::collect {

namespace {

// The parent's side: the best of `rounds` round trips with `child`; returns the child's
// offset against the parent and its error.
ClockOffset ping_child(MPI_Comm comm, int child, int rounds, int tag) {
  int64_t best_rtt = INT64_MAX;
  ClockOffset best;
  for (int i = 0; i < rounds; ++i) {
    int64_t t_remote = 0;
    const int64_t t0 = mono_ns();
    PMPI_Send(&t0, 1, MPI_INT64_T, child, tag, comm);
    PMPI_Recv(&t_remote, 1, MPI_INT64_T, child, tag, comm, MPI_STATUS_IGNORE);
    const int64_t t1 = mono_ns();
    if (t1 - t0 < best_rtt) {
      best_rtt = t1 - t0;
      best.offset_ns = (t0 + t1) / 2 - t_remote;
    }
  }
  best.error_ns = best_rtt / 2;
  return best;
}

}  // namespace

ClockOffset measure_clock_offset(MPI_Comm comm, int rounds, int tag) {
  int me = 0, n = 1;
  PMPI_Comm_rank(comm, &me);
  PMPI_Comm_size(comm, &n);
  ClockOffset mine;
  mine.local_ns = mono_ns();
  for (int span = 1; span < n; span *= 2) {
    if (me < span && me + span < n) {
      const ClockOffset child = ping_child(comm, me + span, rounds, tag);
      // child -> me -> rank 0: offsets and their error bounds add up along the path
      int64_t result[2] = {child.offset_ns + mine.offset_ns, child.error_ns + mine.error_ns};
      PMPI_Send(result, 2, MPI_INT64_T, me + span, tag, comm);
    } else if (me >= span && me < 2 * span) {
      for (int i = 0; i < rounds; ++i) {
        int64_t t0 = 0;
        PMPI_Recv(&t0, 1, MPI_INT64_T, me - span, tag, comm, MPI_STATUS_IGNORE);
        const int64_t t = mono_ns();
        PMPI_Send(&t, 1, MPI_INT64_T, me - span, tag, comm);
        mine.local_ns = t;
      }
      int64_t result[2] = {0, 0};
      PMPI_Recv(result, 2, MPI_INT64_T, me - span, tag, comm, MPI_STATUS_IGNORE);
      mine.offset_ns = result[0];
      mine.error_ns = result[1];
    }
  }
  return mine;
}

}  // namespace perfsift::collect
