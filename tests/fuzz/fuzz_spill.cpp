// libFuzzer target for the spill reader: any bytes, as a rank's spill file, must give
// contents or an io::Error, never a crash, a hang or an allocation sized by the input.
// Built by hand (not by CI):
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. $(mpicxx --showme:compile) \
//     tests/fuzz/fuzz_spill.cpp io/spill.cpp -o fuzz_spill && ./fuzz_spill -max_total_time=60
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "io/spill.h"
#include "io/trace_store.h"

namespace {
const std::string &scratch_path() {
  static const std::string path = "/tmp/fuzz_spill-" + std::to_string(getpid()) + ".bin";
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string bytes(reinterpret_cast<const char *>(data), size);
  // The state decoder on its own (the store writer uses it too) ...
  try {
    perfsift::io::deserialize_state(bytes);
  } catch (const std::runtime_error &) {}
  // ... and the whole file reader.
  FILE *f = std::fopen(scratch_path().c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    perfsift::io::SpillContents c = perfsift::io::read_spill(scratch_path());
    if (c.has_state && c.trace.profile.size() != c.trace.region_paths.size() * c.trace.metric_names.size())
      __builtin_trap();
  } catch (const perfsift::io::Error &) {}
  return 0;
}
