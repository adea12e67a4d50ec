// libFuzzer target for the results-store reader (`perfsift report` reads through it):
// any bytes, as a results file, must read back (every group, attribute, table and
// matrix) or throw io::Error naming the file, never crash, hang or allocate what the
// file's sizes claim. Seeds (corpus/results_store/): small real results files.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/results_store.h"
#include "io/trace_store.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
using perfsift::io::ResultsStore;

// The walk `perfsift report` makes; depth-bounded (the fuzzer's own walk, not the reader's).
void walk(const ResultsStore &r, const std::string &group, int depth) {
  if (depth > 6) return;
  r.attributes(group);
  r.description(group);
  for (const auto &c : r.children(group)) {
    const std::string path = group.empty() ? c.name : group + "/" + c.name;
    try {
      switch (c.kind) {
        case ResultsStore::Kind::Group:
          walk(r, path, depth + 1);
          break;
        case ResultsStore::Kind::Table: {
          const auto t = r.table(path);
          for (const auto &col : t.columns) PERFSIFT_FUZZ_CHECK(col.size() == t.rows());
          break;
        }
        case ResultsStore::Kind::Matrix: {
          const auto info = r.matrix_info(path);
          const auto m = r.matrix(path);
          PERFSIFT_FUZZ_CHECK(m.size() == static_cast<size_t>(info.rows * info.cols));
          r.attributes(path);
          break;
        }
      }
    } catch (const perfsift::io::Error &) {  // one object damaged: the walk goes on, as the report does
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = perfsift::fuzz::scratch_path("fuzz_results_store", ".h5");
  if (!perfsift::fuzz::write_input(path, data, size)) return 0;
  try {
    ResultsStore r(path);
    walk(r, "", 0);
  } catch (const perfsift::io::Error &) {}
  return 0;
}
