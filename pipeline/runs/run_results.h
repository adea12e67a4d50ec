// One analysed run as a comparison reads it back from its results store: what it was
// (command, ranks, date, hosts, MPI), its program time, its problems with their identity,
// and per region and per MPI operation the figures two runs are compared by.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace perfsift::pipeline {

// A row of /problems: what the reports print, and its identity (docs/results.md).
struct ProblemRow {
  int64_t rank = 0;  // 1 = most important in its run
  std::string kind, where, ranks, cause, question;
  double lost_s = 0;
  double predicted_gain_s = 0;  // NaN: no stage priced its fix
  // The identity: the place columns and the fix columns joined, one text each.
  std::string place, fix;
  bool priced() const;
};

struct RegionRow {
  std::string path;
  double wall_mean_s = 0, wall_max_s = 0, mpi_mean_s = 0, comp_max_s = 0, visits = 0;
  int64_t wall_max_rank = -1;  // the rank that sets the pace in it (-1: not stored)
};

struct OperationRow {
  std::string op;
  double calls = 0, time_s = 0, bytes = 0;
};

struct CallSiteRow {
  std::string name;  // function (file:line), or module+offset when stripped: what two runs match by
  std::string op;    // the MPI operation called there
  double calls = 0, time_s = 0, bytes = 0;
};

struct RunResults {
  std::string path;  // the results store
  std::string command, start_time, mpi_library, hosts, source_store;
  int64_t ranks = 0;
  double program_time_s = 0, wall_time_s = 0;
  std::vector<ProblemRow> problems;  // in their rank order
  std::vector<RegionRow> regions;
  std::vector<OperationRow> operations;
  std::vector<CallSiteRow> callsites;
};

// Reads a results store (io::Error, one line, when it is not one of this version).
RunResults read_run_results(const std::string &results_path);

}  // namespace perfsift::pipeline
