/* A rank dies mid-run: after 5 ring rounds and a barrier, rank 1 kills itself with
 * SIGKILL (no handler can run: its data is lost unless spilled) or, with argument
 * "exit", calls exit(3) without MPI_Finalize (the collector's exit hook saves it). The
 * other ranks then block in a barrier until the launcher terminates them (SIGTERM:
 * their data is saved too). Known answer after `perfsift recover`: an incomplete store;
 * with SIGKILL rank 1 is missing and the others are truncated with 5 MPI_Sendrecv each;
 * with exit every rank is truncated and rank 1 has its 5 MPI_Sendrecv and 1 barrier. */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, v = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int i = 0; i < 5; ++i)
    MPI_Sendrecv(&rank, 1, MPI_INT, next, i, &v, 1, MPI_INT, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) {
    if (argc > 1 && strcmp(argv[1], "exit") == 0) exit(3);
    raise(SIGKILL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
