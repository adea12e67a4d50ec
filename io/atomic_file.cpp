#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace perfsift::io {

FileSizeSignalIgnored::FileSizeSignalIgnored() {
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  if (sigaction(SIGXFSZ, nullptr, &m_old) == 0 && m_old.sa_handler == SIG_DFL && !(m_old.sa_flags & SA_SIGINFO))
    m_changed = sigaction(SIGXFSZ, &ign, nullptr) == 0;
}

FileSizeSignalIgnored::~FileSizeSignalIgnored() {
  if (m_changed) sigaction(SIGXFSZ, &m_old, nullptr);
}

void write_file_atomically(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  const FileSizeSignalIgnored guard;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(path + ": cannot create the file: " + std::strerror(errno) +
                             " (check that the directory exists and is writable)");
  const char *p = text.data();
  size_t left = text.size();
  int err = 0;
  while (left > 0 && err == 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno != EINTR) err = errno;
    if (w > 0) p += w, left -= static_cast<size_t>(w);
  }
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot write: " + std::strerror(err) + "; nothing was written");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " into place: " + std::strerror(e));
  }
}

}  // namespace perfsift::io
