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

std::string bcast(MPI_Comm comm, std::string s, int root = 0) {
  int64_t n = static_cast<int64_t>(s.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, root, comm);
  s.resize(static_cast<size_t>(n));
  if (n > 0) MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, root, comm);
  return s;
}

// Every process's string, on process 0 (in process order).
std::vector<std::string> gather(MPI_Comm comm, const std::string &s) {
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  int n = static_cast<int>(s.size());
  std::vector<int> sizes(static_cast<size_t>(np)), at(static_cast<size_t>(np), 0);
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm);
  std::string all;
  if (me == 0) {
    for (int k = 1; k < np; ++k) at[static_cast<size_t>(k)] = at[static_cast<size_t>(k - 1)] + sizes[k - 1];
    all.resize(static_cast<size_t>(at.back() + sizes.back()));
  }
  MPI_Gatherv(s.data(), n, MPI_CHAR, all.data(), sizes.data(), at.data(), MPI_CHAR, 0, comm);
  std::vector<std::string> out;
  if (me == 0)
    for (int k = 0; k < np; ++k) out.push_back(all.substr(static_cast<size_t>(at[k]), static_cast<size_t>(sizes[k])));
  return out;
}

// Whether the directory of OUTPUT exists (collective); process 0 throws when not.
bool directory_exists(MPI_Comm comm, const std::string &output) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  const fs::path dir = fs::path(output).parent_path();
  if (dir.empty() || fs::is_directory(dir)) return true;
  if (me == 0)
    throw std::runtime_error(output + ": the directory " + dir.string() +
                             " does not exist; create it or choose another -o");
  return false;
}

// What an import tells the user, summed over the processes (on process 0).
struct Summary {
  io::Otf2Import in;  // process 0's part, with the run's facts and every part's unmapped records
  int64_t calls = 0, events_read = 0;
};

// Collective: every process reads the definitions and the events of its block of ranks,
// the processes agree whether all could, then write the store together. When the archive
// cannot be read, process 0 throws the first failing process's one-line error and the
// others return nothing.
std::optional<Summary> import_archive(MPI_Comm comm, const std::string &archive, const std::string &store) {
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  if (!directory_exists(comm, store)) return std::nullopt;
  std::vector<std::string> ops;
  for (const auto &op : collect::kOps) ops.emplace_back(op.name);
  Summary sum;
  io::Otf2Import &in = sum.in;
  std::string error;
  try {
    in = io::read_otf2(archive, ops, me, np);
  } catch (const std::exception &e) {
    error = e.what();
  }
  int failed = error.empty() ? np : me, first_failed = np;
  MPI_Allreduce(&failed, &first_failed, 1, MPI_INT, MPI_MIN, comm);
  if (first_failed < np) {
    error = bcast(comm, error, first_failed);
    if (me == 0) throw io::Error(error);
    return std::nullopt;
  }
  // Ranks that stopped early, as every process must write them.
  std::vector<int32_t> stopped(static_cast<size_t>(in.run.nranks), 0);
  for (int32_t r : in.run.truncated_ranks) stopped[static_cast<size_t>(r)] = 1;
  MPI_Allreduce(MPI_IN_PLACE, stopped.data(), in.run.nranks, MPI_INT32_T, MPI_MAX, comm);
  in.run.truncated_ranks.clear();
  for (int32_t r = 0; r < in.run.nranks; ++r)
    if (stopped[static_cast<size_t>(r)]) in.run.truncated_ranks.push_back(r);
  // Counts for the summary and the warning.
  int64_t local[2] = {0, in.events_read}, total[2] = {0, 0};
  for (const auto &t : in.traces) local[0] += static_cast<int64_t>(t.events.size());
  MPI_Reduce(local, total, 2, MPI_INT64_T, MPI_SUM, 0, comm);
  sum.calls = total[0];
  sum.events_read = total[1];
  std::string mine;
  for (const auto &[kind, n] : in.unmapped) mine += kind + '\0' + std::to_string(n) + '\0';
  const auto all = gather(comm, mine);
  if (me == 0) {
    in.unmapped.clear();
    for (const auto &part : all)  // kind \0 count \0 ...
      for (size_t i = 0; i < part.size();) {
        const size_t j = part.find('\0', i), l = part.find('\0', j + 1);
        in.unmapped[part.substr(i, j - i)] += std::stoll(part.substr(j + 1, l - j - 1));
        i = l + 1;
      }
  }
  try {  // the writer agrees on its errors: every process throws the same; process 0 says it
    io::write_trace_store(comm, store, in.run, in.traces, in.op_names);
  } catch (const std::exception &) {
    if (me == 0) throw;
    return std::nullopt;
  }
  in.traces.clear();
  return sum;
}

void say_warning(const Summary &sum, const std::string &archive) {
  const std::string w = sum.in.warning(archive);
  if (!w.empty()) std::fprintf(stderr, "perfsift: warning: %s\n", w.c_str());
  if (sum.calls == 0)
    std::fprintf(stderr,
                 "perfsift: warning: %s: no MPI calls in the archive (no region of paradigm MPI was entered): only "
                 "the profile of its regions can be analysed; trace with Score-P's MPI adapter enabled\n",
                 archive.c_str());
}

// Results beside the archive: DIR/traces.otf2 -> DIR/traces-results.h5; an experiment
// directory D -> D-results.h5 beside it.

}  // namespace

int run_import(const ImportOptions &o) {
  ensure_mpi();
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const auto imported = import_archive(MPI_COMM_WORLD, o.archive, o.output);
  if (!imported) return 2;
  if (me == 0) {
    say_warning(*imported, o.archive);
    std::printf("%s: %d ranks, %lld MPI calls, from %lld OTF2 events of %s\n", o.output.c_str(),
                imported->in.run.nranks, static_cast<long long>(imported->calls),
                static_cast<long long>(imported->events_read), o.archive.c_str());
  }
  return 0;
}

std::string default_results(const std::string &archive) {
  fs::path p = fs::path(archive).lexically_normal();
  if (p.has_filename() == false) p = p.parent_path();
  if (fs::is_directory(p)) return p.string() + "-results.h5";
  return (p.parent_path() / (p.stem().string() + "-results.h5")).string();
}

int run_analyze_input(const AnalyzeOptions &o) {
  if (!io::looks_like_otf2(o.store)) return run_analyze(o);
  ensure_mpi();
  MPI_Comm comm = MPI_COMM_WORLD;
  int me = 0;
  MPI_Comm_rank(comm, &me);
  AnalyzeOptions a = o;
  a.output = o.output.empty() ? default_results(o.store) : o.output;
  if (!directory_exists(comm, a.output)) return 2;
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
