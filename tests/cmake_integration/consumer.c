/* Links the installed collector directly (no preload) and marks one region. */
#include <mpi.h>
#include <perfsift.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  perfsift_region_begin("consumer");
  MPI_Barrier(MPI_COMM_WORLD);
  perfsift_region_end("consumer");
  MPI_Finalize();
  return 0;
}
