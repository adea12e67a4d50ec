// POSIX and stdio interposers that add regular-file bytes to the I/O metrics of the
// current region. Sockets, pipes and MPI's own traffic are not counted: only regular
// files, outside MPI calls, on the traced thread.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>

#include "recorder.h"
#include "runtime.h"

using namespace perfsift::collect;

namespace {

constexpr int kFdCache = 4096;
signed char g_fd_kind[kFdCache];  // 0 unknown, 1 regular file, 2 other

bool is_regular(int fd) {
  if (fd < 0) return false;
  if (fd < kFdCache && g_fd_kind[fd]) return g_fd_kind[fd] == 1;
  struct stat st;
  const bool reg = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (fd < kFdCache) g_fd_kind[fd] = reg ? 1 : 2;
  return reg;
}

void forget(int fd) {
  if (fd >= 0 && fd < kFdCache) g_fd_kind[fd] = 0;
}

inline bool counting() { return g_tracing && !t_in_call; }

void count(int fd, long n, bool write) {
  if (n > 0 && counting() && is_regular(fd)) runtime().add_io_bytes(n, write);
}

template <class F>
F real(const char *name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

#define PERFSIFT_REAL(name, type) static auto real_##name = real<type>(#name)

extern "C" {

PERFSIFT_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  PERFSIFT_REAL(read, ssize_t(*)(int, void *, size_t));
  ssize_t r = real_read(fd, buf, n);
  count(fd, r, false);
  return r;
}

PERFSIFT_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  PERFSIFT_REAL(write, ssize_t(*)(int, const void *, size_t));
  ssize_t r = real_write(fd, buf, n);
  count(fd, r, true);
  return r;
}

PERFSIFT_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
  PERFSIFT_REAL(pread, ssize_t(*)(int, void *, size_t, off_t));
  ssize_t r = real_pread(fd, buf, n, off);
  count(fd, r, false);
  return r;
}

PERFSIFT_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  PERFSIFT_REAL(pwrite, ssize_t(*)(int, const void *, size_t, off_t));
  ssize_t r = real_pwrite(fd, buf, n, off);
  count(fd, r, true);
  return r;
}

PERFSIFT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
  PERFSIFT_REAL(readv, ssize_t(*)(int, const struct iovec *, int));
  ssize_t r = real_readv(fd, iov, cnt);
  count(fd, r, false);
  return r;
}

PERFSIFT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  PERFSIFT_REAL(writev, ssize_t(*)(int, const struct iovec *, int));
  ssize_t r = real_writev(fd, iov, cnt);
  count(fd, r, true);
  return r;
}

PERFSIFT_EXPORT size_t fread(void *ptr, size_t size, size_t nmemb, FILE *stream) {
  PERFSIFT_REAL(fread, size_t(*)(void *, size_t, size_t, FILE *));
  size_t r = real_fread(ptr, size, nmemb, stream);
  if (counting()) count(fileno(stream), static_cast<long>(r * size), false);
  return r;
}

PERFSIFT_EXPORT size_t fwrite(const void *ptr, size_t size, size_t nmemb, FILE *stream) {
  PERFSIFT_REAL(fwrite, size_t(*)(const void *, size_t, size_t, FILE *));
  size_t r = real_fwrite(ptr, size, nmemb, stream);
  if (counting()) count(fileno(stream), static_cast<long>(r * size), true);
  return r;
}

PERFSIFT_EXPORT int close(int fd) {
  PERFSIFT_REAL(close, int (*)(int));
  forget(fd);
  return real_close(fd);
}

PERFSIFT_EXPORT int dup2(int oldfd, int newfd) {
  PERFSIFT_REAL(dup2, int (*)(int, int));
  forget(newfd);
  return real_dup2(oldfd, newfd);
}

}  // extern "C"
