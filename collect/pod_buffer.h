// The per-rank record buffers (events, request activations, completions): each one
// anonymous mapping, reserved, not populated. Only a prefix is faulted in at MPI_Init;
// the watcher thread keeps faulting in pages ahead of the fill level once a second
// (populate_ahead), so neither start-up pays for the whole buffer (64 MiB zeroed per rank
// made an empty program's collection 1.3x slower on 64 ranks) nor the hot path for its
// first touches. Grows with mremap when no spill file can take the overflow.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

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

  // Maps room for `capacity` records and faults in the first `populated` of them. False
  // when memory is short.
  bool allocate(size_t capacity, size_t populated) {
    void *p =
        mmap(nullptr, capacity * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    m_data = static_cast<T *>(p);
    m_capacity = capacity;
    const size_t first = std::min(populated, capacity);
    if (!populate(0, first)) {
      // A kernel before 5.14: touch the pages (nobody else sees the buffer yet).
      const size_t page = 4096;
      for (size_t b = 0; b < first * sizeof(T); b += page) static_cast<volatile char *>(p)[b] = 0;
    }
    m_populated = first;
    return true;
  }

  // Faults in the records up to `ahead` past the fill level without writing them: safe
  // while the owner appends. Under the lock that guards grow().
  void populate_ahead(size_t ahead) {
    const size_t want = std::min(m_capacity, size_acquire() + ahead);
    const size_t have = __atomic_load_n(&m_populated, __ATOMIC_RELAXED);
    if (want > have) populate_to(have, want);
  }

  bool grow() {
    void *p = mremap(m_data, m_capacity * sizeof(T), 2 * m_capacity * sizeof(T), MREMAP_MAYMOVE);
    if (p == MAP_FAILED) return false;
    m_data = static_cast<T *>(p);
    m_capacity *= 2;  // the new half arrives on first touch
    return true;
  }

  // Release stores (plain stores on x86): a record below size_acquire() is whole, for the
  // watcher thread that writes committed records to the spill file.
  void push_back(const T &e) {
    m_data[m_size] = e;
    commit_one();
  }
  // The slot at end() was filled in place. Reaching the populated end (the watcher fell
  // behind a burst) faults in the next kBatch records with one call, not page by page.
  void commit_one() {
    __atomic_store_n(&m_size, m_size + 1, __ATOMIC_RELEASE);
    if (__builtin_expect(m_size >= __atomic_load_n(&m_populated, __ATOMIC_RELAXED), 0))
      populate_to(m_size, std::min(m_capacity, m_size + kBatch));
  }
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

 private:
  static constexpr size_t kBatch = (size_t{1} << 20) / sizeof(T);

  // Owner and watcher may both run this: populating is idempotent, and a lost update of
  // m_populated only costs one more call.
  void populate_to(size_t from, size_t to) {
    if (to > from && !populate(from, to)) to = m_capacity;  // no MADV_POPULATE_WRITE: first touches fault
    if (to > __atomic_load_n(&m_populated, __ATOMIC_RELAXED)) __atomic_store_n(&m_populated, to, __ATOMIC_RELAXED);
  }

  bool populate(size_t from, size_t to) {
#ifdef MADV_POPULATE_WRITE
    if (to <= from) return true;
    const uintptr_t page = 4096;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(m_data + from) & ~(page - 1);
    const uintptr_t end = reinterpret_cast<uintptr_t>(m_data + to);
    return madvise(reinterpret_cast<void *>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
#else
    (void)from;
    (void)to;
    return false;
#endif
  }

  T *m_data = nullptr;
  size_t m_size = 0, m_capacity = 0;
  size_t m_populated = 0;  // records [0, m_populated) are faulted in
};

}  // namespace perfsift::collect
