/* A rank dies mid-run: crash [HOW [OTHERS [N [MS]]]].
 * Every rank does N ring exchanges (MPI_Sendrecv, default 5) and a barrier; then rank 1
 * dies as HOW says, and the other ranks wait for the launcher to terminate them where
 * OTHERS says.
 *   HOW:    kill (default; SIGKILL: no handler runs, rank 1 keeps only what it spilled),
 *           kill-spilled (SIGKILL after 1.5 s asleep: by then the collector's watcher
 *           thread has spilled its events),
 *           exit (exit(3) without MPI_Finalize), segv (a null pointer write), abrt
 *           (abort()), fpe (an integer division by zero), bus (a read past the end of a
 *           mapped file), none (no rank dies: every rank waits as OTHERS says, for the
 *           launcher or scancel to end the job).
 *   OTHERS: barrier (default; blocked in a second MPI_Barrier), sleep (MS milliseconds,
 *           default 60000, before MPI_Finalize), finalize (straight to MPI_Finalize, where
 *           the collector's collective steps wait for the dead rank), compute (a busy loop
 *           of up to 60 s).
 * Known answer after `perfsift recover`: an incomplete store where every rank whose death
 * a handler saw holds N MPI_Sendrecv and at least 1 MPI_Barrier; with kill rank 1 is
 * missing unless it spilled (the collector spills at least once a second). */
#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile int g_zero = 0, g_seven = 7;
static volatile double g_sink = 0;

static void die(const char *how) {
  if (strcmp(how, "exit") == 0) exit(3);
  if (strcmp(how, "segv") == 0) *(volatile int *)(uintptr_t)g_zero = 1;
  if (strcmp(how, "abrt") == 0) abort();
  if (strcmp(how, "fpe") == 0) g_sink = g_seven / g_zero;
  if (strcmp(how, "bus") == 0) {
    char path[] = "/tmp/perfsift-crash-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0 && ftruncate(fd, 4096) == 0) {
      volatile char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
      unlink(path);
      if (p != MAP_FAILED && ftruncate(fd, 0) == 0) g_sink = p[0]; /* past the end: SIGBUS */
    }
    raise(SIGBUS);
  }
  if (strcmp(how, "kill-spilled") == 0) usleep(1500 * 1000);
  raise(SIGKILL);
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *how = argc > 1 ? argv[1] : "kill";
  const char *others = argc > 2 ? argv[2] : "barrier";
  const int n = argc > 3 ? atoi(argv[3]) : 5;
  int rank, size, v = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int i = 0; i < n; ++i)
    MPI_Sendrecv(&rank, 1, MPI_INT, next, i, &v, 1, MPI_INT, prev, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  /* Rank 1 dies once the others are where OTHERS says: leaving the barrier, a rank that
   * waits for a core (4 polling ranks on 2 cores) could still be inside it when a fast
   * launcher (Hydra) terminates it, 5-10 ms after the death. */
  if (rank == 1 && strcmp(how, "none") != 0) {
    usleep(100 * 1000);
    die(how);
  }
  if (strcmp(others, "sleep") == 0) {
    usleep((useconds_t)(argc > 4 ? atoi(argv[4]) : 60000) * 1000);
  } else if (strcmp(others, "compute") == 0) {
    const double t0 = seconds();
    double x = 0;
    while (seconds() - t0 < 60)
      for (int i = 0; i < 100000; ++i) x += i * 1e-9;
    g_sink = x;
  } else if (strcmp(others, "barrier") == 0) {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
