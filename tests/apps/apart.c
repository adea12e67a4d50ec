/* APART test suite properties (re-implemented from their published description,
 * notes/peers.md 3.1), one per run: `apart PROPERTY [r]`, r repetitions (default 3).
 * Work is sleeping until a deadline: repetition k's phases end at t0 + k x PERIOD + offset,
 * t0 shared by all ranks (one node's clock). A rank the machine delayed in one repetition
 * (a late wake-up, a late exit from the last collective) thus starts the next one on time
 * instead of carrying the delay forward as waiting nobody injected; oversubscribed or busy
 * machines keep the analytic answers:
 *
 *   late_sender      even ranks work BASE+EXTRA then MPI_Ssend to me+1; odd ranks work
 *                    BASE then MPI_Recv.       Late Sender on odd ranks: r x EXTRA.
 *   late_receiver    the work swapped: even ranks block in MPI_Ssend.
 *                                              Late Receiver on even ranks: r x EXTRA.
 *   late_sender_irecv  as late_sender, the receive posted early: odd ranks MPI_Irecv,
 *                    work BASE, MPI_Wait.      Late Sender on odd ranks: r x EXTRA.
 *   wrong_order      odd ranks send tag 1 at once, work EXTRA, send tag 2; even ranks
 *                    receive tag 2 first.      Late Sender (all wrong order) on even
 *                                              ranks: r x EXTRA.
 *   imbalance_at_mpi_barrier   the first half works 0, the second EXTRA, then MPI_Barrier.
 *                                              Wait at Barrier, first half: r x EXTRA.
 *   imbalance_at_mpi_alltoall  even ranks work 0, odd EXTRA, then MPI_Alltoall.
 *                                              Wait at NxN on even ranks: r x EXTRA.
 *   late_broadcast   root (rank 1) works BASE+EXTRA, others BASE, then MPI_Bcast.
 *                                              Late Broadcast on non-roots: r x EXTRA.
 *   early_reduce     root (rank 1) works BASE, others BASE+EXTRA, then MPI_Reduce.
 *                                              Early Reduce on the root: r x EXTRA.
 *   none             the same work everywhere; Sendrecv, Barrier, Allreduce: no waits.
 * Two more, for MPI_Sendrecv, which waits once for both its halves:
 *   sendrecv_pair    pairs exchange 64 ints; even ranks work BASE+EXTRA, odd BASE.
 *                                              Late Sender on odd ranks: r x EXTRA, and no
 *                                              Late Receiver (the same wait, not a second).
 *   sendrecv_ring    a shift of 1 MiB (rendezvous) to me+1 from me-1; rank 0 works
 *                    BASE+EXTRA, the others BASE.  Late Sender on rank 1, Late Receiver on
 *                                              rank np-1 (its send waits for rank 0's post):
 *                                              r x EXTRA each.
 * An odd communicator size leaves the last rank out of the pairwise properties. */
#define _POSIX_C_SOURCE 200809L /* clock_nanosleep */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BASE 20.0    /* ms */
#define EXTRA 100.0  /* ms: a 20 ms hiccup of a shared VM stays inside the tests' 20 % */
#define PERIOD 250.0 /* ms: the longest repetition's work (BASE+EXTRA) and slack */

static int me, np;
static struct timespec t0;

/* The shared start, set up outside the tool's sight (PMPI) so it adds no waiting. */
static void start_clock(void) {
  double start = 0;
  PMPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    clock_gettime(CLOCK_MONOTONIC, &t0);
    start = t0.tv_sec + t0.tv_nsec * 1e-9 + 0.05;
  }
  PMPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  t0.tv_sec = (time_t)start;
  t0.tv_nsec = (long)((start - (double)t0.tv_sec) * 1e9);
}

/* Work of repetition k that ends OFFSET ms into it. */
static void work_until(int k, double offset) {
  const double ms = k * PERIOD + offset;
  struct timespec at = t0;
  at.tv_sec += (time_t)(ms / 1000.0);
  at.tv_nsec += (long)((ms - (double)(time_t)(ms / 1000.0) * 1000.0) * 1e6);
  if (at.tv_nsec >= 1000000000L) {
    at.tv_sec += 1;
    at.tv_nsec -= 1000000000L;
  }
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {}
}

static int paired(void) { return me < np - np % 2; }

