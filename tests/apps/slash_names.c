/* Region names as users write them: slashes, spaces, quotes. Per rank r, three times:
 * "io/read" { sleep (5 + 5 r) ms }, then "io" { "read" { sleep 2 ms } }, then "solver" {
 * "main loop" { sleep 5 ms } "\"q/x\"" { } }, then a barrier. Known answer: the top-level
 * region named io/read (path "io/read" in quotes, parent (program)) and the region read below
 * io (path io/read) are two regions; "solver" and "solver/main loop" as written; the name
 * "q/x" in quotes keeps its bytes; visits 3 each. */
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
    perfsift_region_begin("io");
    perfsift_region_begin("read");
    sleep_ms(2);
    perfsift_region_end("read");
    perfsift_region_end("io");
    perfsift_region_begin("solver");
    perfsift_region_begin("main loop");
    sleep_ms(5);
    perfsift_region_end("main loop");
    perfsift_region_begin("\"q/x\"");
    perfsift_region_end("\"q/x\"");
    perfsift_region_end("solver");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
