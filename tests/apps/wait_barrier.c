/* Wait at barrier: in each of 3 iterations rank r works (sleeps) (r + 1) * 20 ms inside
 * region "work", then enters MPI_Barrier. Known answer: rank r waits about
 * (P - 1 - r) * 20 ms per barrier, 3 (P - 1 - r) * 20 ms in all; the last rank barely waits. */
#include <mpi.h>
#include "common.h"
#include "perfsift.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 3; ++i) {
    perfsift_region_begin("work");
    sleep_ms((rank + 1) * 20.0);
    perfsift_region_end("work");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
