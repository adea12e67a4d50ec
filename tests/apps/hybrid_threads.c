/* MPI from several threads of every rank: hybrid_threads [MODE [SCALE]].
 * MPI_Init_thread(MPI_THREAD_MULTIPLE); every rank runs 3 threads (the main one and two
 * pthreads), thread t exchanging with both ring neighbours on its own tag 100 + t:
 * 4 + 3t iterations of MPI_Isend to the next rank, MPI_Recv from the previous one and
 * MPI_Wait on the send. A request crosses threads: the main thread posts MPI_Irecv (tag
 * 200) before the others start, thread 2 completes it with MPI_Wait after its loop, once
 * it has sent the matching message (MPI_Send, tag 200) to the next rank. Then the threads
 * are joined, one MPI_Barrier (main thread), MPI_Finalize.
 * Known answer per rank and thread t (by tag): 4 + 3t MPI_Isend, MPI_Recv and MPI_Wait
 * on tag 100 + t; thread 2 also one MPI_Send and one MPI_Wait completing the main
 * thread's MPI_Irecv (tag 200); the main thread also MPI_Init_thread, MPI_Irecv,
 * MPI_Barrier, MPI_Finalize.
 * Rank 0's thread 1 computes 30 ms (a sleep) before its first send, so rank 1's thread 1
 * waits about 30 ms in its first MPI_Recv (tag 101): a late sender between two threads
 * that are not the main ones, which the replay must reproduce.
 * MODE crash: after the loops, rank 1's thread 1 writes through a null pointer while
 * rank 1's other threads are blocked in MPI_Recv (tag 300, never sent) and the other
 * ranks in MPI_Barrier (each tells it first, tag 400); the launcher ends them. Every completed call before the crash is
 * in the recovered store; the blocked calls are kept, marked interrupted.
 * SCALE (default 1) multiplies the iterations: with a small buffer, every thread spills. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kThreads = 3 };

static int g_rank, g_size, g_crash, g_scale = 1;
static MPI_Request g_cross; /* posted by the main thread, completed by thread 2 */
static pthread_barrier_t g_loops_done;
static volatile int g_zero = 0;

static void *work(void *arg) {
  const int t = (int)(intptr_t)arg;
  const int next = (g_rank + 1) % g_size, prev = (g_rank + g_size - 1) % g_size;
  const int n = (4 + 3 * t) * g_scale;
  int out = g_rank, in = -1;
  for (int i = 0; i < n; ++i) {
    MPI_Request send;
    if (g_rank == 0 && t == 1 && i == 0) usleep(30 * 1000);
    MPI_Isend(&out, 1, MPI_INT, next, 100 + t, MPI_COMM_WORLD, &send);
    MPI_Recv(&in, 1, MPI_INT, prev, 100 + t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&send, MPI_STATUS_IGNORE);
    if (in != prev) {
      fprintf(stderr, "rank %d thread %d: got %d from %d\n", g_rank, t, in, prev);
      exit(2);
    }
  }
  if (t == 2) {
    MPI_Send(&out, 1, MPI_INT, next, 200, MPI_COMM_WORLD);
    MPI_Wait(&g_cross, MPI_STATUS_IGNORE);
  }
  if (g_crash) {
    pthread_barrier_wait(&g_loops_done); /* every thread of the rank is past its loop */
    if (g_rank == 1 && t == 1) {
      /* Every other rank says it is about to enter MPI_Barrier (however loaded the
         machine, its loops are done); a moment later it is inside, as are this rank's
         other threads in MPI_Recv. */
      for (int k = 0; k < g_size - 1; ++k)
        MPI_Recv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 400, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      usleep(300 * 1000);
      *(volatile int *)(uintptr_t)g_zero = 1;
    }
    if (g_rank == 1) MPI_Recv(&in, 1, MPI_INT, prev, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    fprintf(stderr, "hybrid_threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
    MPI_Abort(MPI_COMM_WORLD, 77);
  }
  g_crash = argc > 1 && strcmp(argv[1], "crash") == 0;
  if (argc > 2 && atoi(argv[2]) > 0) g_scale = atoi(argv[2]);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  int cross_in = -1;
  MPI_Irecv(&cross_in, 1, MPI_INT, (g_rank + g_size - 1) % g_size, 200, MPI_COMM_WORLD, &g_cross);
  pthread_barrier_init(&g_loops_done, NULL, kThreads);
  pthread_t threads[kThreads];
  for (int t = 1; t < kThreads; ++t) pthread_create(&threads[t], NULL, work, (void *)(intptr_t)t);
  work((void *)0);
  if (g_crash && g_rank != 1) {
    MPI_Send(&g_rank, 1, MPI_INT, 1, 400, MPI_COMM_WORLD); /* rank 1 crashes once all are here */
    MPI_Barrier(MPI_COMM_WORLD);                           /* waits for rank 1, which dies */
  }
  for (int t = 1; t < kThreads; ++t) pthread_join(threads[t], NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
