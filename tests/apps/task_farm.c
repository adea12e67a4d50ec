/* Task farm keeping two tasks in flight per worker: rank 0 prepares each task for 4 ms
 * and sends it with MPI_Isend (tag 1), twice per worker to start with; a worker computes
 * 8 ms per task and returns the result (tag 2, MPI_Isend), which is also its request for
 * the next task: the master takes results from MPI_ANY_SOURCE and answers each with a new
 * task, or, once NTASKS = 60 are handed out and the worker has none left, with a stop
 * (tag 3). Known answer: 5 workers could take a task every 1.6 ms, the master prepares one
 * every 4 ms: the master is the bottleneck; the workers wait on it (master_bottleneck and
 * master_setup together the largest causes, about 4 ms of setup per task). */
#include <mpi.h>
#include "common.h"

#define NTASKS 60
#define MAXRANKS 16

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank == 0) {
    static int tasks[NTASKS + MAXRANKS];
    static MPI_Request reqs[NTASKS + MAXRANKS];
    int outstanding[MAXRANKS] = {0};
    int next = 0, sent = 0, results = 0;
    for (int k = 0; k < 2; ++k)
      for (int w = 1; w < size && w < MAXRANKS && next < NTASKS; ++w) {
        sleep_ms(4.0);
        tasks[sent] = next++;
        MPI_Isend(&tasks[sent], 1, MPI_INT, w, 1, MPI_COMM_WORLD, &reqs[sent]);
        ++sent;
        ++outstanding[w];
      }
    while (results < NTASKS) {
      int result;
      MPI_Status st;
      MPI_Recv(&result, 1, MPI_INT, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &st);
      ++results;
      const int w = st.MPI_SOURCE;
      --outstanding[w];
      if (next < NTASKS) {
        sleep_ms(4.0);
        tasks[sent] = next++;
        MPI_Isend(&tasks[sent], 1, MPI_INT, w, 1, MPI_COMM_WORLD, &reqs[sent]);
        ++sent;
        ++outstanding[w];
      } else if (outstanding[w] == 0) {
        MPI_Isend(&tasks[sent], 0, MPI_INT, w, 3, MPI_COMM_WORLD, &reqs[sent]);
        ++sent;
      }
    }
    MPI_Waitall(sent, reqs, MPI_STATUSES_IGNORE);
  } else {
    int task, result = 0;
    MPI_Request r = MPI_REQUEST_NULL;
    for (;;) {
      MPI_Status st;
      MPI_Recv(&task, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == 3) break;
      sleep_ms(8.0);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      result = task;
      MPI_Isend(&result, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &r);
    }
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
