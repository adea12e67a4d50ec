// perfsift analyze: the distributed analysis. K processes (mpirun/srun -n K, OpenMP
// inside) each own a contiguous block of application ranks, run the configured stages
// in order, and write one results store; rank 0 prints the text report from it.
#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <memory>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <sstream>

#include "io/checksum.h"
#include "pipeline/engine/heap.h"
#include "pipeline/engine/plan_executor.h"
#include "pipeline/cli/commands.h"
#include "pipeline/engine/check.h"
#include "pipeline/engine/problems.h"
#include "pipeline/format/text.h"
#include "pipeline/report/report.h"
#include "pipeline/stages/registry.h"
#include "pipeline/knowledge/knowledge_base.h"
#include "pipeline/classifier/trained_classifier.h"
#include "pipeline/whatif/questions.h"

namespace fs = std::filesystem;

namespace perfsift::cli {

namespace {

std::string effective_config(const config::Values &v) {
  std::ostringstream os;
  for (const auto &d : pipeline::pipeline_keys()) {
    const std::string &k = d.key;
    config::Value val;
    switch (d.type) {
      case config::Type::Bool:
        val = v.get_bool(k);
        break;
      case config::Type::Int:
        val = v.get_int(k);
        break;
      case config::Type::Float:
        val = v.get_float(k);
        break;
      case config::Type::String:
        val = v.get_string(k);
        break;
      case config::Type::StringList:
        val = v.get_list(k);
        break;
    }
    os << k << " = " << config::to_string(val) << "\n";
  }
  return os.str();
}

std::string checksum(MPI_Comm comm, const std::string &path) {
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  const int64_t size = io::file_size(path);
  const int64_t blocks = (size + io::kChecksumBlockBytes - 1) / io::kChecksumBlockBytes;
  std::vector<uint64_t> h(static_cast<size_t>(blocks), 0);
  for (int64_t b = me; b < blocks; b += np) h[b] = io::hash_block(path, b);
  MPI_Allreduce(MPI_IN_PLACE, h.data(), static_cast<int>(blocks), MPI_UINT64_T, MPI_BOR, comm);
  return io::format_checksum(io::combine_block_hashes(h.data(), blocks, size));
}

std::vector<int64_t> as64(const std::vector<int32_t> &v) { return {v.begin(), v.end()}; }

// A command-line option that sets a stage's key needs that stage in the pipeline.
void require_stage(const config::Values &cfg, const char *option, const std::string &stage) {
  const auto &stages = cfg.get_list("pipeline.stages");
  if (std::find(stages.begin(), stages.end(), stage) == stages.end())
    throw std::runtime_error(std::string(option) + ": the pipeline's stages (" + cfg.where("pipeline.stages") +
                             ") do not include " + stage + "; add it to pipeline.stages");
}

// The pipeline file (or the defaults) with the command line's settings on top.
config::Values load_config(const AnalyzeOptions &o) {
  config::Values cfg = pipeline::load_pipeline(o.config, config::process_environment());
  if (!o.whatif.empty()) {
    require_stage(cfg, "--whatif", "whatif");
    auto questions = cfg.get_list("whatif.questions");
    questions.insert(questions.end(), o.whatif.begin(), o.whatif.end());
    cfg.set("whatif.questions", questions, "command line --whatif");
  }
  if (!o.model.empty()) {
    require_stage(cfg, "--model", "diagnosis");
    cfg.set("diagnosis.model", o.model, "command line --model");
  }
  if (!o.reference.empty()) {
    require_stage(cfg, "--reference", "diagnosis");
    cfg.set("diagnosis.reference", o.reference, "command line --reference");
  }
  return cfg;
}

// Runs one set-up step on every process and tells whether it succeeded on all (collective).
// Rank 0 says why not: its own error, or that another rank failed.
bool all_fine(MPI_Comm comm, const char *elsewhere, const std::function<void()> &step) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  std::string error;
  try {
    step();
  } catch (const std::exception &e) {
    error = e.what();
  }
  int bad = !error.empty(), any_bad = 0;
  MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
  if (any_bad && me == 0) std::fprintf(stderr, "perfsift: %s\n", bad ? error.c_str() : elsewhere);
  return !any_bad;
}

// What the analysis works from, once set up.
struct Analysis {
  config::Values cfg;
  std::unique_ptr<io::TraceStore> store;
  std::vector<pipeline::PlanStep> plan;
  std::string output;  // the results store
};

// OpenMP threads per analysis rank: the setting, else OMP_NUM_THREADS, else the cores this
// process may run on, shared with the node's other analysis ranks on them. The runtime's
// default starts a thread per core in every rank: 16 ranks on a 16-core node ran 256
// threads, and a 10^7-event analysis did not finish in 400 s.
int analysis_threads(MPI_Comm comm, int64_t setting) {
  if (setting > 0) return static_cast<int>(setting);
  if (const char *env = std::getenv("OMP_NUM_THREADS"); env && *env) return omp_get_max_threads();
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return omp_get_max_threads();
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int on_node = 1;
  MPI_Comm_size(node, &on_node);
  cpu_set_t all;
  MPI_Allreduce(&mine, &all, static_cast<int>(sizeof mine), MPI_BYTE, MPI_BOR, node);
  MPI_Comm_free(&node);
  return std::max(1, std::min(CPU_COUNT(&mine), CPU_COUNT(&all) / on_node));
}

// Every process checks the same inputs; all agree before any collective work. False when
// the analysis cannot start (rank 0 said why).
bool set_up(const AnalyzeOptions &o, MPI_Comm comm, Analysis &a) {
  if (!all_fine(comm, "the pipeline could not be read on every analysis rank", [&] { a.cfg = load_config(o); }))
    return false;
  if (!all_fine(comm, "the store could not be opened on every analysis rank",
                [&] { a.store = std::make_unique<io::TraceStore>(o.store, comm); }))
    return false;
  // Each stage checks its settings against the store before any work (what-if questions,
  // the diagnosis model and knowledge base, the classifier model): a wrong name or file
  // stops here, not after the other stages' work.
  if (!all_fine(comm, "a what-if question or the classifier model could not be read on every analysis rank", [&] {
        a.plan = pipeline::plan_pipeline(a.cfg);
        for (const auto &step : a.plan)
          if (step.stage && step.stage->check) step.stage->check(a.cfg, *a.store);
      }))
    return false;
  a.output = o.output.empty() ? default_results(o.store) : o.output;
  if (fs::exists(a.output) && fs::equivalent(a.output, o.store)) {
    int me = 0;
    MPI_Comm_rank(comm, &me);
    if (me == 0)
      std::fprintf(stderr, "perfsift: %s: the results file would overwrite the input store; choose another -o\n",
                   a.output.c_str());
    return false;
  }
  omp_set_num_threads(analysis_threads(comm, a.cfg.get_int("analysis.threads")));
  return true;
}

// What the results cannot cover: lost or truncated ranks, a recovered store.
std::vector<std::string> store_warnings(const io::RunInfo &run) {
  std::vector<std::string> warnings;
  if (!run.missing_ranks.empty())
    warnings.push_back("ranks " + kernels::format_ranges(kernels::to_ranges(run.missing_ranks)) +
                       " have no data (lost in a crash); results cover the other " +
                       std::to_string(run.nranks - static_cast<int32_t>(run.missing_ranks.size())) + " ranks");
  if (!run.truncated_ranks.empty())
    warnings.push_back("ranks " + kernels::format_ranges(kernels::to_ranges(run.truncated_ranks)) +
                       " stop early (no MPI_Finalize): their data ends where they died");
  if (run.incomplete)
    warnings.push_back("the store is marked incomplete (rebuilt by `perfsift recover` after a crash)");
  return warnings;
}

// The results store's root attributes: its source, configuration and report settings.
void write_metadata(io::ResultsWriter &writer, const std::string &store, const std::string &sum,
                    const config::Values &cfg) {
  writer.attribute("", "source_store", fs::absolute(store).lexically_normal().string());
  writer.attribute("", "source_checksum", sum);
  writer.attribute("", "source_checksum_algorithm", std::string(io::kChecksumAlgorithm));
  writer.attribute("", "configuration", cfg.source_text);
  writer.attribute("", "configuration_effective", effective_config(cfg));
  writer.attribute("", "stages", cfg.get_list("pipeline.stages"));
  writer.attribute("", "report_top", cfg.get_int("report.top"));
  writer.attribute("", "report_json_max_rows", cfg.get_int("report.json_max_rows"));
  writer.attribute("", "report_width", cfg.get_int("report.width"));
  writer.attribute("", "perfsift_version", std::string(PERFSIFT_VERSION));
}

// The /run group: the analysed run, from the trace store.
void write_run(io::ResultsWriter &writer, const pipeline::Context &ctx, const io::TraceStore &store) {
  const auto &run = store.run();
  writer.group("run", "the analysed run, from the trace store");
  writer.attribute("run", "ranks", static_cast<int64_t>(run.nranks));
  writer.attribute("run", "wall_time_s", ctx.wall_time_s());
  // The program proper (shares and percentages), and what start-up and shut-down took.
  writer.attribute("run", "program_time_s", ctx.program_time_s());
  writer.attribute("run", "program_start_s", ctx.program().start_s);
  writer.attribute("run", "startup_s", ctx.program().startup_s());
  writer.attribute("run", "shutdown_s", ctx.program().shutdown_s());
  writer.attribute("run", "command", run.command);
  writer.attribute("run", "start_time", run.start_time);
  writer.attribute("run", "mpi_library", run.mpi_library);
  writer.attribute("run", "hosts", run.hostname_list);
  writer.attribute("run", "counters_recorded", run.counters_recorded);
  writer.attribute("run", "counters_unavailable", run.counters_unavailable);
  writer.attribute("run", "missing_ranks", as64(run.missing_ranks));
  writer.attribute("run", "truncated_ranks", as64(run.truncated_ranks));
  writer.attribute("run", "incomplete", static_cast<int64_t>(run.incomplete));
  writer.attribute("run", "events", store.event_offsets().back());
}

// The program's end by MPI_Abort: the earliest among every process's ranks (collective).
io::AbortRecord program_abort(MPI_Comm comm, const pipeline::Context &ctx, const io::TraceStore &store) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  const io::AbortRecord mine = io::find_abort(store.ops(), store.rank_ends(ctx.first(), ctx.last()), ctx.first());
  struct {
    double t;
    int process;
  } earliest{mine.rank >= 0 ? static_cast<double>(mine.t_ns) : HUGE_VAL, me}, found{};
  MPI_Allreduce(&earliest, &found, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm);
  int calling = mine.ranks, all_calling = 0;
  MPI_Allreduce(&calling, &all_calling, 1, MPI_INT, MPI_SUM, comm);
  if (found.t == HUGE_VAL) return {};
  io::AbortRecord abort = mine;
  MPI_Bcast(&abort, sizeof abort, MPI_BYTE, found.process, comm);
  abort.ranks = all_calling;
  return abort;
}

