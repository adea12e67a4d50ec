/* MPI calls through the program's own wrapper function, as codes that wrap MPI in a
 * library of their own do: exchange() is the only function that calls MPI_Allreduce, and
 * two solvers call it. Rank 1 computes 40 ms longer before each of the pressure solve's
 * 4 reductions (a sleep: oversubscription does not blur it); the velocity solve is
 * balanced. Known answer: the other ranks wait in the reductions solve_pressure makes
 * through exchange, not in solve_velocity's.
 * Linked with -rdynamic: exchange is in the dynamic symbol table, as a library's
 * exported function is. */
#include <mpi.h>
#include "common.h"

__attribute__((noinline)) void exchange(double *v) {
  MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

__attribute__((noinline)) void solve_pressure(int rank, double *p) {
  if (rank == 1) sleep_ms(40);
  exchange(p);
  __asm__ volatile("" ::: "memory");  // the call stays a call, not a tail jump
}

__attribute__((noinline)) void solve_velocity(int rank, double *u) {
  *u += rank;
  exchange(u);
  __asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  double p = 1, u = 2;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (int i = 0; i < 4; ++i) {
    solve_pressure(rank, &p);
    solve_velocity(rank, &u);
  }
  MPI_Finalize();
  return 0;
}
