// The perfsift program's subcommands. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace perfsift::cli {

struct CollectOptions {
  std::string output = "perfsift-run.h5";
  std::string config;
  std::vector<std::string> launch;  // launcher and application, after `--`
};
int run_collect(const CollectOptions &o);

struct InfoOptions {
  std::string store;
  bool json = false;
};
int run_info(const InfoOptions &o);

struct RecoverOptions {
  std::string spill_dir;
  std::string output;
};
int run_recover(const RecoverOptions &o);

// Absolute path of the collector library next to this program (build or install tree).
std::string collector_library();

// Lazily initialises MPI for commands that need it (recover, analyze); finalised at exit.
void ensure_mpi();

}  // namespace perfsift::cli
