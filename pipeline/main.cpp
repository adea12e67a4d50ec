// perfsift: collect a trace store from an MPI run, inspect it, recover it after a crash.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "config/collect_config.h"
#include "io/trace_store.h"
#include "pipeline/commands.h"

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

int main(int argc, char **argv) {
  using namespace perfsift;
  CLI::App app{"perfsift: automatic performance diagnosis of MPI programs.\n"
               "  perfsift collect -o run.h5 -- mpirun -n 4 ./app   record a run (no recompile)\n"
               "  perfsift info run.h5                              summarise a trace store\n"
               "  perfsift recover run.h5.spill -o run.h5           rebuild a store after a crash"};
  app.require_subcommand(1);

  cli::CollectOptions co;
  auto *collect = app.add_subcommand("collect", "Run an MPI launcher with the collector preloaded and write one trace store");
  collect->add_option("-o,--output", co.output, "trace store to write")->capture_default_str();
  collect->add_option("-c,--config", co.config, "collector configuration (TOML); keys:\n" + config::describe(config::collect_keys()));
  collect->add_option("launch", co.launch, "launcher and program after --, e.g. -- mpirun -n 4 ./app")->required();
  collect->positionals_at_end();

  cli::InfoOptions io_opts;
  auto *info = app.add_subcommand("info", "Summarise a trace store: ranks, duration, events per operation, regions, counters, unmatched messages");
  info->add_option("store", io_opts.store, "trace store")->required();
  info->add_flag("--json", io_opts.json, "machine-readable output");

  cli::RecoverOptions ro;
  auto *recover = app.add_subcommand("recover", "Build a store, marked incomplete, from the spill files a crashed run left");
  recover->add_option("spill_dir", ro.spill_dir, "spill directory (OUTPUT.spill)")->required();
  recover->add_option("-o,--output", ro.output, "trace store to write")->required();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*collect) return cli::run_collect(co);
    if (*info) return cli::run_info(io_opts);
    if (*recover) return cli::run_recover(ro);
  } catch (const config::ConfigError &e) {
    std::fprintf(stderr, "perfsift: %s\n", e.what());
    return 2;
  } catch (const io::Error &e) {
    std::fprintf(stderr, "perfsift: %s\n", e.what());
    return 2;
  } catch (const std::exception &e) {  // bad input of another kind: also the user's to fix
    std::fprintf(stderr, "perfsift: %s\n", e.what());
    return 2;
  }
  return 0;
}
