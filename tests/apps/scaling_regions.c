/* Three regions whose cost per rank grows with the rank count P as known terms (sleeps, so
 * that runs with more ranks than cores keep their times), for `perfsift scaling`:
 *   share   every rank, 5 + 800 / P ms: a fixed amount of work shared out (O(1/P));
 *   tree    every rank, 5 + 200 log2(P) ms: one step per level of a reduction tree (O(log P));
 *   gather  rank 0 alone, 5 + 80 P ms: a piece from every rank handled in turn (O(P)).
 * A barrier after each region, waited for in short sleeps: ranks that wait leave the cores to
 * the ones that sleep in a region, so that an oversubscribed run wakes them on time. */
#include <math.h>
#include <mpi.h>

#include "common.h"
#include "perfsift.h"

static void polite_barrier(void) {
  MPI_Request request;
  int done = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (MPI_Test(&request, &done, MPI_STATUS_IGNORE); !done; MPI_Test(&request, &done, MPI_STATUS_IGNORE)) sleep_ms(0.5);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  perfsift_region_begin("share");
  sleep_ms(5 + 800.0 / size);
  perfsift_region_end("share");
  polite_barrier();
  perfsift_region_begin("tree");
  sleep_ms(5 + 200 * log2((double)size));
  perfsift_region_end("tree");
  polite_barrier();
  if (rank == 0) {
    perfsift_region_begin("gather");
    sleep_ms(5 + 80.0 * size);
    perfsift_region_end("gather");
  }
  polite_barrier();
  MPI_Finalize();
  return 0;
}
