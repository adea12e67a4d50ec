/* 8-byte messaging for the collector's per-call cost.
 * 2 ranks: ping-pong, ITER round trips, 2 MPI calls per rank per round trip.
 * 1 rank: ITER self-messages (MPI_Isend + MPI_Recv + MPI_Wait: 3 calls), which times
 * the wrapper path without the scheduling noise of two busy-polling ranks on a VM.
 * Prints: pingpong ITER SECONDS CALLS_PER_RANK */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  long iter = argc > 1 ? atol(argv[1]) : 100000;
  double v = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long calls = 2 * iter;
  if (size == 1) {
    MPI_Request rq;
    double w = 0;
    calls = 3 * iter;
    for (long i = 0; i < iter; ++i) {
      MPI_Isend(&v, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, &rq);
      MPI_Recv(&w, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
    }
  }
  for (long i = 0; size > 1 && i < iter; ++i) {
    if (rank == 0) {
      MPI_Send(&v, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(&v, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(&v, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&v, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
    }
  }
  double t = MPI_Wtime() - t0;
  if (rank == 0) printf("pingpong %ld %.9f %ld\n", iter, t, calls);
  MPI_Finalize();
  return 0;
}
