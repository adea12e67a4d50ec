/* Nested imbalance in CPU time (AutoAnalyzer's dissimilarity case). Regions, 3 steps:
 *   setup 10 ms | solve { smooth: 20 ms, or 50 ms on the upper half of the ranks; restrict 10 ms } | io 5 ms
 * then a barrier. Work is CPU time burnt (oversubscription stretches wall time, not CPU time).
 * Known answer: two rank groups, 0..P/2-1 and P/2..P-1; CCR solve, CCCR solve/smooth.
 * With the argument "balanced" every rank burns 20 ms in smooth: one group. With "sleep"
 * the work is sleeping instead (wall time that oversubscription does not blur, no CPU
 * time): the case of call-site regions, which measure wall time. */
#include <mpi.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "perfsift.h"

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
static volatile double sink;
static int sleeping;
static void burn_ms(double ms) {
  if (sleeping) {
    sleep_ms(ms);
    return;
  }
  const double end = cpu_ms() + ms;
  double x = 1.0;
  while (cpu_ms() < end)
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int balanced = argc > 1 && strcmp(argv[1], "balanced") == 0;
  sleeping = argc > 1 && strcmp(argv[1], "sleep") == 0;
  for (int step = 0; step < 3; ++step) {
    perfsift_region_begin("setup");
    burn_ms(10);
    perfsift_region_end("setup");
    perfsift_region_begin("solve");
    perfsift_region_begin("smooth");
    burn_ms(!balanced && rank >= size / 2 ? 50 : 20);
    perfsift_region_end("smooth");
    perfsift_region_begin("restrict");
    burn_ms(10);
    perfsift_region_end("restrict");
    perfsift_region_end("solve");
    perfsift_region_begin("io");
    burn_ms(5);
    perfsift_region_end("io");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
