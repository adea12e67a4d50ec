/* Four-corner sweep (as Sweep3D's octants in 2-D) on a 2 x 3 grid of ranks, rank r at
 * (r % 2, r / 2), with MPI_Irecv/MPI_Isend and MPI_Waitall. Each of ROUNDS x 4 sweeps starts
 * at the next corner (north-west, north-east, south-east, south-west): a rank receives from
 * its upstream neighbours in x and y (both completed by one Waitall), computes COMPUTE ms,
 * and sends downstream. Known answer: recognised as a wavefront on a 2 x 3 grid (4 pipeline
 * stages); each direction change makes the ranks away from the new corner wait for the
 * sweep to reach them (direction_change), the first sweep fills the pipeline (fill_up); a
 * Waitall of two receives waits once, so every share of the lost time lies in [0, 1]. */
#include <mpi.h>
#include "common.h"

#define COMPUTE 15.0 /* ms */
#define ROUNDS 2

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int px = 2, py = size / 2;
  const int x = rank % px, y = rank / px;
  static const int corner[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}}; /* flow direction (dx, dy) */
  double in[2][16] = {{0}}, out[16] = {0};
  for (int sweep = 0; sweep < ROUNDS * 4; ++sweep) {
    const int dx = corner[sweep % 4][0], dy = corner[sweep % 4][1];
    MPI_Request r[2];
    int n = 0;
    if (x - dx >= 0 && x - dx < px)
      MPI_Irecv(in[n], 16, MPI_DOUBLE, y * px + x - dx, sweep, MPI_COMM_WORLD, &r[n]), ++n;
    if (y - dy >= 0 && y - dy < py)
      MPI_Irecv(in[n], 16, MPI_DOUBLE, (y - dy) * px + x, sweep, MPI_COMM_WORLD, &r[n]), ++n;
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
    sleep_ms(COMPUTE);
    n = 0;
    if (x + dx >= 0 && x + dx < px) MPI_Isend(out, 16, MPI_DOUBLE, y * px + x + dx, sweep, MPI_COMM_WORLD, &r[n++]);
    if (y + dy >= 0 && y + dy < py) MPI_Isend(out, 16, MPI_DOUBLE, (y + dy) * px + x, sweep, MPI_COMM_WORLD, &r[n++]);
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
