/* Nested regions with known, sleep-based times (oversubscription does not blur sleeps).
 * Per rank r, twice:  outer { inner { sleep (20 + 10 r) ms } ; sleep 10 ms } ; then a barrier.
 * Known answer: visits outer = inner = 2; wall(inner) = 2 (20 + 10 r) ms;
 * wall(outer) = wall(inner) + 20 ms (+ a little); inner is inside outer (path outer/inner);
 * one step region "phase" with steps 0 and 1 around each outer. */
#include <mpi.h>

#include "common.h"
#include "perfsift.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 2; ++i) {
    perfsift_step_begin("phase");
    perfsift_region_begin("outer");
    perfsift_region_begin("inner");
    sleep_ms(20 + 10 * rank);
    perfsift_region_end("inner");
    sleep_ms(10);
    perfsift_region_end("outer");
    perfsift_step_end("phase");
  }
  MPI_Pcontrol(1, "tail");
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Pcontrol(-1, "tail");
  MPI_Finalize();
  return 0;
}
