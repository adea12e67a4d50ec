// The perfsift program's subcommands. Each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfsift::io {
struct AbortRecord;
struct CallSite;
}  // namespace perfsift::io

namespace perfsift::cli {

struct CollectOptions {
  std::string output = "perfsift-run.h5";
  std::string config;
  std::vector<std::string> launch;  // launcher and application, after `--`
};
int run_collect(const CollectOptions &o);
// Runs a program (argv[0] looked up in PATH) and returns its exit code (128 + signal).
int run_command(std::vector<std::string> argv);

struct CalibrateOptions {
  std::string output;
  int repetitions = 200;
  std::vector<std::string> launch;  // launcher after `--`, e.g. mpirun -n 2
};
int run_calibrate(const CalibrateOptions &o);
// The measuring side, run by the launcher on two ranks.
int run_calibrate_worker(const CalibrateOptions &o);
// Microbenchmarks (calibrate, train) measure the machine only when their ranks have cores
// to themselves. Warns on stderr when over 10 % of the small transfers timed (seconds) took
// over ten times, and 100 us more than, the fastest: those ranks waited for a core.
// Returns whether it warned.
bool warn_if_cores_were_busy(const char *command, const char *what, const std::vector<double> &seconds);

struct TrainOptions {
  std::string output;
  std::string trace;            // keep the microbenchmark's trace here (default: discarded)
  int64_t max_elems = 1 << 20;  // largest message, in ints (the paper's 4 MB)
  int iterations = 20;          // per size and phase (normal: twice)
  double min_delay_us = 500, delay_variance_us = 1500;
  int folds = 10;
  long seed = 1;
  std::vector<std::string> launch;  // launcher after `--`, e.g. mpirun -n 2
};
// Vetter's modelling phase: microbenchmarks under the collector, then a C4.5 tree.
int run_train(const TrainOptions &o);
int run_train_worker(const TrainOptions &o);

struct InfoOptions {
  std::string store;
  bool json = false;
  std::string resolve_dir;  // debug symbols to resolve stripped call sites against
};
int run_info(const InfoOptions &o);
// The call sites without a source line, resolved against o.resolve_dir by build-id.
int print_resolved_sites(const InfoOptions &o);
// A program's end by MPI_Abort in one phrase, its call site named from `sites`: "rank 1
// called MPI_Abort with error code 7 at main (solver.c:23), 0.352 s into the run".
std::string abort_phrase(const io::AbortRecord &abort, const std::vector<io::CallSite> &sites);

struct RecoverOptions {
  std::string spill_dir;
  std::string output;
};
int run_recover(const RecoverOptions &o);

// perfsift analyze's exit code for a store whose program ended by MPI_Abort: the report is
// written, and covers the run up to the abort (docs/crashes.md).
inline constexpr int kExitProgramAborted = 4;

struct AnalyzeOptions {
  std::string store;
  std::string config;
  std::string output;  // default: STORE-results.h5 beside the store
  std::string json;
  std::vector<std::string> whatif;
  std::string model;
  std::string reference;  // a reference run for relative diagnosis
  bool progress = false;
  bool print_report = true;  // the text report on stdout (compare analyses quietly)
};
int run_analyze(const AnalyzeOptions &o);
// analyze of a trace store, or of an OTF2 archive through a temporary store (import.cpp).
int run_analyze_input(const AnalyzeOptions &o);

struct ImportOptions {
  std::string archive;  // OTF2 anchor file or the directory holding it
  std::string output;
};
int run_import(const ImportOptions &o);

struct CompareOptions {
  std::vector<std::string> runs;           // BEFORE AFTER
  std::vector<std::string> before, after;  // several runs per side
  std::string config;                      // pipeline file for inputs analysed first
  std::string json;
  std::string html;                // a self-contained page
  double fail_if_slower_pct = -1;  // < 0: no gate
};
// Each input a results store, or a trace store or OTF2 archive analysed first (its results
// beside it, reused while newer than it). Exit code 1 when the gate fails.
int run_compare(const CompareOptions &o);
// The results store `perfsift analyze INPUT` writes when not told where.
std::string default_results(const std::string &input);
// Whether `input` is a results store (else a trace store or OTF2 archive to analyse first).
bool is_results_store(const std::string &input);
// The results of a trace store or OTF2 archive, as compare and scaling take them: its results
// beside it while newer than it (and no pipeline file given), else analysed there now.
// Collective: every process analyses. Empty when the analysis failed (it said why).
std::string results_of(const std::string &input, const std::string &config, int me);

struct ScalingOptions {
  std::vector<std::string> runs;  // results stores, trace stores or OTF2 archives
  std::string config;             // pipeline file for inputs analysed first
  std::vector<int64_t> at;        // rank counts to predict for (default: twice the largest measured)
  std::string json;
  std::string html;
};
// How will it scale? Models per region across runs at several rank counts (docs/scaling-models.md).
int run_scaling(const ScalingOptions &o);

struct ReportOptions {
  std::string results;
  std::string format = "text";
  std::string output;
};
int run_report(const ReportOptions &o);

struct ExportOptions {
  std::string results;            // a results store (predicted traces) or a trace store (the measured run, otf2 only)
  std::string format = "chrome";  // chrome | otf2
  std::string question;           // row number or text; empty: the baseline
  std::string output;
};
int run_export(const ExportOptions &o);
int run_stages();
int run_config_check(const std::string &path);

struct SynthOptions {
  std::string output;
  int32_t ranks = 4;
  std::string regions = "8";
  int64_t events_per_rank = 1000;
  int64_t message_bytes = 8192;
  double startup_s = 1e-3;  // MPI_Init's duration on every rank
  std::vector<std::string> inject;
  std::vector<std::string> counters;
  uint64_t seed = 1;
};
int run_synth(const SynthOptions &o);

// Absolute path of the collector library next to this program (build or install tree).
std::string collector_library();

// Lazily initialises MPI for commands that need it (recover, analyze); finalised at exit.
void ensure_mpi();
// A microbenchmark worker's start (calibrate, train): MPI_Init and this rank's place;
// false, with MPI finalised and the reason said, when the job has fewer than two ranks.
bool start_pair_worker(const char *command, int &me, int &np);

}  // namespace perfsift::cli
