/* Two call sites of one MPI function in one function, for a stripped build (no symbols,
 * no debug information): only their offsets into the executable tell them apart. Rank 1
 * arrives 40 ms late at the first barrier of each of 4 rounds; the second is balanced.
 * Known answer: two sites, the wait at the first. */
#include <mpi.h>
#include "common.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 4; ++i) {
    if (rank == 1) sleep_ms(40);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