// /run's record of an MPI_Abort (abort_rank -1: the program did not abort).
void write_abort(io::ResultsWriter &writer, const io::AbortRecord &abort, const io::TraceStore &store) {
  writer.attribute("run", "abort_rank", static_cast<int64_t>(abort.rank));
  if (abort.rank < 0) return;
  writer.attribute("run", "aborted", abort_phrase(abort, store.callsites()));
  writer.attribute("run", "abort_error_code", static_cast<int64_t>(abort.error_code));
  writer.attribute("run", "abort_place", pipeline::site_label(store.callsites(), abort.callsite));
  writer.attribute("run", "abort_time_s", abort.t_ns * 1e-9);
  writer.attribute("run", "abort_ranks_calling", static_cast<int64_t>(abort.ranks));
}

// The whole analysis into the results store (collective).
io::AbortRecord analyze(const AnalyzeOptions &o, MPI_Comm comm, const Analysis &a,
                        const std::vector<std::string> &warnings, pipeline::Progress &progress) {
  progress.begin("checksum of the store");
  const std::string sum = checksum(comm, o.store);
  progress.end();
  pipeline::Context ctx(comm, *a.store, a.cfg, progress);
  ctx.warnings = warnings;
  io::ResultsWriter writer(comm, a.output);
  write_metadata(writer, o.store, sum, a.cfg);
  write_run(writer, ctx, *a.store);
  const io::AbortRecord abort = program_abort(comm, ctx, *a.store);
  write_abort(writer, abort, *a.store);
  pipeline::run_plan(a.plan, ctx, writer);
  pipeline::write_problems(writer, ctx);
  writer.commit();
  return abort;
}

}  // namespace

