// MPI message matching, the pure part both the replay and the message classifier use.
//
// MPI's non-overtaking rule: the k-th send from s to d with tag t on communicator c meets
// the k-th receive at d that matched (c, s, t), receives counted in the order they were
// posted, wildcards resolved from the recorded status. Each side numbers its own
// messages (MessageCounter), so matching is a join on (c, s, d, t, k) that needs no
// global order: whoever holds the receives indexes them (ReceiveIndex) and looks the
// sends' keys up. O(1) expected per message.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace perfsift::kernels {

struct MessageKey {
  int32_t comm, src, dst, tag;
  int64_t seq;  // k: the message's number among those with the same (comm, src, dst, tag)
  bool operator==(const MessageKey &o) const {
    return comm == o.comm && src == o.src && dst == o.dst && tag == o.tag && seq == o.seq;
  }
};

struct MessageKeyHash {
  size_t operator()(const MessageKey &k) const {
    uint64_t h = static_cast<uint64_t>(k.seq) * 0x9E3779B97F4A7C15ull;
    for (int32_t v : {k.comm, k.src, k.dst, k.tag}) h = (h ^ static_cast<uint32_t>(v)) * 0x100000001B3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// Numbers one rank's sends (or receives) per (comm, src, dst, tag), in call order.
class MessageCounter {
 public:
  MessageKey next(int32_t comm, int32_t src, int32_t dst, int32_t tag) {
    MessageKey k{comm, src, dst, tag, 0};
    k.seq = m_next[k]++;
    return k;
  }

 private:
  std::unordered_map<MessageKey, int64_t, MessageKeyHash> m_next;
};

// The receives posted so far, by key; a send's key finds its receive once. Kept per
// channel (comm, src, dst, tag), each a vector indexed by the message number: a table of a
// few entries per pair of ranks instead of one hash node per message (at 10^7 messages
// the node allocations and rehashing were a quarter of building the replay).
template <class Receive>
class ReceiveIndex {
 public:
  void add(const MessageKey &k, Receive r) {
    if (k.seq < 0) return;
    auto &channel = m_channels[channel_of(k)];
    const auto at = static_cast<size_t>(k.seq);
    if (channel.size() <= at) channel.resize(at + 1);
    if (!channel[at].posted) ++m_waiting;
    channel[at] = {r, true};
  }
  // The receive the send with this key meets (removed from the index), or none.
  std::optional<Receive> take(const MessageKey &k) {
    auto it = m_channels.find(channel_of(k));
    if (it == m_channels.end() || k.seq < 0 || static_cast<size_t>(k.seq) >= it->second.size()) return std::nullopt;
    Posted &p = it->second[static_cast<size_t>(k.seq)];
    if (!p.posted) return std::nullopt;
    p.posted = false;
    --m_waiting;
    return p.receive;
  }
  // Receives no send has met.
  size_t unmatched() const { return m_waiting; }

 private:
  struct Posted {
    Receive receive{};
    bool posted = false;
  };
  static MessageKey channel_of(MessageKey k) {
    k.seq = 0;
    return k;
  }
  std::unordered_map<MessageKey, std::vector<Posted>, MessageKeyHash> m_channels;
  size_t m_waiting = 0;
};

// One matched transfer's calls, as traced: the send (and the Wait* or Test* that
// completed it, when nonblocking) and the receive (likewise). A side whose call was
// blocking, or that nothing completed, has wait_enter = wait_exit = -1. Nanoseconds on
// the corrected clock, so the two sides' times compare.
struct TransferTiming {
  bool send_nonblocking = false, recv_nonblocking = false;
  int64_t send_enter = 0, send_exit = 0, send_wait_enter = -1, send_wait_exit = -1;
  int64_t recv_enter = 0, recv_exit = 0, recv_wait_enter = -1, recv_wait_exit = -1;
  int64_t bytes = 0;
};

}  // namespace perfsift::kernels
