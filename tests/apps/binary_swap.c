/* Binary-swap image compositing (PerWiz's second case study) with per-step imbalance.
 * P = 2^k ranks, an image of 2^16 floats. At stage s (step region "composite", steps
 * 0..k-1) rank r pairs with r XOR 2^s, swaps half of its current piece (MPI_Sendrecv)
 * and composites the half it keeps. Compositing time models transparent pixels:
 * (8 + 8 * (r % 3)) / 2^s ms, so ranks with r % 3 == 2 are slowest at every stage.
 * Known answer: k Sendrecv per rank, halving bytes: 2^17 bytes at stage 0, 2^16 at
 * stage 1, ...; k steps per rank; ranks with r % 3 == 0 wait longest in Sendrecv. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "common.h"
#include "perfsift.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size & (size - 1)) {
    if (rank == 0) fprintf(stderr, "binary_swap needs a power-of-two number of ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int n = 1 << 16;
  float *image = calloc(n, sizeof(float)), *in = calloc(n, sizeof(float));
  int piece = n;
  for (int s = 0; (1 << s) < size; ++s) {
    int partner = rank ^ (1 << s);
    piece /= 2;
    perfsift_step_begin("composite");
    MPI_Sendrecv(image, piece, MPI_FLOAT, partner, s, in, piece, MPI_FLOAT, partner, s, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    perfsift_region_begin("blend");
    sleep_ms((8.0 + 8.0 * (rank % 3)) / (1 << s));
    for (int i = 0; i < piece; ++i) image[i] += in[i];
    perfsift_region_end("blend");
    perfsift_step_end("composite");
  }
  free(image);
  free(in);
  MPI_Finalize();
  return 0;
}
