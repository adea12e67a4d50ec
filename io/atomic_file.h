// Files that appear whole or not at all: written beside the target, then renamed.
#pragma once

#include <signal.h>

#include <string>

namespace perfsift::io {

// Throws std::runtime_error, one line naming the path and the reason (e.g. "No space
// left on device"); the temporary file is removed and the target left as it was.
void write_file_atomically(const std::string &path, const std::string &text);

// While it lives, writing past the file size limit (`ulimit -f`, prlimit --fsize) fails
// with EFBIG, reported like a full disk, instead of killing the process with SIGXFSZ.
// A disposition other than the default (the program's own) is left alone.
class FileSizeSignalIgnored {
 public:
  FileSizeSignalIgnored();
  ~FileSizeSignalIgnored();
  FileSizeSignalIgnored(const FileSizeSignalIgnored &) = delete;
  FileSizeSignalIgnored &operator=(const FileSizeSignalIgnored &) = delete;

 private:
  struct sigaction m_old {};
  bool m_changed = false;
};

}  // namespace perfsift::io
