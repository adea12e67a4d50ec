/* Intercommunicators: world splits into even and odd halves; an intercommunicator
 * joins them (leaders 0 and 1). Over it: one MPI_Bcast rooted at world rank 0 (MPI_ROOT
 * on rank 0, MPI_PROC_NULL on the other even ranks, 0 on the odd ranks), and a ring of
 * MPI_Send/MPI_Recv to the same-index rank of the other group. Then the intercommunicator
 * is merged. Known answer (4 ranks): MPI_Comm_split 1, MPI_Intercomm_create 1,
 * MPI_Intercomm_merge 1, MPI_Bcast 1, MPI_Send 1, MPI_Recv 1, MPI_Comm_free 3 per rank;
 * every Send/Recv peer is the world rank with the other parity and the same index
 * (0<->1, 2<->3); every rank sees the intercommunicator as the same /comms entry with
 * members of its own group and the other group as remote. */
#include <mpi.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, v = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm half, inter, merged;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
  int hr;
  MPI_Comm_rank(half, &hr);
  int root = rank % 2 ? 0 : (hr == 0 ? MPI_ROOT : MPI_PROC_NULL);
  MPI_Bcast(&v, 1, MPI_INT, root, inter);
  if (rank % 2 == 0) {
    MPI_Send(&v, 1, MPI_INT, hr, 1, inter);
    MPI_Recv(&v, 1, MPI_INT, hr, 2, inter, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&v, 1, MPI_INT, hr, 1, inter, MPI_STATUS_IGNORE);
    MPI_Send(&v, 1, MPI_INT, hr, 2, inter);
  }
  MPI_Intercomm_merge(inter, rank % 2, &merged);
  MPI_Comm_free(&merged);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
  MPI_Finalize();
  return 0;
}
