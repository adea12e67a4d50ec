// Live requests by handle, on the hot path of every nonblocking call and completion:
// open addressing (linear probing, backward-shift deletion) into a pooled FIFO per
// handle, so steady-state traffic allocates nothing. A handle may carry several live
// requests (Open MPI reuses one handle value for requests that completed at once);
// they complete first-in first-out. Handles are pointers (Open MPI) or integers (MPICH).
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

namespace perfsift::collect {

template <class Key, class Value>
class RequestTable {
 public:
  RequestTable() : m_slots(kInitial) {}

  // Appends `v` under `key`; with `replace_persistent` a persistent head is replaced.
  template <class IsPersistent>
  void push(Key key, const Value &v, IsPersistent persistent) {
    if ((m_used + 1) * 4 > m_slots.size() * 3) grow();
    Slot &s = m_slots[find_slot(key)];
    if (s.head < 0) {
      s.key = key;
      s.head = s.tail = new_node(v);
      ++m_used;
    } else if (persistent(m_pool[s.head].value)) {
      m_pool[s.head].value = v;
    } else {
      int32_t n = new_node(v);
      m_pool[s.tail].next = n;
      s.tail = n;
    }
  }

  // The first value under `key` for which `pred` holds, else the first one; null when
  // none. (Threads: a handle value several live requests share is the calling thread's
  // own request first.)
  template <class Pred>
  Value *find_prefer(Key key, Pred pred) {
    const Slot &s = m_slots[find_slot(key)];
    if (s.head < 0) return nullptr;
    for (int32_t n = s.head; n >= 0; n = m_pool[n].next)
      if (pred(m_pool[n].value)) return &m_pool[n].value;
    return &m_pool[s.head].value;
  }
  // Removes the value find_prefer(key, pred) names, copied to `out`, unless `keep`
  // holds for it; false when there is none.
  template <class Pred, class Keep>
  bool take_prefer(Key key, Pred pred, Value &out, Keep keep) {
    const size_t i = find_slot(key);
    Slot &s = m_slots[i];
    if (s.head < 0) return false;
    int32_t prev = -1, n = s.head;
    while (n >= 0 && !pred(m_pool[n].value)) prev = n, n = m_pool[n].next;
    if (n < 0) prev = -1, n = s.head;
    out = m_pool[n].value;
    if (keep(out)) return true;
    if (prev < 0)
      s.head = m_pool[n].next;
    else
      m_pool[prev].next = m_pool[n].next;
    if (s.tail == n) s.tail = prev;
    m_pool[n].next = m_free;
    m_free = n;
    if (s.head < 0) erase_slot(i);
    return true;
  }

  // Puts `v` first in line under `key` (a claimed value returned).
  void push_front(Key key, const Value &v) {
    if ((m_used + 1) * 4 > m_slots.size() * 3) grow();
    const size_t i = find_slot(key);
    const int32_t n = new_node(v);
    Slot &s = m_slots[i];
    if (s.head < 0) {
      s.key = key;
      s.head = s.tail = n;
      ++m_used;
    } else {
      m_pool[n].next = s.head;
      s.head = n;
    }
  }

  Value *front(Key key) {
    Slot &s = m_slots[find_slot(key)];
    return s.head < 0 ? nullptr : &m_pool[s.head].value;
  }

  void pop(Key key) {
    size_t i = find_slot(key);
    Slot &s = m_slots[i];
    if (s.head < 0) return;
    int32_t old = s.head;
    s.head = m_pool[old].next;
    m_pool[old].next = m_free;
    m_free = old;
    if (s.head < 0) erase_slot(i);
  }

 private:
  struct Slot {
    Key key{};
    int32_t head = -1, tail = -1;
  };
  struct Node {
    Value value;
    int32_t next = -1;
  };
  static constexpr size_t kInitial = 256;

  size_t hash(Key key) const {
    uint64_t x;
    if constexpr (std::is_pointer_v<Key>)
      x = reinterpret_cast<uintptr_t>(key);
    else
      x = static_cast<uint64_t>(static_cast<std::make_unsigned_t<Key>>(key));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<size_t>(x) & (m_slots.size() - 1);
  }
  // The slot holding `key`, or the empty slot where it would go.
  size_t find_slot(Key key) const {
    size_t i = hash(key);
    while (m_slots[i].head >= 0 && m_slots[i].key != key) i = (i + 1) & (m_slots.size() - 1);
    return i;
  }
  int32_t new_node(const Value &v) {
    int32_t n;
    if (m_free >= 0) {
      n = m_free;
      m_free = m_pool[n].next;
    } else {
      n = static_cast<int32_t>(m_pool.size());
      m_pool.emplace_back();
    }
    m_pool[n].value = v;
    m_pool[n].next = -1;
    return n;
  }
  void erase_slot(size_t i) {
    const size_t mask = m_slots.size() - 1;
    m_slots[i].head = m_slots[i].tail = -1;
    --m_used;
    // Backward shift: move later members of the probe run into the hole.
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (m_slots[j].head < 0) return;
      size_t home = hash(m_slots[j].key);
      if (((j - home) & mask) >= ((j - i) & mask)) {
        m_slots[i] = m_slots[j];
        m_slots[j].head = m_slots[j].tail = -1;
        i = j;
      }
    }
  }
  void grow() {
    std::vector<Slot> old(m_slots.size() * 2);
    old.swap(m_slots);
    for (const Slot &s : old)
      if (s.head >= 0) m_slots[find_slot(s.key)] = s;
  }

  std::vector<Slot> m_slots;
  std::vector<Node> m_pool;
  int32_t m_free = -1;
  size_t m_used = 0;
};

}  // namespace perfsift::collect
