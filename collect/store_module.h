// The store writer as a module of its own (libperfsift_store_writer.so), loaded by the
// collector on the ranks that write the store (store_writers.h) and only there: HDF5 and
// the thirty-odd libraries it pulls in cost every process that loads them start-up time
// (64 ranks of an empty program: 10% of the run), and most ranks never write.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::collect {

struct StoreWrite {
  MPI_Comm comm;  // the writers
  const std::string *path;
  const io::RunInfo *run;
  std::vector<io::RankTrace> *owned;
  const std::vector<std::string> *op_names;
};

// io::write_trace_store behind a C symbol: 1 on success, else 0 and the reason.
using WriteStoreFn = int (*)(const StoreWrite *, std::string *error);
inline constexpr const char *kStoreModule = "libperfsift_store_writer.so";
inline constexpr const char *kStoreSymbol = "perfsift_write_store";

// The module beside the collector library that contains `anchor`, loaded once; null and
// the reason when it cannot be loaded.
WriteStoreFn load_store_writer(const void *anchor, std::string *error);

}  // namespace perfsift::collect
