// Counts point-to-point messages whose send has no receive (or the reverse), by
// channel (communicator, source, destination, tag). A count-level check that needs no
// ordering; the full matching kernel pairs individual messages.
// O(n log n) time, O(channels) memory.
#pragma once

#include <cstdint>
#include <vector>

namespace perfsift::kernels {

struct Channel {
  int32_t comm, source, dest, tag;
  bool operator<(const Channel &o) const;
  bool operator==(const Channel &o) const;
};

struct MessageBalance {
  int64_t sends = 0, receives = 0;
  int64_t unmatched_sends = 0, unmatched_receives = 0;
  int64_t channels_with_unmatched = 0;
};

MessageBalance balance_messages(std::vector<Channel> sends, std::vector<Channel> receives);

}  // namespace perfsift::kernels
