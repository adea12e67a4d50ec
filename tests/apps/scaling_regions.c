/* Three regions whose cost per rank grows with the rank count P as known terms (sleeps, so
 * that runs with more ranks than cores keep their times), for `perfsift scaling`:
 *   share   every rank, 5 + 400 / P ms: a fixed amount of work shared out (O(1/P));
 *   tree    every rank, 5 + 40 log2(P) ms: one step per level of a reduction tree (O(log P));
 *   gather  rank 0 alone, 5 + 20 P ms: a piece from every rank handled in turn (O(P)).
 * A barrier after each region. */
#include <math.h>
#include <mpi.h>

#include "common.h"
#include "perfsift.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  perfsift_region_begin("share");
  sleep_ms(5 + 400.0 / size);
  perfsift_region_end("share");
  MPI_Barrier(MPI_COMM_WORLD);
  perfsift_region_begin("tree");
  sleep_ms(5 + 40 * log2((double)size));
  perfsift_region_end("tree");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    perfsift_region_begin("gather");
    sleep_ms(5 + 20.0 * size);
    perfsift_region_end("gather");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
