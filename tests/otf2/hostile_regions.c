/* Region names with spaces, quotes, slashes, a backslash and UTF-8 bytes, for the round
 * trip through `perfsift export --format otf2`. Per rank r, three times: region OUTER
 * { region INNER { compute (busy) 10 + 30 r ms } }, then MPI_Barrier. Known answer: the
 * ranks above 0 spend more in INNER; everyone waits in the barrier for the last rank. */
#include <mpi.h>
#include <time.h>

#include "perfsift.h"

static void busy_ms(double ms) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) * 1e-6 < ms);
}

static const char *const OUTER = "outer loop / \"phase\" 'one'";
static const char *const INNER = "k\xc3\xa9rnel \xe2\x9c\x93 \\ a/b \"q\"";

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 3; ++i) {
    perfsift_region_begin(OUTER);
    perfsift_region_begin(INNER);
    busy_ms(10 + 30 * rank);
    perfsift_region_end(INNER);
    perfsift_region_end(OUTER);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
