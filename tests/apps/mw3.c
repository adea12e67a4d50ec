/* Master-worker with three messages per task: a worker asks for work (tag 1), rank 0
 * replies with a task (tag 2) or a stop (tag 3), the worker computes and returns the result
 * in a message of its own (tag 4); the master takes requests and results as they come
 * (MPI_ANY_SOURCE, MPI_ANY_TAG). NTASKS = 16 tasks; setting one up takes the master 1 ms;
 * a task computes 10 ms, except the last one handed out, 150 ms. Known answer: 2 messages
 * to the master for 1 from it per task, yet request and reply alternate (recognised as
 * master-worker, confidence >= 0.9); the injected cause is the long last task: the other
 * workers wait for it to finish (final_imbalance), the worst worker's largest cause. */
#include <mpi.h>
#include "common.h"

#define NTASKS 16

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int task = 0, result = 0, total = 0;
  MPI_Status st;
  if (rank == 0) {
    int next = 0, stopped = 0, results = 0;
    while (stopped < size - 1 || results < NTASKS) {
      int msg;
      MPI_Recv(&msg, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == 4) {
        total += msg;
        ++results;
      } else if (next < NTASKS) {
        sleep_ms(1.0);
        task = next == NTASKS - 1 ? 150 : 10;
        MPI_Send(&task, 1, MPI_INT, st.MPI_SOURCE, 2, MPI_COMM_WORLD);
        ++next;
      } else {
        MPI_Send(&task, 0, MPI_INT, st.MPI_SOURCE, 3, MPI_COMM_WORLD);
        ++stopped;
      }
    }
  } else {
    for (;;) {
      MPI_Send(&rank, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
      MPI_Recv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == 3) break;
      sleep_ms(task);
      result = task;
      MPI_Send(&result, 1, MPI_INT, 0, 4, MPI_COMM_WORLD);
    }
  }
  MPI_Finalize();
  return 0;
}
