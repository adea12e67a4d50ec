/* Slow for reasons only the OS sees (no hardware counters needed). Four ranks or more:
 * the lower half of the ranks is the "faulting" group, the upper half the "descheduled"
 * group. Three executions of region `iteration` holding two regions:
 *   faulting:    a fixed amount of arithmetic, then 6 passes writing one byte to every
 *                page of a 16 MiB mapping (touched once before, outside the regions).
 *                The faulting group releases the pages between passes (MADV_DONTNEED), so
 *                every pass takes a minor fault per page; the other group's pages stay.
 *   descheduled: the same arithmetic. The descheduled group runs it pinned to one CPU
 *                with three busy threads pinned there too (descheduled: involuntary
 *                context switches); the other group runs it afterwards, alone.
 * No MPI call inside either region; barriers that sleep between them (a rank that waits
 * takes no CPU from those at work). Known answer: two rank
 * groups; faulting slow on the lower half through minor page faults, descheduled slow
 * on the upper half through involuntary context switches (and time off the CPU).
 * Memory growth: none inside the regions (the mapping is resident before them). */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "perfsift.h"

enum { kIterations = 3, kPasses = 6, kHogs = 3 };
static const size_t kBytes = 16u << 20;
static const long kWork = 40000000; /* multiply-adds: tens of ms alone on a CPU */

static volatile double sink;
static void arithmetic(long n) {
  double x = 1.0;
  for (long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  sink = x;
}

/* The busy threads: started once, before the regions (their stacks are no region's
 * memory growth); each burns while `hogs_busy` is set, and waits for it otherwise. */
static pthread_mutex_t hogs_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hogs_cond = PTHREAD_COND_INITIALIZER;
static volatile int hogs_busy, hogs_quit;
static void *hog(void *arg) {
  (void)arg;
  double x = 1.0;
  for (;;) {
    pthread_mutex_lock(&hogs_mutex);
    while (!hogs_busy && !hogs_quit) pthread_cond_wait(&hogs_cond, &hogs_mutex);
    pthread_mutex_unlock(&hogs_mutex);
    if (hogs_quit) break;
    while (hogs_busy) x = x * 1.0000001 + 1e-9;
  }
  sink = x;
  return NULL;
}
static void hogs_set(int busy, int quit) {
  pthread_mutex_lock(&hogs_mutex);
  hogs_busy = busy;
  hogs_quit = quit;
  pthread_cond_broadcast(&hogs_cond);
  pthread_mutex_unlock(&hogs_mutex);
}

static void touch(volatile char *buf, long page) {
  for (size_t off = 0; off < kBytes; off += (size_t)page) buf[off] = (char)(off >> 12);
}

/* A barrier that sleeps while it waits: a waiting rank takes no CPU from the others (an
 * MPI barrier polls, or yields, which descheduls the ranks still at work). */
static void sleeping_barrier(void) {
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      struct timespec ts = {0, 500000};
      nanosleep(&ts, NULL);
    }
  }
}

/* kHogs busy threads pinned to one CPU with the calling thread: the rank's own CPU
 * among those it may use (the ranks of the group on different CPUs). */
static pthread_t hogs[kHogs];
static cpu_set_t saved_cpus, one_cpu;
static void start_hogs(int rank) {
  if (sched_getaffinity(0, sizeof saved_cpus, &saved_cpus) != 0) {
    perror("sched_getaffinity");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int cpu = -1;
  for (int c = 0, k = 0; c < CPU_SETSIZE && cpu < 0; ++c)
    if (CPU_ISSET(c, &saved_cpus) && k++ == rank % CPU_COUNT(&saved_cpus)) cpu = c;
  if (cpu < 0) cpu = sched_getcpu();
  CPU_ZERO(&one_cpu);
  CPU_SET(cpu, &one_cpu);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setaffinity_np(&attr, sizeof one_cpu, &one_cpu);
  for (int i = 0; i < kHogs; ++i)
    if (pthread_create(&hogs[i], &attr, hog, NULL) != 0) {
      fprintf(stderr, "os_waits: cannot start a busy thread\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  pthread_attr_destroy(&attr);
}
static void stop_hogs(void) {
  hogs_set(0, 1);
  for (int i = 0; i < kHogs; ++i) pthread_join(hogs[i], NULL);
}

/* The arithmetic on the busy threads' CPU while they burn. */
static void descheduled_work(void) {
  sched_setaffinity(0, sizeof one_cpu, &one_cpu);
  hogs_set(1, 0);
  arithmetic(kWork);
  hogs_set(0, 0);
  sched_setaffinity(0, sizeof saved_cpus, &saved_cpus);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int faulting_group = rank < size / 2;
  const long page = sysconf(_SC_PAGESIZE);
  char *buf = mmap(NULL, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) {
    perror("mmap");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  madvise(buf, kBytes, MADV_NOHUGEPAGE); /* a fault per 4 KiB page, not per 2 MiB */
  touch(buf, page);                      /* resident before the regions */
  if (!faulting_group) start_hogs(rank);
  for (int it = 0; it < kIterations; ++it) {
    sleeping_barrier();
    perfsift_region_begin("iteration");
    perfsift_region_begin("faulting");
    arithmetic(kWork);
    for (int p = 0; p < kPasses; ++p) {
      touch(buf, page);
      if (faulting_group) madvise(buf, kBytes, MADV_DONTNEED);
    }
    perfsift_region_end("faulting");
    sleeping_barrier();
    if (!faulting_group) {
      perfsift_region_begin("descheduled");
      descheduled_work();
      perfsift_region_end("descheduled");
    }
    sleeping_barrier(); /* the descheduled group's busy threads are gone */
    if (faulting_group) {
      perfsift_region_begin("descheduled");
      arithmetic(kWork);
      perfsift_region_end("descheduled");
    }
    perfsift_region_end("iteration");
  }
  if (!faulting_group) stop_hogs();
  touch(buf, page); /* the faulting group's pages back, as the others' */
  munmap(buf, kBytes);
  sleeping_barrier();
  MPI_Finalize();
  return 0;
}