static void late_sender(int r, int swap) {
  int v = 0;
  for (int k = 0; k < r; ++k) {
    if (!paired()) continue;
    const int sender = me % 2 == 0;
    work_until(k, BASE + ((sender != swap) ? EXTRA : 0));
    if (sender)
      MPI_Ssend(&v, 1, MPI_INT, me + 1, k, MPI_COMM_WORLD);
    else
      MPI_Recv(&v, 1, MPI_INT, me - 1, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
}

static void late_sender_irecv(int r) {
  int v = 0;
  for (int k = 0; k < r; ++k) {
    if (!paired()) continue;
    if (me % 2 == 0) {
      work_until(k, BASE + EXTRA);
      MPI_Send(&v, 1, MPI_INT, me + 1, k, MPI_COMM_WORLD);
    } else {
      MPI_Request q;
      MPI_Irecv(&v, 1, MPI_INT, me - 1, k, MPI_COMM_WORLD, &q);
      work_until(k, BASE);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
  }
}

static void wrong_order(int r) {
  int a = 1, b = 2;
  for (int k = 0; k < r; ++k) {
    if (!paired()) continue;
    if (me % 2) {
      work_until(k, 0);
      MPI_Send(&a, 1, MPI_INT, me - 1, 1, MPI_COMM_WORLD);
      work_until(k, EXTRA);
      MPI_Send(&b, 1, MPI_INT, me - 1, 2, MPI_COMM_WORLD);
    } else {
      work_until(k, 0);
      MPI_Recv(&b, 1, MPI_INT, me + 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Recv(&a, 1, MPI_INT, me + 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  start_clock();
  const char *p = argc > 1 ? argv[1] : "none";
  const int r = argc > 2 ? atoi(argv[2]) : 3;
  const int root = np > 1 ? 1 : 0;
  int *buf = calloc((size_t)np * 64, sizeof(int)), *out = calloc((size_t)np * 64, sizeof(int));
  if (!strcmp(p, "late_sender"))
    late_sender(r, 0);
  else if (!strcmp(p, "late_receiver"))
    late_sender(r, 1);
  else if (!strcmp(p, "late_sender_irecv"))
    late_sender_irecv(r);
  else if (!strcmp(p, "wrong_order"))
    wrong_order(r);
  else if (!strcmp(p, "imbalance_at_mpi_barrier"))
    for (int k = 0; k < r; ++k) {
      work_until(k, me < np / 2 ? 0 : EXTRA);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  else if (!strcmp(p, "imbalance_at_mpi_alltoall"))
    for (int k = 0; k < r; ++k) {
      work_until(k, me % 2 ? EXTRA : 0);
      MPI_Alltoall(buf, 64, MPI_INT, out, 64, MPI_INT, MPI_COMM_WORLD);
    }
  else if (!strcmp(p, "late_broadcast"))
    for (int k = 0; k < r; ++k) {
      work_until(k, BASE + (me == root ? EXTRA : 0));
      MPI_Bcast(buf, 64, MPI_INT, root, MPI_COMM_WORLD);
    }
  else if (!strcmp(p, "early_reduce"))
    for (int k = 0; k < r; ++k) {
      work_until(k, BASE + (me == root ? 0 : EXTRA));
      MPI_Reduce(buf, out, 64, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    }
  else if (!strcmp(p, "sendrecv_pair"))
    for (int k = 0; k < r; ++k) {
      if (!paired()) continue;
      work_until(k, BASE + (me % 2 ? 0 : EXTRA));
      const int peer = me % 2 ? me - 1 : me + 1;
      MPI_Sendrecv(buf, 64, MPI_INT, peer, k, out, 64, MPI_INT, peer, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  else if (!strcmp(p, "sendrecv_ring")) {
    const int n = 1 << 18; /* ints: 1 MiB, beyond any eager limit */
    int *big = calloc((size_t)n, sizeof(int)), *big_out = calloc((size_t)n, sizeof(int));
    for (int k = 0; k < r; ++k) {
      work_until(k, BASE + (me == 0 ? EXTRA : 0));
      MPI_Sendrecv(big, n, MPI_INT, (me + 1) % np, k, big_out, n, MPI_INT, (me + np - 1) % np, k, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
    }
    free(big);
    free(big_out);
  } else if (!strcmp(p, "none"))
    for (int k = 0; k < r; ++k) {
      work_until(k, BASE);
      MPI_Sendrecv(buf, 64, MPI_INT, (me + 1) % np, k, out, 64, MPI_INT, (me + np - 1) % np, k, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      work_until(k, 2 * BASE);
      MPI_Barrier(MPI_COMM_WORLD);
      work_until(k, 3 * BASE);
      MPI_Allreduce(buf, out, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
  else {
    if (me == 0) fprintf(stderr, "apart: unknown property %s\n", p);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  free(buf);
  free(out);
  MPI_Finalize();
  return 0;
}
