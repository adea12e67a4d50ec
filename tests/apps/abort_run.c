/* A rank ends the job with MPI_Abort: abort_run [N [CODE]]
 * Every rank makes N MPI_Allreduce calls (default 100) and sleeps 50 ms; then rank 1
 * calls MPI_Abort(MPI_COMM_WORLD, CODE) (default 7) while the others wait in an
 * MPI_Barrier until the launcher ends them. N = 0: the abort comes right after MPI_Init.
 * Known answer after `perfsift collect` (which recovers the store): every rank holds its
 * N MPI_Allreduce; rank 1's last event is the MPI_Abort, flagged interrupted, with CODE
 * in its tag and a call site in main of this file; the others' MPI_Barrier is kept,
 * flagged interrupted. */
#include <mpi.h>
#include <stdlib.h>

#include "common.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int n = argc > 1 ? atoi(argv[1]) : 100, code = argc > 2 ? atoi(argv[2]) : 7;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double one = 1, sum = 0;
  for (int i = 0; i < n; ++i) MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (n > 0) sleep_ms(50);
  if (rank == 1) MPI_Abort(MPI_COMM_WORLD, code);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
