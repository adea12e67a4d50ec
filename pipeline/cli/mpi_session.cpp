// MPI for the commands that run as MPI programs (analyze, synth, recover).
#include <mpi.h>

#include <cstdlib>

#include "pipeline/cli/commands.h"

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

}  // namespace perfsift::cli
