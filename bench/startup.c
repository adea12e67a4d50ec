/* What the collector adds to a run beyond its calls: start-up, clocks, the store write.
 * startup [ROUNDS]: MPI_Init, ROUNDS ring exchanges of 8 bytes (default 0: an empty
 * program), MPI_Finalize. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 0;
  double out = rank, in = 0;
  for (int i = 0; i < rounds; ++i)
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, (rank + 1) % size, i, &in, 1, MPI_DOUBLE, (rank + size - 1) % size, i,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
