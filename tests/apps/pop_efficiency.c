/* Known POP efficiencies: in each of 4 iterations rank r works (sleeps) (r + 1) * 10 ms
 * inside region "work", then joins an MPI_Allreduce. Useful time is 40 (r + 1) ms, so the
 * load balance is mean / max = (P + 1) / (2 P): 0.625 on 4 ranks, for the program and for
 * "work" alike; the slowest rank barely waits, so communication efficiency is close to 1. */
#include <mpi.h>
#include "common.h"
#include "perfsift.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double x = rank, sum = 0;
  for (int i = 0; i < 4; ++i) {
    perfsift_region_begin("work");
    sleep_ms((rank + 1) * 10.0);
    perfsift_region_end("work");
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
