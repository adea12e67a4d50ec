/* The collector's times against CLOCK_MONOTONIC over a run: clock_drift OUT_PREFIX [S]
 * For S seconds (default 3), every 50 ms, each rank reads CLOCK_MONOTONIC, calls
 * MPI_Barrier on MPI_COMM_SELF, reads it again, and keeps the two readings; at the end
 * it writes them, one pair a line in ns, to OUT_PREFIX.RANK.
 * Known answer: the store's entry and exit of the n-th MPI_Barrier on MPI_COMM_SELF lie
 * between the n-th pair of readings, shifted by one constant per rank (the store's time
 * origin and the rank's clock offset): the shift neither grows nor shrinks through the
 * run beyond the readings' own width. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common.h"

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const double seconds = argc > 2 ? atof(argv[2]) : 3.0;
  const int n = (int)(seconds / 0.05);
  long long *pairs = malloc(sizeof(long long) * 2 * (size_t)n);
  for (int i = 0; i < n; ++i) {
    sleep_ms(50);
    pairs[2 * i] = mono_ns();
    MPI_Barrier(MPI_COMM_SELF);
    pairs[2 * i + 1] = mono_ns();
  }
  char path[4096];
  snprintf(path, sizeof path, "%s.%d", argc > 1 ? argv[1] : "clock_drift", rank);
  FILE *f = fopen(path, "w");
  for (int i = 0; f && i < n; ++i) fprintf(f, "%lld %lld\n", pairs[2 * i], pairs[2 * i + 1]);
  if (f) fclose(f);
  free(pairs);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
