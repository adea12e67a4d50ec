// `perfsift import`: an OTF2 archive (Score-P) into a trace store; and `perfsift analyze`
// of an archive, through a temporary store beside the results. The mapping is
// io/otf2_import's (docs/otf2.md).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "io/otf2_import.h"
#include "io/trace_store.h"
#include "ops.h"
#include "pipeline/cli/commands.h"

namespace perfsift::cli {

namespace fs = std::filesystem;

namespace {

std::string bcast(MPI_Comm comm, std::string s) {
  int64_t n = static_cast<int64_t>(s.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm);
  s.resize(static_cast<size_t>(n));
  if (n > 0) MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm);
  return s;
}

// Collective: process 0 reads the whole archive, every process learns whether it could;
// then all write the store together (process 0 owns every rank). When the archive cannot
// be read, process 0 throws the reader's one-line error and the others return nothing.
std::optional<io::Otf2Import> import_archive(MPI_Comm comm, const std::string &archive, const std::string &store) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  std::vector<std::string> ops;
  for (const auto &op : collect::kOps) ops.emplace_back(op.name);
  io::Otf2Import in;
  std::string error;
  if (me == 0) try {
      in = io::read_otf2(archive, ops);
    } catch (const std::exception &e) {
      error = e.what();
    }
  error = bcast(comm, error);
  if (!error.empty()) {
    if (me == 0) throw io::Error(error);
    return std::nullopt;
  }
  // The operation list as process 0 has it (names seen in the archive's definitions added).
  std::string joined;
  for (const auto &n : in.op_names) joined += n + '\0';
  joined = bcast(comm, joined);
  in.op_names.clear();
  for (size_t i = 0, j; i < joined.size(); i = j + 1) {
    j = joined.find('\0', i);
    in.op_names.push_back(joined.substr(i, j - i));
  }
  io::write_trace_store(comm, store, in.run, in.traces, in.op_names);
  return in;
}

void say_warning(const io::Otf2Import &in, const std::string &archive) {
  const std::string w = in.warning(archive);
  if (!w.empty()) std::fprintf(stderr, "perfsift: warning: %s\n", w.c_str());
  int64_t calls = 0;
  for (const auto &t : in.traces) calls += static_cast<int64_t>(t.events.size());
  if (calls == 0)
    std::fprintf(stderr,
                 "perfsift: warning: %s: no MPI calls in the archive (no region of paradigm MPI was entered): only "
                 "the profile of its regions can be analysed; trace with Score-P's MPI adapter enabled\n",
                 archive.c_str());
}

// Results beside the archive: DIR/traces.otf2 -> DIR/traces-results.h5; an experiment
// directory D -> D-results.h5 beside it.
std::string default_results(const std::string &archive) {
  fs::path p = fs::path(archive).lexically_normal();
  if (p.has_filename() == false) p = p.parent_path();
  if (fs::is_directory(p)) return p.string() + "-results.h5";
  return (p.parent_path() / (p.stem().string() + "-results.h5")).string();
}

}  // namespace

int run_import(const ImportOptions &o) {
  ensure_mpi();
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const auto imported = import_archive(MPI_COMM_WORLD, o.archive, o.output);
  if (!imported) return 2;
  const io::Otf2Import &in = *imported;
  if (me == 0) {
    say_warning(in, o.archive);
    int64_t calls = 0;
    for (const auto &t : in.traces) calls += static_cast<int64_t>(t.events.size());
    std::printf("%s: %d ranks, %lld MPI calls, from %lld OTF2 events of %s\n", o.output.c_str(), in.run.nranks,
                static_cast<long long>(calls), static_cast<long long>(in.events_read), o.archive.c_str());
  }
  return 0;
}

int run_analyze_input(const AnalyzeOptions &o) {
  if (!io::looks_like_otf2(o.store)) return run_analyze(o);
  ensure_mpi();
  MPI_Comm comm = MPI_COMM_WORLD;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  AnalyzeOptions a = o;
  a.output = o.output.empty() ? default_results(o.store) : o.output;
  // The temporary store: beside the results, named by process 0's id.
  a.store = bcast(comm, me == 0 ? a.output + ".otf2-import-" + std::to_string(::getpid()) + ".h5" : "");
  const auto imported = import_archive(comm, o.store, a.store);
  if (!imported) return 2;
  if (me == 0) say_warning(*imported, o.store);
  int rc = 2;
  try {
    rc = run_analyze(a);
  } catch (...) {
    if (me == 0) std::remove(a.store.c_str());
    throw;
  }
  MPI_Barrier(comm);
  if (me == 0) std::remove(a.store.c_str());
  return rc;
}

}  // namespace perfsift::cli
