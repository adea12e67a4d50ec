// The per-rank record buffers (events, request activations, completions): each one
// anonymous mapping, populated (and so zeroed by the kernel) at MPI_Init rather than
// page by page on the hot path, where first-touch faults cost more than the recording
// itself. Grows with mremap when no spill file can take the overflow.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <span>
#include <vector>

namespace perfsift::collect {

template <class T>
class PodBuffer {
 public:
  PodBuffer() = default;
  PodBuffer(const PodBuffer &) = delete;
  PodBuffer &operator=(const PodBuffer &) = delete;
  ~PodBuffer() {
    if (m_data) munmap(m_data, m_capacity * sizeof(T));
  }

  // Maps room for `capacity` records, populated up front when `populate`, else
  // reserved only (pages arrive as they are used). False when memory is short.
  bool allocate(size_t capacity, bool populate) {
    void *p = mmap(nullptr, capacity * sizeof(T), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : MAP_NORESERVE), -1, 0);
    if (p == MAP_FAILED) return false;
    m_data = static_cast<T *>(p);
    m_capacity = capacity;
    return true;
  }
  bool grow() {
    void *p = mremap(m_data, m_capacity * sizeof(T), 2 * m_capacity * sizeof(T), MREMAP_MAYMOVE);
    if (p == MAP_FAILED) return false;
    m_data = static_cast<T *>(p);
    m_capacity *= 2;
    return true;
  }

  // Release stores (plain stores on x86): a record below size_acquire() is whole, for the
  // watcher thread that writes committed records to the spill file.
  void push_back(const T &e) {
    m_data[m_size] = e;
    __atomic_store_n(&m_size, m_size + 1, __ATOMIC_RELEASE);
  }
  void commit_one() {
    __atomic_store_n(&m_size, m_size + 1, __ATOMIC_RELEASE);
  }  // the slot at end() was filled in place
  size_t size_acquire() const { return __atomic_load_n(&m_size, __ATOMIC_ACQUIRE); }
  bool full() const { return m_size >= m_capacity; }
  void clear() { m_size = 0; }
  size_t size() const { return m_size; }
  size_t capacity() const { return m_capacity; }
  T *data() { return m_data; }
  T *begin() { return m_data; }
  T *end() { return m_data + m_size; }
  std::span<T> span() { return {m_data, m_size}; }
  std::span<const T> span() const { return {m_data, m_size}; }
  void append_to(std::vector<T> &out) const { out.insert(out.end(), m_data, m_data + m_size); }

 private:
  T *m_data = nullptr;
  size_t m_size = 0, m_capacity = 0;
};

}  // namespace perfsift::collect
