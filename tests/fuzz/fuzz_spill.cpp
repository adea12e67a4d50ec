// libFuzzer target for the spill reader: any bytes, as a rank's spill file, must give
// contents or an io::Error, never a crash, a hang or an allocation sized by the input.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "io/spill.h"
#include "io/trace_store.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string bytes(reinterpret_cast<const char *>(data), size);
  // The state decoder on its own (the store writer uses it too) ...
  try {
    perfsift::io::deserialize_state(bytes);
  } catch (const std::runtime_error &) {  // io/codec.h's ByteReader: what and at which byte
  }
  // ... and the whole file reader.
  const std::string &path = perfsift::fuzz::scratch_path("fuzz_spill", ".bin");
  if (!perfsift::fuzz::write_input(path, data, size)) return 0;
  try {
    perfsift::io::SpillContents c = perfsift::io::read_spill(path);
    if (c.has_state)
      PERFSIFT_FUZZ_CHECK(c.trace.profile.size() == c.trace.region_paths.size() * c.trace.metric_names.size());
  } catch (const perfsift::io::Error &) {}
  return 0;
}
