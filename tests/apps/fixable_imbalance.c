/* A run with one problem and the fix that perfsift's analysis names for it, behind a
 * switch: `perfsift compare` of the run before and after the fix checks the predicted gain.
 * Any number of ranks; 20 iterations of: region "solve" (computation: sleeps, so that an
 * oversubscribed machine does not blur it), a halo exchange with both ring neighbours
 * (MPI_Sendrecv, 4 KiB) and an MPI_Allreduce.
 *   fixable_imbalance          rank 2 (rank 0 on fewer than 3 ranks) computes 12 ms per
 *                              iteration, the others 4 ms: load imbalance in solve on rank 2
 *   fixable_imbalance balanced every rank computes the mean, (4 (P - 1) + 12) / P ms: the fix
 *                              "balance region solve"
 * Known answer (4 ranks): 240 ms of solve on rank 2 before, 120 ms on every rank after; the
 * program shortens by about 120 ms, what balancing solve is predicted to save. */
#include <mpi.h>
#include <string.h>
#include "common.h"
#include "perfsift.h"

enum { kIterations = 20, kHaloInts = 1024 };

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int balanced = argc > 1 && strcmp(argv[1], "balanced") == 0;
  const int slow_rank = size > 2 ? 2 : 0;
  const double fast_ms = 4, slow_ms = 12;
  const double mean_ms = (fast_ms * (size - 1) + slow_ms) / size;
  const double work_ms = balanced ? mean_ms : rank == slow_rank ? slow_ms : fast_ms;
  static int halo_out[kHaloInts], halo_in[kHaloInts];
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double sum = 0;
  for (int it = 0; it < kIterations; ++it) {
    perfsift_region_begin("solve");
    sleep_ms(work_ms);
    perfsift_region_end("solve");
    MPI_Sendrecv(halo_out, kHaloInts, MPI_INT, right, 0, halo_in, kHaloInts, MPI_INT, left, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    double local = work_ms, total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    sum += total;
  }
  MPI_Finalize();
  return sum > 0 ? 0 : 1;
}
