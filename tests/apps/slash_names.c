/* Region names as users write them: slashes, spaces, a quote. Per rank r, three times:
 * "io/read" { sleep (5 + 5 r) ms }, then "solver" { "main loop" { sleep 5 ms } }, then a
 * barrier. Known answer: the store holds the regions "io/read" (a top-level region whose
 * name holds a slash: parent (program)), "solver" and "solver/main loop"; visits 3 each. */
#include <mpi.h>

#include "common.h"
#include "perfsift.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 3; ++i) {
    perfsift_region_begin("io/read");
    sleep_ms(5 + 5 * rank);
    perfsift_region_end("io/read");
    perfsift_region_begin("solver");
    perfsift_region_begin("main loop");
    sleep_ms(5);
    perfsift_region_end("main loop");
    perfsift_region_end("solver");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
