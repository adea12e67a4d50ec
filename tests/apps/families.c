/* One program using every wrapper family, with exact per-rank counts (run on 4 ranks).
 * Each rank r talks to partner p = r ^ 1 and to the ring neighbours. Counts per rank:
 *   MPI_Isend 2, MPI_Irecv 2, MPI_Waitall 1 (completes 4 requests)
 *   MPI_Ssend 1, MPI_Recv 3 (Ssend, Bsend, Probe-matched), MPI_Bsend 1, MPI_Rsend 1 (+1 Irecv, 1 Wait)
 *   MPI_Send_init 1, MPI_Recv_init 1, MPI_Startall 2, MPI_Waitall +2 (persistent, 2 iterations)
 *   MPI_Sendrecv 1, MPI_Sendrecv_replace 1, MPI_Probe 1, MPI_Send 1
 *   MPI_Barrier 3, MPI_Bcast 1, MPI_Reduce 1, MPI_Allreduce 2 (one on a split comm),
 *   MPI_Gather 1, MPI_Allgather 1, MPI_Alltoall 1, MPI_Ibarrier 1, MPI_Iallreduce 1,
 *   MPI_Wait 3 (Rsend's Irecv, Ibarrier, Iallreduce), MPI_Comm_split 1, MPI_Comm_free 1
 * Bytes: every point-to-point message is 64 ints (256 bytes). */
#include <mpi.h>
#include <stdlib.h>

#define N 64

// One straight sequence of calls, family after family: store_checks counts them in this order.
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int p = rank ^ 1;
  int a[N] = {0}, b[N] = {0}, c[N] = {0}, d[N] = {0};
  MPI_Request rq[4];

  /* nonblocking pair exchange */
  MPI_Irecv(b, N, MPI_INT, p, 1, MPI_COMM_WORLD, &rq[0]);
  MPI_Irecv(d, N, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &rq[1]);
  MPI_Isend(a, N, MPI_INT, p, 1, MPI_COMM_WORLD, &rq[2]);
  MPI_Isend(c, N, MPI_INT, p, 2, MPI_COMM_WORLD, &rq[3]);
  MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);

  /* synchronous, buffered */
  int bufsize = N * sizeof(int) + MPI_BSEND_OVERHEAD;
  void *bbuf = malloc(bufsize);
  MPI_Buffer_attach(bbuf, bufsize);
  if (rank % 2 == 0) {
    MPI_Ssend(a, N, MPI_INT, p, 3, MPI_COMM_WORLD);
    MPI_Recv(b, N, MPI_INT, p, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(b, N, MPI_INT, p, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Ssend(a, N, MPI_INT, p, 4, MPI_COMM_WORLD);
  }
  MPI_Bsend(a, N, MPI_INT, p, 5, MPI_COMM_WORLD);
  MPI_Recv(b, N, MPI_INT, p, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Buffer_detach(&bbuf, &bufsize);
  free(bbuf);

  /* ready send: the receive is posted before the barrier */
  MPI_Request rr;
  MPI_Irecv(b, N, MPI_INT, p, 6, MPI_COMM_WORLD, &rr);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Rsend(a, N, MPI_INT, p, 6, MPI_COMM_WORLD);
  MPI_Wait(&rr, MPI_STATUS_IGNORE);

  /* persistent */
  MPI_Request pr[2];
  MPI_Send_init(a, N, MPI_INT, p, 7, MPI_COMM_WORLD, &pr[0]);
  MPI_Recv_init(b, N, MPI_INT, p, 7, MPI_COMM_WORLD, &pr[1]);
  for (int it = 0; it < 2; ++it) {
    MPI_Startall(2, pr);
    MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
  }
  MPI_Request_free(&pr[0]);
  MPI_Request_free(&pr[1]);

  /* combined */
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  MPI_Sendrecv(a, N, MPI_INT, next, 8, b, N, MPI_INT, prev, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv_replace(a, N, MPI_INT, next, 9, prev, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  /* probe */
  MPI_Status st;
  MPI_Send(a, N, MPI_INT, p, 10, MPI_COMM_WORLD);
  MPI_Probe(MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, &st);
  MPI_Recv(b, N, MPI_INT, st.MPI_SOURCE, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  /* collectives */
  double x = rank, y = 0;
  double all[64], mine[64];
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Gather(&x, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Allgather(&x, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int i = 0; i < size; ++i) mine[i] = rank;
  MPI_Alltoall(mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Request nb;
  MPI_Ibarrier(MPI_COMM_WORLD, &nb);
  MPI_Wait(&nb, MPI_STATUS_IGNORE);
  MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &nb);
  MPI_Wait(&nb, MPI_STATUS_IGNORE);

  /* communicators */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, half);
  MPI_Comm_free(&half);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
