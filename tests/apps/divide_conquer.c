/* Divide and conquer on P = 2^k ranks (Hercule's D&C model: (Divide)* . (Solve . Merge)*).
 * Divide, for d = P/2, P/4, ..., 1: a rank splits its data locally (SPLIT ms; twice as
 * long on the rank of each pair whose bit d is set) and exchanges half with r XOR d
 * (MPI_Sendrecv). Solve: SOLVE ms, half as much again on odd ranks. Merge, for d = 1, 2,
 * ...: the rank whose bit d is set sends its result to r XOR d and is done; the other
 * receives it and merges (MERGE ms). Known answer at P = 4: divide waits 2, 1, 1, 0 x SPLIT
 * (100, 50, 50, 0 ms) on ranks 0-3; merge waits SOLVE / 2 (50 ms) on ranks 0 and 2 for
 * their odd siblings' longer solve; ranks 1 and 3 then idle until the root's last merge.
 * The times are long beside the few ms a shared, oversubscribed VM delays a wake-up by. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "common.h"

#define SPLIT 50.0
#define SOLVE 100.0
#define MERGE 25.0

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size & (size - 1)) {
    if (rank == 0) fprintf(stderr, "divide_conquer needs a power-of-two number of ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  static int data[4096], in[4096];
  for (int d = size / 2; d >= 1; d /= 2) {
    sleep_ms(rank & d ? 2 * SPLIT : SPLIT);
    MPI_Sendrecv(data, 1024, MPI_INT, rank ^ d, d, in, 1024, MPI_INT, rank ^ d, d, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  sleep_ms(rank % 2 ? 1.5 * SOLVE : SOLVE);
  for (int d = 1; d < size; d *= 2) {
    if (rank & d) {
      MPI_Send(data, 512, MPI_INT, rank ^ d, 100 + d, MPI_COMM_WORLD);
      break;
    }
    MPI_Recv(in, 512, MPI_INT, rank ^ d, 100 + d, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    sleep_ms(MERGE);
  }
  MPI_Finalize();
  return 0;
}
