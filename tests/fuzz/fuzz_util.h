// What the fuzz targets share: the input written to a scratch file (the readers take
// paths) in $TMPDIR (else /tmp), named per process so parallel fuzzing jobs do not collide.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace perfsift::fuzz {

// The file goes when the process ends (a run of the corpus, a fuzzing job's -runs=N),
// so test runs do not leave one per target in $TMPDIR.
inline const std::string &scratch_path(const char *target, const char *suffix) {
  static const struct Scratch {
    std::string path;
    ~Scratch() { std::remove(path.c_str()); }
  } scratch{[&] {
    const char *tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp") + "/" + target + "-" + std::to_string(getpid()) + suffix;
  }()};
  return scratch.path;
}

// Writes the input to `path`; false if the file cannot be written (the input is skipped).
inline bool write_input(const std::string &path, const uint8_t *data, size_t size) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

// A property the reader promises but broke: a finding like a crash.
#define PERFSIFT_FUZZ_CHECK(cond)  \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

}  // namespace perfsift::fuzz
