// perfsift: collect a trace store from an MPI run, inspect it, recover it after a crash.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "config/collect_config.h"
#include "io/trace_store.h"
#include "pipeline/cli/commands.h"
#include "pipeline/engine/check.h"


int main(int argc, char **argv) {
  using namespace perfsift;
  CLI::App app{"perfsift: automatic performance diagnosis of MPI programs.\n"
               "  perfsift collect -o run.h5 -- mpirun -n 4 ./app   record a run (no recompile)\n"
               "  perfsift info run.h5                              summarise a trace store\n"
               "  perfsift recover run.h5.spill -o run.h5           rebuild a store after a crash\n"
               "  mpirun -n 2 perfsift analyze run.h5 -o res.h5     find, explain and price problems\n"
               "  perfsift report res.h5 --format json              render results again\n"
               "  perfsift export res.h5 --format chrome -o t.json  a predicted trace for Perfetto (or otf2 for Vampir)\n"
               "  perfsift calibrate -o loggps.toml -- mpirun -n 2  measure LogGPS parameters for the replay\n"
               "  perfsift train -o classifier.model -- mpirun -n 2 learn what late messages look like here\n"
               "  perfsift stages | perfsift config check FILE      the analysis stages and their keys\n"
               "  perfsift synth -o big.h5 --ranks 1024 ...         a synthetic store with chosen behaviour"};
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

  cli::AnalyzeOptions ao;
  auto *analyze = app.add_subcommand("analyze",
      "Analyse a trace store with the stage pipeline; writes a results store (HDF5) and prints the top findings.\n"
      "Runs in parallel: mpirun -n K perfsift analyze STORE (or srun), K independent of the application's ranks");
  analyze->add_option("store", ao.store, "trace store written by perfsift collect (or synth)")->required();
  analyze->add_option("-c,--config", ao.config, "pipeline file (TOML); `perfsift stages` lists stages and keys; none: defaults");
  analyze->add_option("-o,--output", ao.output, "results store to write (default: STORE-results.h5 beside the store)");
  analyze->add_option("--json", ao.json, "also write the JSON report here");
  analyze->add_option("--whatif", ao.whatif, "what-if question for the replay stage (repeatable)");
  analyze->add_option("--model", ao.model, "force a program model for model-based diagnosis: master-worker, wavefront, none");
  analyze->add_option("--reference", ao.reference, "a reference run's trace store: diagnose this run relative to it (scaling studies)");
  analyze->add_flag("--progress", ao.progress, "show progress on stderr even when it is not a terminal");

  cli::ReportOptions rpo;
  auto *report = app.add_subcommand("report", "Render a results store again: the text report, or the JSON report");
  report->add_option("results", rpo.results, "results store written by perfsift analyze")->required();
  report->add_option("--format", rpo.format, "text, json, or html (one self-contained page for a browser)")->check(CLI::IsMember({"text", "json", "html"}))->capture_default_str();
  report->add_option("-o,--output", rpo.output, "write to this file instead of stdout");

  cli::ExportOptions eo;
  auto *exp = app.add_subcommand("export", "Write a predicted trace (baseline replay or a user's what-if question) as Chrome trace JSON or OTF2");
  exp->add_option("results", eo.results, "results store written by perfsift analyze")->required();
  exp->add_option("--format", eo.format, "chrome (Perfetto) or otf2 (Vampir, otf2-print)")->check(CLI::IsMember({"chrome", "otf2"}))->capture_default_str();
  exp->add_option("--question", eo.question, "row of whatif/questions, the question's text, or measured (the run as recorded); default: the baseline");
  exp->add_option("-o,--output", eo.output, "file (chrome) or directory (otf2) to write")->required();

  cli::CalibrateOptions cao;
  auto *cal = app.add_subcommand("calibrate", "Measure LogGPS parameters (L, o, g, G, S, s) with ping-pong microbenchmarks under the given launcher");
  cal->add_option("-o,--output", cao.output, "parameter file to write (TOML; give it to the whatif stage as whatif.loggps)")->required();
  cal->add_option("--repetitions", cao.repetitions, "round trips per message size")->capture_default_str();
  cal->add_option("launch", cao.launch, "launcher after --, e.g. -- mpirun -n 2")->required();
  cal->positionals_at_end();

  auto *cal_worker = app.add_subcommand("calibrate-worker", "");  // run by calibrate's launcher; hidden
  cal_worker->group("");
  cal_worker->add_option("-o,--output", cao.output)->required();
  cal_worker->add_option("--repetitions", cao.repetitions);

  cli::TrainOptions to;
  auto *train = app.add_subcommand("train", "Run Vetter's microbenchmarks (one phase per class of late message) under the given "
                                            "launcher and learn the C4.5 message classifier the classify stage uses");
  train->add_option("-o,--output", to.output, "model file to write (give it to the classify stage as classify.model)")->required();
  train->add_option("--trace", to.trace, "keep the microbenchmarks' trace store here");
  train->add_option("--max-elems", to.max_elems, "largest message in ints (sizes 1, 2, 4, ... up to it)")->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{1} << 26));
  train->add_option("--iterations", to.iterations, "transfers per size and class")->capture_default_str()->check(CLI::Range(2, 100000));
  train->add_option("--min-delay-us", to.min_delay_us, "smallest injected delay")->capture_default_str()->check(CLI::Range(0.0, 1e7));
  train->add_option("--delay-variance-us", to.delay_variance_us, "injected delays are min + variance * U[0,1)")->capture_default_str()->check(CLI::Range(0.0, 1e7));
  train->add_option("--folds", to.folds, "cross-validation folds reported")->capture_default_str()->check(CLI::Range(2, 100));
  train->add_option("--seed", to.seed, "delay seed")->capture_default_str();
  train->add_option("launch", to.launch, "launcher after --, e.g. -- mpirun -n 2 (pairs of ranks exchange)")->required();
  train->positionals_at_end();

  auto *train_worker = app.add_subcommand("train-worker", "");  // run by train's launcher; hidden
  train_worker->group("");
  train_worker->add_option("--max-elems", to.max_elems);
  train_worker->add_option("--iterations", to.iterations);
  train_worker->add_option("--min-delay-us", to.min_delay_us);
  train_worker->add_option("--delay-variance-us", to.delay_variance_us);
  train_worker->add_option("--seed", to.seed);

  auto *stages = app.add_subcommand("stages", "List every analysis stage with its description and configuration keys");

  std::string check_path;
  auto *config_cmd = app.add_subcommand("config", "Work with pipeline files");
  auto *config_check = config_cmd->add_subcommand("check", "Validate a pipeline file: unknown stages or keys, wrong types, ranges");
  config_check->add_option("file", check_path, "pipeline file (TOML)")->required();
  config_cmd->require_subcommand(1);

  cli::SynthOptions so;
  auto *synth = app.add_subcommand("synth",
      "Write a synthetic trace store of an SPMD program (per leaf region: computation, ring exchange; Allreduce per "
      "iteration) with chosen behaviour, to test analyses without counters or at scale. Runs in parallel under mpirun.");
  synth->add_option("-o,--output", so.output, "trace store to write")->required();
  synth->add_option("--ranks", so.ranks, "application ranks")->capture_default_str();
  synth->add_option("--regions", so.regions, "a count (64: 8 phases with kernels below them) or paths: solve,solve/smooth,io")->capture_default_str();
  synth->add_option("--events-per-rank", so.events_per_rank, "MPI events per rank (rounded to whole iterations)")->capture_default_str();
  synth->add_option("--message-bytes", so.message_bytes, "bytes of each ring message (network: 2 us + bytes / 5 GB/s)")->capture_default_str();
  synth->add_option("--inject", so.inject,
      "behaviour, repeatable: imbalance:region=P,ranks=0-3,factor=2 | late-sender:region=P,ranks=5,delay=0.002 | "
      "cache-miss:region=P,ranks=all,factor=10 | counter:name=PAPI_L2_TCM,region=P,ranks=0-3,rate=5e7 (per second of "
      "computation) | io:region=P,ranks=all,bytes=1e8 (file bytes written per iteration at 1 GB/s: wall time, no CPU) | "
      "missing:ranks=1");
  synth->add_option("--counters", so.counters, "counters to record, e.g. PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM,PAPI_L2_TCM; the "
      "usual four not listed are recorded as unavailable. Default rates per second of computation: 2.5e9 cycles, "
      "IPC 1.5, L1 misses 2% and L2 0.4% of instructions (cache-miss multiplies misses)")->delimiter(',');
  synth->add_option("--seed", so.seed, "noise seed")->capture_default_str();

  CLI11_PARSE(app, argc, argv);
  try {
    if (*collect) return cli::run_collect(co);
    if (*info) return cli::run_info(io_opts);
    if (*recover) return cli::run_recover(ro);
    if (*analyze) return cli::run_analyze(ao);
    if (*report) return cli::run_report(rpo);
    if (*exp) return cli::run_export(eo);
    if (*cal) return cli::run_calibrate(cao);
    if (*cal_worker) return cli::run_calibrate_worker(cao);
    if (*train) return cli::run_train(to);
    if (*train_worker) return cli::run_train_worker(to);
    if (*stages) return cli::run_stages();
    if (*config_check) return cli::run_config_check(check_path);
    if (*synth) return cli::run_synth(so);
  } catch (const perfsift::InternalError &e) {  // a bug, not the user's to fix: its own exit code
    std::fprintf(stderr, "perfsift: %s\n", e.what());
    return perfsift::kExitInternalError;
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
