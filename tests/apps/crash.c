/* A rank dies mid-run: after 5 ring rounds and a barrier, rank 1 kills itself with
 * SIGKILL (no handler can run: its data is lost unless spilled); the other ranks then
 * block in a barrier until the launcher terminates them (SIGTERM: their handlers flush).
 * Known answer after `perfsift recover`: incomplete store, rank 1 missing, the other ranks
 * truncated with their 5 sends and 5 receives. */
#include <mpi.h>
#include <signal.h>
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
  if (rank == 1) raise(SIGKILL);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
