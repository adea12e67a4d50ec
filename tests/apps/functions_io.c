/* Automatic function regions (-finstrument-functions) and file I/O accounting.
 * Built with -finstrument-functions; collected with regions.functions = true and
 * include = ["solve*", "smooth*"]. main calls solve() twice; solve() calls smooth()
 * three times and helper() (not included: no region) once, and does file I/O:
 * write(2) 1 MiB and fwrite 512 KiB to a temporary file, then read(2) 1 MiB back.
 * Known answer per rank: regions "solve" (2 visits) and "solve/smooth" (6 visits), no
 * "helper"; io_bytes_written(solve) = 2 x 1.5 MiB, io_bytes_read(solve) = 2 x 1 MiB;
 * the MPI_Allreduce in smooth() lies in region solve/smooth. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char block[1 << 20];

__attribute__((noinline)) static double helper(double x) { return x * 0.5; }

__attribute__((noinline)) void smooth(double *x) {
  double y = *x;
  MPI_Allreduce(&y, x, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

__attribute__((noinline)) void solve(int rank, double *x) {
  for (int i = 0; i < 3; ++i) smooth(x);
  *x = helper(*x);
  char path[64];
  snprintf(path, sizeof path, "/tmp/perfsift-io-%d-%d", (int)getpid(), rank);
  int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
  if (write(fd, block, sizeof block) != (ssize_t)sizeof block) abort();
  FILE *f = fdopen(dup(fd), "w");
  fwrite(block, 1, sizeof block / 2, f);
  fclose(f);
  lseek(fd, 0, SEEK_SET);
  if (read(fd, block, sizeof block) != (ssize_t)sizeof block) abort();
  close(fd);
  unlink(path);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  double x = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  memset(block, 'p', sizeof block);
  solve(rank, &x);
  solve(rank, &x);
  MPI_Finalize();
  return 0;
}
