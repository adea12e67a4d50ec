/* Late receiver: in each pair the even rank sends with MPI_Ssend (synchronous, so it
 * cannot complete before the receive is posted); the odd rank sleeps DELAY ms before
 * every MPI_Recv. ROUNDS = 4, DELAY = 50 ms, 8 KiB messages.
 * Known answer: every MPI_Ssend on even ranks lasts about 50 ms (Late Receiver). */
#include <mpi.h>
#include "common.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  static char buf[8192];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 4; ++i) {
    if (rank % 2 == 0) {
      MPI_Ssend(buf, sizeof buf, MPI_CHAR, rank + 1, i, MPI_COMM_WORLD);
    } else {
      sleep_ms(50);
      MPI_Recv(buf, sizeof buf, MPI_CHAR, rank - 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  MPI_Finalize();
  return 0;
}
