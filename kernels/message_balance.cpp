#include "kernels/message_balance.h"

#include <algorithm>
#include <tuple>

namespace perfsift::kernels {

bool Channel::operator<(const Channel &o) const {
  return std::tie(comm, source, dest, tag) < std::tie(o.comm, o.source, o.dest, o.tag);
}
bool Channel::operator==(const Channel &o) const {
  return std::tie(comm, source, dest, tag) == std::tie(o.comm, o.source, o.dest, o.tag);
}

MessageBalance balance_messages(std::vector<Channel> sends, std::vector<Channel> receives) {
  MessageBalance b;
  b.sends = static_cast<int64_t>(sends.size());
  b.receives = static_cast<int64_t>(receives.size());
  std::sort(sends.begin(), sends.end());
  std::sort(receives.begin(), receives.end());
  size_t i = 0, j = 0;
  while (i < sends.size() || j < receives.size()) {
    const Channel &c = (j >= receives.size() || (i < sends.size() && sends[i] < receives[j])) ? sends[i] : receives[j];
    int64_t ns = 0, nr = 0;
    while (i < sends.size() && sends[i] == c) ++i, ++ns;
    while (j < receives.size() && receives[j] == c) ++j, ++nr;
    if (ns > nr) b.unmatched_sends += ns - nr;
    if (nr > ns) b.unmatched_receives += nr - ns;
    if (ns != nr) ++b.channels_with_unmatched;
  }
  return b;
}

}  // namespace perfsift::kernels
