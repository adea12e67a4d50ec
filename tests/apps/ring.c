/* Ring exchange: each rank sends ROUNDS messages of BYTES bytes to rank+1 and
 * receives from rank-1 (blocking MPI_Send/MPI_Recv, even ranks send first).
 * Known answer per rank: ROUNDS sends and ROUNDS receives of BYTES bytes, one
 * region "ring" visited once, one MPI_Barrier after it; 0 unmatched messages. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfsift.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rounds = argc > 1 ? atoi(argv[1]) : 10;
  int bytes = argc > 2 ? atoi(argv[2]) : 1024;
  char *buf = calloc(bytes, 1), *in = calloc(bytes, 1);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  perfsift_region_begin("ring");
  for (int i = 0; i < rounds; ++i) {
    if (rank % 2 == 0) {
      MPI_Send(buf, bytes, MPI_CHAR, next, i, MPI_COMM_WORLD);
      MPI_Recv(in, bytes, MPI_CHAR, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in, bytes, MPI_CHAR, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, bytes, MPI_CHAR, next, i, MPI_COMM_WORLD);
    }
  }
  perfsift_region_end("ring");
  MPI_Barrier(MPI_COMM_WORLD);
  free(buf);
  free(in);
  MPI_Finalize();
  return 0;
}
