// libFuzzer target for the LogGPS parameter file (whatif.loggps, written by `perfsift
// calibrate`): any text must give parameters within their documented ranges or throw
// config::ConfigError with file:line:col; the replay's cost formulas must then stay
// defined (kernels/loggps.h). Seeds (corpus/loggps/): calibrate's output and variants.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/schema.h"
#include "kernels/loggps.h"
#include "pipeline/replay/loggps_file.h"
#include "tests/fuzz/fuzz_util.h"

using namespace perfsift;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = fuzz::scratch_path("fuzz_loggps", ".toml");
  if (!fuzz::write_input(path, data, size)) return 0;
  try {
    const kernels::LogGPS p = pipeline::read_loggps(path);
    for (double x : {p.L, p.os0, p.os1, p.or0, p.or1, p.g, p.G}) PERFSIFT_FUZZ_CHECK(std::isfinite(x) && x >= 0);
    PERFSIFT_FUZZ_CHECK(p.S >= 0 && p.s >= 1);
    for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{65536}, int64_t{1} << 30}) {
      p.flight(bytes);
      p.injection_gap(bytes);
      p.recv_overhead(bytes);
      p.rendezvous(bytes);
    }
    p.handshake();
    kernels::collective_cost(p, 10, int64_t{1} << 20);
  } catch (const config::ConfigError &) {}
  return 0;
}
