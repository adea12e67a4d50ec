/* Master-worker whose master setup grows with task size. Rank 0 hands out NTASKS = 12
 * tasks; task t has size s = 1 + t % 4. Before sending a task the master prepares it
 * for 4 s ms (region "master_setup"); a worker computes for 10 s ms (region
 * "worker_compute") and returns a result. Protocol: workers send a request (tag 1,
 * carrying the previous result), the master replies with a task (tag 2, 16 s ints) or a
 * stop message (tag 3). Known answer: the master sends 12 tasks and P - 1 stops and
 * receives 12 + P - 1 requests (MPI_ANY_SOURCE); the workers' compute totals
 * sum_t 10 s_t = 300 ms; the master's setup totals sum_t 4 s_t = 120 ms. */
#include <mpi.h>
#include <string.h>
#include "common.h"
#include "perfsift.h"

#define NTASKS 12

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int task[64], result = 0;
  MPI_Status st;
  if (rank == 0) {
    int next = 0, stopped = 0;
    while (stopped < size - 1) {
      MPI_Recv(&result, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st);
      if (next < NTASKS) {
        int s = 1 + next % 4;
        perfsift_region_begin("master_setup");
        sleep_ms(4.0 * s);
        for (int i = 0; i < 16 * s; ++i) task[i] = s;
        perfsift_region_end("master_setup");
        MPI_Send(task, 16 * s, MPI_INT, st.MPI_SOURCE, 2, MPI_COMM_WORLD);
        ++next;
      } else {
        MPI_Send(task, 0, MPI_INT, st.MPI_SOURCE, 3, MPI_COMM_WORLD);
        ++stopped;
      }
    }
  } else {
    for (;;) {
      MPI_Send(&result, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
      MPI_Recv(task, 64, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      if (st.MPI_TAG == 3) break;
      perfsift_region_begin("worker_compute");
      sleep_ms(10.0 * task[0]);
      result += task[0];
      perfsift_region_end("worker_compute");
    }
  }
  MPI_Finalize();
  return 0;
}
