// libFuzzer target for the trace-store reader: any bytes, as a trace store, must open
// and read back (every table, every rank) or throw io::Error naming the file, never
// crash, hang or allocate what the file's sizes claim before checking them. The seeds
// (corpus/trace_store/) are small real stores from `perfsift synth`; libFuzzer mutates
// their bytes, so the damage lands in HDF5's metadata and in perfsift's own tables.
#include <cstddef>
#include <cstdint>
#include <string>

#include "io/trace_store.h"
#include "tests/fuzz/fuzz_util.h"

namespace {
// Reads everything a stage may read, as the stages read it.
void read_all(const perfsift::io::TraceStore &s) {
  const int32_t n = s.nranks();
  PERFSIFT_FUZZ_CHECK(s.event_offsets().size() == static_cast<size_t>(n) + 1);
  for (const auto &m : s.metrics()) {
    const auto p = s.profile(m);
    PERFSIFT_FUZZ_CHECK(p.size() == static_cast<size_t>(n) * s.regions().size());
  }
  for (const char *t : {"events", "requests", "completions", "steps"}) s.offsets(t);
  s.events(0, n);
  s.requests(0, n);
  s.completions(0, n);
  s.steps(0, n);
  s.clocks();
  s.events_storage_bytes();
  int64_t rows = 0;
  s.scan_events(0, n, 64, 2,
                [&](int64_t, const std::vector<perfsift::io::Event> &ev) { rows += static_cast<int64_t>(ev.size()); });
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = perfsift::fuzz::scratch_path("fuzz_trace_store", ".h5");
  if (!perfsift::fuzz::write_input(path, data, size)) return 0;
  try {
    perfsift::io::TraceStore store(path);
    read_all(store);
  } catch (const perfsift::io::Error &) {}
  return 0;
}
