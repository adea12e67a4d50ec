// perfsift: collect a trace store from an MPI run, inspect it, recover it after a crash.
// The subcommands and their options (one add_* each), and the dispatch to the chosen one.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>

#include "config/collect_config.h"
#include "io/trace_store.h"
#include "pipeline/cli/commands.h"
#include "pipeline/engine/check.h"

namespace {

using namespace perfsift;

// A subcommand and what runs it once the command line selected it.
struct Command {
  CLI::App *app;
  std::function<int()> run;
};
using Commands = std::vector<Command>;

// Each add_* registers one subcommand (or a command and its hidden worker) with its options.
void add_collect(CLI::App &app, Commands &commands) {
  auto co = std::make_shared<cli::CollectOptions>();
  auto *collect =
      app.add_subcommand("collect", "Run an MPI launcher with the collector preloaded and write one trace store");
  collect->add_option("-o,--output", co->output, "trace store to write")->capture_default_str();
  collect->add_option("-c,--config", co->config,
                      "collector configuration (TOML); keys:\n" + config::describe(config::collect_keys()));
  collect->add_option("launch", co->launch, "launcher and program after --, e.g. -- mpirun -n 4 ./app")->required();
  collect->positionals_at_end();
  commands.push_back({collect, [co] { return cli::run_collect(*co); }});
}

void add_info(CLI::App &app, Commands &commands) {
  auto io_opts = std::make_shared<cli::InfoOptions>();
  auto *info = app.add_subcommand(
      "info", "Summarise a trace store: ranks, duration, events per operation, regions, counters, unmatched messages");
  info->add_option("store", io_opts->store, "trace store")->required();
  info->add_flag("--json", io_opts->json, "machine-readable output");
  info->add_option("--resolve", io_opts->resolve_dir,
                   "resolve the call sites of stripped modules against debug symbols in this directory "
                   "(DIR/.build-id/xx/rest.debug, or a module of the same build-id in DIR), with addr2line")
      ->check(CLI::ExistingDirectory);
  commands.push_back({info, [io_opts] { return cli::run_info(*io_opts); }});
}

void add_recover(CLI::App &app, Commands &commands) {
  auto ro = std::make_shared<cli::RecoverOptions>();
  auto *recover =
      app.add_subcommand("recover", "Build a store, marked incomplete, from the spill files a crashed run left");
  recover->add_option("spill_dir", ro->spill_dir, "spill directory (OUTPUT.spill)")->required();
  recover->add_option("-o,--output", ro->output, "trace store to write")->required();
  commands.push_back({recover, [ro] { return cli::run_recover(*ro); }});
}

void add_analyze(CLI::App &app, Commands &commands) {
  auto ao = std::make_shared<cli::AnalyzeOptions>();
  auto *analyze = app.add_subcommand(
      "analyze",
      "Analyse a trace store with the stage pipeline; writes a results store (HDF5) and prints the top findings.\n"
      "Runs in parallel: mpirun -n K perfsift analyze STORE (or srun), K independent of the application's ranks");
  analyze->add_option("store", ao->store, "trace store written by perfsift collect (or synth)")->required();
  analyze->add_option("-c,--config", ao->config,
                      "pipeline file (TOML); `perfsift stages` lists stages and keys; none: defaults");
  analyze->add_option("-o,--output", ao->output, "results store to write (default: STORE-results.h5 beside the store)");
  analyze->add_option("--json", ao->json, "also write the JSON report here");
  analyze->add_option("--whatif", ao->whatif, "what-if question for the replay stage (repeatable)");
  analyze->add_option("--model", ao->model,
                      "force a program model for model-based diagnosis: master-worker, wavefront, none");
  analyze->add_option("--reference", ao->reference,
                      "a reference run's trace store: diagnose this run relative to it (scaling studies)");
  analyze->add_flag("--progress", ao->progress, "show progress on stderr even when it is not a terminal");
  commands.push_back({analyze, [ao] { return cli::run_analyze_input(*ao); }});
}

void add_import(CLI::App &app, Commands &commands) {
  auto io = std::make_shared<cli::ImportOptions>();
  auto *imp = app.add_subcommand("import", "Read an OTF2 archive (Score-P's traces.otf2) into a trace store");
  imp->add_option("archive", io->archive, "OTF2 anchor file, or the experiment directory holding it")->required();
  imp->add_option("-o,--output", io->output, "trace store to write")->required();
  commands.push_back({imp, [io] { return cli::run_import(*io); }});
}

void add_report(CLI::App &app, Commands &commands) {
  auto rpo = std::make_shared<cli::ReportOptions>();
  auto *report = app.add_subcommand("report", "Render a results store again: the text report, or the JSON report");
  report->add_option("results", rpo->results, "results store written by perfsift analyze")->required();
  report->add_option("--format", rpo->format, "text, json, or html (one self-contained page for a browser)")
      ->check(CLI::IsMember({"text", "json", "html"}))
      ->capture_default_str();
  report->add_option("-o,--output", rpo->output, "write to this file instead of stdout");
  commands.push_back({report, [rpo] { return cli::run_report(*rpo); }});
}

void add_compare(CLI::App &app, Commands &commands) {
  auto co = std::make_shared<cli::CompareOptions>();
  auto *compare = app.add_subcommand(
      "compare",
      "Did the fix pay? Compare runs before and after a change: program time and its noise, problems gone, "
      "persisting, new or moved, each fixed problem's predicted gain against the rerun, regions and MPI operations");
  compare->add_option("runs", co->runs,
                      "BEFORE AFTER: results stores, or trace stores / OTF2 archives (analysed first, results beside "
                      "them)");
  compare->add_option("--before", co->before, "several runs before the change (with --after)");
  compare->add_option("--after", co->after, "several runs after the change");
  compare->add_option("-c,--config", co->config, "pipeline file (TOML) for the inputs analysed first");
  compare->add_option("--json", co->json, "also write the comparison as JSON here");
  compare->add_option("--html", co->html, "also write the comparison as one self-contained HTML page here");
  compare
      ->add_option("--fail-if-slower", co->fail_if_slower_pct,
                   "exit 1 with one line when AFTER's program time is slower by more than PCT % and the noise")
      ->check(CLI::NonNegativeNumber);
  commands.push_back({compare, [co] { return cli::run_compare(*co); }});
}

void add_scaling(CLI::App &app, Commands &commands) {
  auto so = std::make_shared<cli::ScalingOptions>();
  auto *scaling = app.add_subcommand(
      "scaling",
      "How will it scale? Runs of one program at several rank counts: POP efficiencies across them, an Extra-P-style "
      "model of each region's and problem's time, predictions at larger counts, the region that breaks first");
  scaling
      ->add_option("runs", so->runs,
                   "two or more runs: results stores, or trace stores / OTF2 archives (analysed first, results beside "
                   "them)")
      ->required();
  scaling->add_option("--at", so->at, "predict for this rank count (repeatable; default: twice the largest measured)");
  scaling->add_option("-c,--config", so->config, "pipeline file (TOML) for the inputs analysed first");
  scaling->add_option("--json", so->json, "also write the models and predictions as JSON here");
  scaling->add_option("--html", so->html, "also write one self-contained HTML page here (efficiencies, plots)");
  commands.push_back({scaling, [so] { return cli::run_scaling(*so); }});
}

void add_export(CLI::App &app, Commands &commands) {
  auto eo = std::make_shared<cli::ExportOptions>();
  auto *exp = app.add_subcommand(
      "export",
      "Write a predicted trace (baseline replay or a user's what-if question) as Chrome trace JSON or OTF2, or a "
      "collected run as an OTF2 archive laid out as Score-P writes one");
  exp->add_option("results", eo->results,
                  "results store written by perfsift analyze, or trace store written by perfsift collect (the "
                  "measured run, --format otf2; perfsift analyze reads the archive back)")
      ->required();
  exp->add_option("--format", eo->format, "chrome (Perfetto) or otf2 (Vampir, otf2-print)")
      ->check(CLI::IsMember({"chrome", "otf2"}))
      ->capture_default_str();
  exp->add_option(
      "--question", eo->question,
      "row of whatif/questions, the question's text, or measured (the run as recorded); default: the baseline");
  exp->add_option("-o,--output", eo->output, "file (chrome) or directory (otf2) to write")->required();
  commands.push_back({exp, [eo] { return cli::run_export(*eo); }});
}

// calibrate, and the hidden calibrate-worker its launcher runs.
void add_calibrate(CLI::App &app, Commands &commands) {
  auto cao = std::make_shared<cli::CalibrateOptions>();
  auto *cal = app.add_subcommand(
      "calibrate",
      "Measure LogGPS parameters (L, o, g, G, S, s) with ping-pong microbenchmarks under the given launcher");
  cal->add_option("-o,--output", cao->output,
                  "parameter file to write (TOML; give it to the whatif stage as whatif.loggps)")
      ->required();
  cal->add_option("--repetitions", cao->repetitions, "round trips per message size")->capture_default_str();
  cal->add_option("launch", cao->launch, "launcher after --, e.g. -- mpirun -n 2")->required();
  cal->positionals_at_end();
  commands.push_back({cal, [cao] { return cli::run_calibrate(*cao); }});

  auto *cal_worker = app.add_subcommand("calibrate-worker", "");  // run by calibrate's launcher; hidden
  cal_worker->group("");
  cal_worker->add_option("-o,--output", cao->output)->required();
  cal_worker->add_option("--repetitions", cao->repetitions);
  commands.push_back({cal_worker, [cao] { return cli::run_calibrate_worker(*cao); }});
}

// train, and the hidden train-worker its launcher runs.
void add_train(CLI::App &app, Commands &commands) {
  auto to = std::make_shared<cli::TrainOptions>();
  auto *train = app.add_subcommand("train",
                                   "Run Vetter's microbenchmarks (one phase per class of late message) under the given "
                                   "launcher and learn the C4.5 message classifier the classify stage uses");
  train->add_option("-o,--output", to->output, "model file to write (give it to the classify stage as classify.model)")
      ->required();
  train->add_option("--trace", to->trace, "keep the microbenchmarks' trace store here");
  train->add_option("--max-elems", to->max_elems, "largest message in ints (sizes 1, 2, 4, ... up to it)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 26));
  train->add_option("--iterations", to->iterations, "transfers per size and class")
      ->capture_default_str()
      ->check(CLI::Range(2, 100000));
  train->add_option("--min-delay-us", to->min_delay_us, "smallest injected delay")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
  train->add_option("--delay-variance-us", to->delay_variance_us, "injected delays are min + variance * U[0,1)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
  train->add_option("--folds", to->folds, "cross-validation folds reported")
      ->capture_default_str()
      ->check(CLI::Range(2, 100));
  train->add_option("--seed", to->seed, "delay seed")->capture_default_str();
  train->add_option("launch", to->launch, "launcher after --, e.g. -- mpirun -n 2 (pairs of ranks exchange)")
      ->required();
  train->positionals_at_end();
  commands.push_back({train, [to] { return cli::run_train(*to); }});

  auto *train_worker = app.add_subcommand("train-worker", "");  // run by train's launcher; hidden
  train_worker->group("");
  train_worker->add_option("--max-elems", to->max_elems);
  train_worker->add_option("--iterations", to->iterations);
  train_worker->add_option("--min-delay-us", to->min_delay_us);
  train_worker->add_option("--delay-variance-us", to->delay_variance_us);
  train_worker->add_option("--seed", to->seed);
  commands.push_back({train_worker, [to] { return cli::run_train_worker(*to); }});
}

// stages, and config check.
void add_pipeline_help(CLI::App &app, Commands &commands) {
  auto *stages = app.add_subcommand("stages", "List every analysis stage with its description and configuration keys");
  commands.push_back({stages, [] { return cli::run_stages(); }});

  auto check_path = std::make_shared<std::string>();
  auto *config_cmd = app.add_subcommand("config", "Work with pipeline files");
  auto *config_check =
      config_cmd->add_subcommand("check", "Validate a pipeline file: unknown stages or keys, wrong types, ranges");
  config_check->add_option("file", *check_path, "pipeline file (TOML)")->required();
  config_cmd->require_subcommand(1);
  commands.push_back({config_check, [check_path] { return cli::run_config_check(*check_path); }});
}

void add_synth(CLI::App &app, Commands &commands) {
  auto so = std::make_shared<cli::SynthOptions>();
  auto *synth = app.add_subcommand(
      "synth",
      "Write a synthetic trace store of an SPMD program (per leaf region: computation, ring exchange; Allreduce per "
      "iteration) with chosen behaviour, to test analyses without counters or at scale. Runs in parallel under "
      "mpirun.");
  synth->add_option("-o,--output", so->output, "trace store to write")->required();
  synth->add_option("--ranks", so->ranks, "application ranks")->capture_default_str();
  synth
      ->add_option("--regions", so->regions,
                   "a count (64: 8 phases with kernels below them) or paths: solve,solve/smooth,io")
      ->capture_default_str();
  synth->add_option("--events-per-rank", so->events_per_rank, "MPI events per rank (rounded to whole iterations)")
      ->capture_default_str();
  synth->add_option("--message-bytes", so->message_bytes, "bytes of each ring message (network: 2 us + bytes / 5 GB/s)")
      ->capture_default_str();
  synth
      ->add_option("--startup", so->startup_s,
                   "seconds every rank spends in MPI_Init (launcher and wire-up: measured, not the program's)")
      ->capture_default_str();
  synth->add_option(
      "--inject", so->inject,
      "behaviour, repeatable: imbalance:region=P,ranks=0-3,factor=2 | late-sender:region=P,ranks=5,delay=0.002 | "
      "cache-miss:region=P,ranks=all,factor=10 | counter:name=PAPI_L2_TCM,region=P,ranks=0-3,rate=5e7 (per second of "
      "computation) | io:region=P,ranks=all,bytes=1e8 (file bytes written per iteration at 1 GB/s: wall time, no CPU) "
      "| "
      "missing:ranks=1");
  synth
      ->add_option(
          "--counters", so->counters,
          "counters to record, e.g. PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM,PAPI_L2_TCM; the "
          "usual four not listed are recorded as unavailable. Default rates per second of computation: 2.5e9 cycles, "
          "IPC 1.5, L1 misses 2% and L2 0.4% of instructions (cache-miss multiplies misses)")
      ->delimiter(',');
  synth->add_option("--seed", so->seed, "noise seed")->capture_default_str();
  commands.push_back({synth, [so] { return cli::run_synth(*so); }});
}

// Runs the command; an error becomes a message and the exit code that says whose it is.
int run_reporting_errors(const Command &command) {
  try {
    return command.run();
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
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "perfsift: automatic performance diagnosis of MPI programs.\n"
      "  perfsift collect -o run.h5 -- mpirun -n 4 ./app   record a run (no recompile)\n"
      "  perfsift info run.h5                              summarise a trace store\n"
      "  perfsift import traces.otf2 -o run.h5             a trace store from a Score-P OTF2 archive\n"
      "  perfsift recover run.h5.spill -o run.h5           rebuild a store after a crash\n"
      "  mpirun -n 2 perfsift analyze run.h5 -o res.h5     find, explain and price problems\n"
      "  perfsift report res.h5 --format json              render results again\n"
      "  perfsift compare before.h5 after.h5               did the fix pay? problems and predictions checked\n"
      "  perfsift scaling r1.h5 r2.h5 r4.h5 r8.h5 --at 64  how will it scale? models per region, what breaks first\n"
      "  perfsift export res.h5 --format chrome -o t.json  a predicted trace for Perfetto (or otf2 for Vampir)\n"
      "  perfsift export run.h5 --format otf2 -o run-otf2  the measured run as an OTF2 archive (as Score-P writes)\n"
      "  perfsift calibrate -o loggps.toml -- mpirun -n 2  measure LogGPS parameters for the replay\n"
      "  perfsift train -o classifier.model -- mpirun -n 2 learn what late messages look like here\n"
      "  perfsift stages | perfsift config check FILE      the analysis stages and their keys\n"
      "  perfsift synth -o big.h5 --ranks 1024 ...         a synthetic store with chosen behaviour"};
  app.require_subcommand(1);
  Commands commands;
  for (auto add : {add_collect, add_info, add_recover, add_analyze, add_report, add_compare, add_scaling, add_export,
                   add_calibrate, add_train, add_pipeline_help, add_synth, add_import})
    add(app, commands);

  CLI11_PARSE(app, argc, argv);
  for (const auto &command : commands)
    if (*command.app) return run_reporting_errors(command);
  return 0;
}
