/* Divide and conquer by recursive bisection on a rank count that need not be a power of
 * two (6 in the tests). A group of ranks [lo, hi) splits at mid = lo + (hi - lo) / 2; in
 * the divide, each rank lo + i of the lower half splits its data (SPLIT ms) and exchanges
 * half with mid + i (MPI_Sendrecv; the odd group's last rank has no partner at that level
 * and only splits); both halves go on alone. Solve: SOLVE ms, twice as long on the last
 * rank. Merge, in reverse: each group's mid hands its half's result to lo (tag 2), which
 * merges (MERGE ms). Known answer at P = 6 (groups [0,6) -> [0,3) [3,6) -> [1,3) [4,6)):
 * recognised as divide-and-conquer (partners 0-3, 1-4, 2-5, 0-1, 3-4, 1-2, 4-5 are the
 * bisection's); the last rank's doubled solve makes rank 4, then 3, then 0 wait in the
 * merge, and the ranks done early idle until the root's last merge: merge_wait is the
 * largest cause. */
#include <mpi.h>
#include "common.h"

#define SPLIT 20.0
#define SOLVE 80.0
#define MERGE 10.0

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static int data[4096], in[4096];
  int lo_of[32], mid_of[32], levels = 0;
  for (int lo = 0, hi = size; hi - lo >= 2; ++levels) {
    const int mid = lo + (hi - lo) / 2;
    lo_of[levels] = lo, mid_of[levels] = mid;
    const int partner = rank < mid ? rank + (mid - lo) : rank - (mid - lo);
    sleep_ms(SPLIT);
    if (partner >= lo && partner < hi && (rank < mid) != (partner < mid))
      MPI_Sendrecv(data, 1024, MPI_INT, partner, 1, in, 1024, MPI_INT, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank < mid)
      hi = mid;
    else
      lo = mid;
  }
  sleep_ms(rank == size - 1 ? 2 * SOLVE : SOLVE);
  for (int l = levels - 1; l >= 0; --l) {
    if (rank == mid_of[l]) {
      MPI_Send(data, 512, MPI_INT, lo_of[l], 2, MPI_COMM_WORLD);
      break;
    }
    if (rank == lo_of[l]) {
      MPI_Recv(in, 512, MPI_INT, mid_of[l], 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      sleep_ms(MERGE);
    }
  }
  MPI_Finalize();
  return 0;
}
