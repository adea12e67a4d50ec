// MPI for the commands that run as MPI programs (analyze, synth, recover) and the microbenchmark workers (calibrate,
// train).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "pipeline/cli/commands.h"

// The launcher of the MPI perfsift is built against (top CMakeLists.txt), for the messages.
#ifndef PERFSIFT_LAUNCHER
#define PERFSIFT_LAUNCHER "mpirun"
#endif

namespace perfsift::cli {

void ensure_mpi() {
  int init = 0;
  MPI_Initialized(&init);
  if (init) return;
  MPI_Init(nullptr, nullptr);
  std::atexit([] {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
  });
}

bool start_pair_worker(const char *command, int &me, int &np) {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np >= 2) return true;
  std::fprintf(stderr, "perfsift: %s needs at least two ranks (-- " PERFSIFT_LAUNCHER " -n 2)\n", command);
  MPI_Finalize();
  return false;
}

}  // namespace perfsift::cli
