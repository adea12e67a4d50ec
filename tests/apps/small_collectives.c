/* Collective-heavy: thousands of small Barrier, Allreduce and Bcast calls on the world and
 * on two sub-communicators from MPI_Comm_split (even and odd ranks; rows of two), with a
 * little computation between them. What it checks: the replay prices collectives as the
 * run performed them, so its baseline replay matches the program without calibration.
 * Arguments: iterations (default 3000). */
#include <mpi.h>
#include <stdlib.h>

static double work(int n, double x) {
  for (int i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int iterations = argc > 1 ? atoi(argv[1]) : 3000;
  MPI_Comm parity, pairs;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parity);
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pairs);
  double x = rank, sum[4] = {0, 0, 0, 0}, v[4];
  int root_value = 0;
  for (int i = 0; i < iterations; ++i) {
    x = work(200, x);
    for (int k = 0; k < 4; ++k) v[k] = x + k;
    MPI_Allreduce(v, sum, 1 + i % 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(v, sum, 2, MPI_DOUBLE, MPI_MAX, parity);
    root_value = i;
    MPI_Bcast(&root_value, 1, MPI_INT, 0, pairs);
    if (i % 4 == 0) MPI_Barrier(parity);
    if (i % 8 == 0) MPI_Barrier(MPI_COMM_WORLD);
    x += sum[0] * 1e-12 + root_value * 1e-15;
  }
  MPI_Comm_free(&parity);
  MPI_Comm_free(&pairs);
  MPI_Finalize();
  return x < 0; /* keeps the work */
}
