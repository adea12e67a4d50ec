/* 2-D wavefront (pipeline) on a PX x PY grid of ranks (P = PX * PY, PX = largest divisor
 * of P not above sqrt(P)). Each of 4 sweeps (step region "sweep"): a rank receives from
 * its upstream west and north neighbours, computes COMPUTE ms (region "compute"), sends
 * east and south. Sweeps 0 and 1 start at the north-west corner, sweeps 2 and 3 at the
 * south-east (a direction change). Known answer: per sweep a rank with i upstream
 * neighbours (0, 1 or 2) does i receives, and as many sends as it has downstream ones; the pipeline
 * depth is PX + PY - 1 stages, so one sweep lasts about (PX + PY - 1) * COMPUTE ms.
 * COMPUTE is long beside the few ms a shared, oversubscribed VM delays a wake-up by.
 * Starts with MPI_Init_thread (FUNNELED). */
#include <math.h>
#include <mpi.h>
#include "common.h"
#include "perfsift.h"

#define COMPUTE 50.0 /* ms */

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int px = 1;
  for (int d = 1; d * d <= size; ++d)
    if (size % d == 0) px = d;
  int py = size / px;
  int x = rank % px, y = rank / px;
  double buf[32] = {0};
  for (int sweep = 0; sweep < 4; ++sweep) {
    int dir = sweep < 2 ? 1 : -1;
    int west = x - dir, north = y - dir, east = x + dir, south = y + dir;
    perfsift_step_begin("sweep");
    if (west >= 0 && west < px) MPI_Recv(buf, 32, MPI_DOUBLE, y * px + west, sweep, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (north >= 0 && north < py)
      MPI_Recv(buf, 32, MPI_DOUBLE, north * px + x, sweep, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    perfsift_region_begin("compute");
    sleep_ms(COMPUTE);
    perfsift_region_end("compute");
    if (east >= 0 && east < px) MPI_Send(buf, 32, MPI_DOUBLE, y * px + east, sweep, MPI_COMM_WORLD);
    if (south >= 0 && south < py) MPI_Send(buf, 32, MPI_DOUBLE, south * px + x, sweep, MPI_COMM_WORLD);
    perfsift_step_end("sweep");
  }
  MPI_Finalize();
  return 0;
}