int run_analyze(const AnalyzeOptions &o) {
  pipeline::keep_freed_blocks();  // each step still hands its freed pages back (pipeline::run_plan)
  ensure_mpi();
  MPI_Comm comm = MPI_COMM_WORLD;
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  Analysis a;
  if (!set_up(o, comm, a)) return 2;
  const bool show_progress = me == 0 && (o.progress || isatty(STDERR_FILENO));
  pipeline::Progress progress(show_progress);
  if (show_progress) {
    const int threads = omp_get_max_threads();
    std::fprintf(stderr, "perfsift: %d analysis ranks, %d thread%s each\n", np, threads, threads == 1 ? "" : "s");
  }
  const auto warnings = store_warnings(a.store->run());
  if (me == 0)
    for (const auto &w : warnings) std::fprintf(stderr, "perfsift: warning: %s\n", w.c_str());

  // An error on one process cannot be agreed on without risking a hang in the next
  // collective, so that process removes the temporary output and aborts the job.
  io::AbortRecord abort;
  try {
    abort = analyze(o, comm, a, warnings, progress);
  } catch (const std::exception &e) {
    const int code = dynamic_cast<const InternalError *>(&e) ? kExitInternalError : kExitUserError;
    const auto *collective = dynamic_cast<const io::CollectiveError *>(&e);
    if (!collective || collective->said_here()) std::fprintf(stderr, "perfsift: analysis rank %d: %s\n", me, e.what());
    // Every process of a failed collective call is here: the one that says it has said it
    // before any aborts.
    if (collective && np > 1) MPI_Barrier(comm);
    if (np > 1) MPI_Abort(comm, code);
    return code;
  }

  if (me == 0) {
    io::ResultsStore results(a.output);
    if (o.print_report) std::fputs(pipeline::render_text(results).c_str(), stdout);
    if (!o.json.empty()) pipeline::write_file_atomically(o.json, pipeline::render_json(results));
    std::fflush(stdout);
    if (abort.rank >= 0)
      std::fprintf(stderr,
                   "perfsift: warning: the program aborted: %s; the results cover the run up to there (exit code "
                   "%d)\n",
                   abort_phrase(abort, a.store->callsites()).c_str(), kExitProgramAborted);
  }
  MPI_Barrier(comm);
  return abort.rank >= 0 ? kExitProgramAborted : 0;
}

}  // namespace perfsift::cli
