/* A 1-D halo exchange with open (non-periodic) ends: halo_open_ends [N]
 * Each of N iterations exchanges one double with both neighbours twice: with
 * MPI_Irecv/MPI_Isend/MPI_Waitall, then with MPI_Sendrecv. The end ranks' missing
 * neighbour is MPI_PROC_NULL, as in most stencil codes: those calls complete at once and
 * carry no message.
 * Known answer on P ranks: 4 (P - 1) N messages, every one matched; the 4 N calls a
 * rank at an end makes to MPI_PROC_NULL are not messages (none unmatched). */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = argc > 1 ? atoi(argv[1]) : 200;
  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  double mine = rank, from_left = 0, from_right = 0;
  for (int i = 0; i < n; ++i) {
    MPI_Request req[4];
    MPI_Irecv(&from_left, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&from_right, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(&mine, 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(&mine, 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    MPI_Sendrecv(&mine, 1, MPI_DOUBLE, right, 3, &from_left, 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&mine, 1, MPI_DOUBLE, left, 4, &from_right, 1, MPI_DOUBLE, right, 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    mine += 0.5 * (from_left + from_right);
  }
  MPI_Finalize();
  return 0;
}
