/* Late sender: in each pair (2k, 2k+1) the odd rank sleeps DELAY ms before every
 * MPI_Send; the even rank is already waiting in MPI_Recv. ROUNDS = 4, DELAY = 50 ms.
 * Known answer: every MPI_Recv on even ranks lasts about 50 ms (Late Sender wait);
 * sends are short. Needs an even number of ranks. */
#include <mpi.h>
#include "common.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, v = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 4; ++i) {
    if (rank % 2) {
      sleep_ms(50);
      MPI_Send(&v, 1, MPI_INT, rank - 1, i, MPI_COMM_WORLD);
    } else {
      MPI_Recv(&v, 1, MPI_INT, rank + 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  MPI_Finalize();
  return 0;
}
