/* The cost of a region's enter and leave in the collector, in ns per pair: the median
 * over PAIRS regions of the time in perfsift_region_begin plus perfsift_region_end (each
 * timed by the clock around it, the clock's own cost taken off), so that the machine's
 * other load does not blur it. WORK_US > 0: each region spins that long between them, so
 * that boundaries lie further apart than the collector's OS sampling gap (100 us) and
 * every one samples the OS afresh; 0: a tight loop of empty regions. Not built by default:
 *   mpicc -O2 -I collect/include bench/region_bench.c -o region_bench -Lbuild/collect -lperfsift_collect
 *   PERFSIFT_OUTPUT=/tmp/rb.h5 mpirun -n 1 ./region_bench [PAIRS [WORK_US]]
 * (-Wl,-rpath,build/collect or LD_LIBRARY_PATH when the library is not installed). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "perfsift.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, long n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 2];
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const long pairs = argc > 1 ? atol(argv[1]) : 200000;
  const double work_ns = argc > 2 ? atof(argv[2]) * 1e3 : 0;
  double *cost = malloc(sizeof(double) * (size_t)pairs), *clock_cost = malloc(sizeof(double) * (size_t)pairs);
  for (long i = 0; i < pairs; ++i) {
    const double t0 = now_ns();
    const double t1 = now_ns();
    clock_cost[i] = t1 - t0;
  }
  const double clock_ns = median(clock_cost, pairs);
  for (long i = 0; i < pairs; ++i) {
    const double t0 = now_ns();
    perfsift_region_begin("bench");
    const double t1 = now_ns();
    if (work_ns > 0)
      while (now_ns() < t1 + work_ns) {}
    const double t2 = now_ns();
    perfsift_region_end("bench");
    const double t3 = now_ns();
    cost[i] = (t1 - t0) + (t3 - t2) - 2 * clock_ns;
  }
  printf("region enter+leave: %.0f ns per pair (median of %ld, regions of %.0f us)\n", median(cost, pairs), pairs,
         work_ns * 1e-3);
  free(cost);
  free(clock_cost);
  MPI_Finalize();
  return 0;
}
