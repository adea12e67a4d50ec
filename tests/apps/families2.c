/* The remaining wrapper families with exact per-rank answers (run on 4 ranks; partner
 * p = r ^ 1; every message is 64 ints = 256 bytes unless said otherwise).
 *  completion: MPI_Waitany 4 calls (4 completions), MPI_Waitsome >= 1 (4 completions),
 *    MPI_Test / Testall / Testany / Testsome polling >= 1 call each (2 completions each;
 *    the calls that find nothing carry the no-match flag)
 *  probes: MPI_Iprobe >= 1 (the last finds partner p), MPI_Mprobe 1 + MPI_Mrecv 1,
 *    MPI_Improbe >= 1 + MPI_Imrecv 1 (its completion names p)
 *  send modes: MPI_Issend, MPI_Irsend, MPI_Ibsend 1 each (completed by MPI_Wait)
 *  collectives: MPI_Scatter, Scatterv, Gatherv, Allgatherv, Alltoallv, Reduce_scatter,
 *    Reduce_scatter_block, Scan, Exscan 1 each; MPI_Neighbor_allgather 1 and
 *    MPI_Ineighbor_alltoall 1 on a periodic 1-D Cartesian communicator (2 neighbours)
 *  communicators: MPI_Comm_dup 1, MPI_Cart_create 1, MPI_Comm_free 2
 *  MPI-IO: MPI_File_open 1, MPI_File_write_at 1 and MPI_File_read_at 1 of 4096 bytes,
 *    MPI_File_close 1: io_bytes_written = io_bytes_read = 4096 on every rank
 *  cancel: an MPI_Irecv that never matches, MPI_Cancel, MPI_Wait: a cancelled completion */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 64

static void pair_requests(MPI_Request *rq, int *a, int *b, int p, int tag0, int n) {
  for (int i = 0; i < n; ++i) MPI_Irecv(b + i * N, N, MPI_INT, p, tag0 + i, MPI_COMM_WORLD, &rq[i]);
  for (int i = 0; i < n; ++i) MPI_Isend(a + i * N, N, MPI_INT, p, tag0 + i, MPI_COMM_WORLD, &rq[n + i]);
}

// One straight sequence of calls, family after family: store_checks counts them in this order.
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, flag, idx, out, done, indices[4];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int p = rank ^ 1;
  static int a[4 * N], b[4 * N];
  MPI_Request rq[4];
  MPI_Status st[4];

  /* Waitany: 4 calls, one completion each */
  pair_requests(rq, a, b, p, 20, 2);
  for (int i = 0; i < 4; ++i) MPI_Waitany(4, rq, &idx, st);
  /* Waitsome until all 4 are done */
  pair_requests(rq, a, b, p, 22, 2);
  for (done = 0; done < 4; done += out) MPI_Waitsome(4, rq, &out, indices, st);
  /* Test on the receive, then Wait on the send */
  pair_requests(rq, a, b, p, 24, 1);
  do MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
  while (!flag);
  MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
  /* Testall */
  pair_requests(rq, a, b, p, 25, 1);
  do MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);
  while (!flag);
  /* Testany until both are done */
  pair_requests(rq, a, b, p, 26, 1);
  for (done = 0; done < 2;) {
    MPI_Testany(2, rq, &idx, &flag, MPI_STATUS_IGNORE);
    if (flag && idx != MPI_UNDEFINED) ++done;
  }
  /* Testsome until both are done */
  pair_requests(rq, a, b, p, 27, 1);
  for (done = 0; done < 2;) {
    MPI_Testsome(2, rq, &out, indices, MPI_STATUSES_IGNORE);
    if (out != MPI_UNDEFINED) done += out;
  }

  /* probes */
  MPI_Send(a, N, MPI_INT, p, 28, MPI_COMM_WORLD);
  do MPI_Iprobe(p, 28, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  while (!flag);
  MPI_Recv(b, N, MPI_INT, p, 28, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Message msg;
  MPI_Send(a, N, MPI_INT, p, 29, MPI_COMM_WORLD);
  MPI_Mprobe(MPI_ANY_SOURCE, 29, MPI_COMM_WORLD, &msg, &st[0]);
  MPI_Mrecv(b, N, MPI_INT, &msg, &st[0]);
  MPI_Send(a, N, MPI_INT, p, 30, MPI_COMM_WORLD);
  do MPI_Improbe(p, 30, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
  while (!flag);
  MPI_Imrecv(b, N, MPI_INT, &msg, &rq[0]);
  MPI_Wait(&rq[0], MPI_STATUS_IGNORE);

  /* nonblocking send modes */
  MPI_Irecv(b, N, MPI_INT, p, 31, MPI_COMM_WORLD, &rq[0]);
  MPI_Issend(a, N, MPI_INT, p, 31, MPI_COMM_WORLD, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  MPI_Irecv(b, N, MPI_INT, p, 32, MPI_COMM_WORLD, &rq[0]);
  MPI_Barrier(MPI_COMM_WORLD); /* both receives are posted: a ready send is legal */
  MPI_Irsend(a, N, MPI_INT, p, 32, MPI_COMM_WORLD, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  int bsize = N * sizeof(int) + MPI_BSEND_OVERHEAD;
  void *bbuf = malloc(bsize);
  MPI_Buffer_attach(bbuf, bsize);
  MPI_Irecv(b, N, MPI_INT, p, 33, MPI_COMM_WORLD, &rq[0]);
  MPI_Ibsend(a, N, MPI_INT, p, 33, MPI_COMM_WORLD, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  MPI_Buffer_detach(&bbuf, &bsize);
  free(bbuf);

  /* collectives with counts: 2 ints per rank */
  int two[8] = {0}, all[32] = {0}, counts[4] = {2, 2, 2, 2}, displs[4] = {0, 2, 4, 6};
  MPI_Scatter(all, 2, MPI_INT, two, 2, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Scatterv(all, counts, displs, MPI_INT, two, 2, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Gatherv(two, 2, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Allgatherv(two, 2, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
  MPI_Alltoallv(all, counts, displs, MPI_INT, b, counts, displs, MPI_INT, MPI_COMM_WORLD);
  MPI_Reduce_scatter(all, two, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce_scatter_block(all, two, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Scan(two, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Exscan(two, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  /* communicators and neighbourhood collectives */
  MPI_Comm dup, ring;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int dims[1] = {size}, periods[1] = {1};
  MPI_Cart_create(dup, 1, dims, periods, 0, &ring);
  int one = rank, two_in[2];
  MPI_Neighbor_allgather(&one, 1, MPI_INT, two_in, 1, MPI_INT, ring);
  MPI_Ineighbor_alltoall(two, 1, MPI_INT, two_in, 1, MPI_INT, ring, &rq[0]);
  MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
  MPI_Comm_free(&ring);
  MPI_Comm_free(&dup);

  /* MPI-IO: each rank writes and reads back its own 4 KiB block */
  char path[128];
  int pid = rank == 0 ? (int)getpid() : 0;
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "/tmp/perfsift-families2-%d", pid);
  MPI_File fh;
  static char block[4096];
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_write_at(fh, (MPI_Offset)rank * 4096, block, 4096, MPI_CHAR, MPI_STATUS_IGNORE);
  MPI_File_read_at(fh, (MPI_Offset)rank * 4096, block, 4096, MPI_CHAR, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);

  /* cancel a receive that never matches */
  MPI_Irecv(b, N, MPI_INT, p, 99, MPI_COMM_WORLD, &rq[0]);
  MPI_Cancel(&rq[0]);
  MPI_Wait(&rq[0], &st[0]);

  MPI_Finalize();
  return 0;
}
