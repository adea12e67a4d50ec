// Matching messages across analysis processes (kernels/message_match.h): both sides
// number their own messages, so a match is a join on (c, s, d, t, k): senders route their
// keys to the receiver's owner, which answers with the receive's index. O(messages) work
// and one all-to-all each way.
#include <algorithm>

#include "pipeline/replay/program_assembler.h"

namespace perfsift::pipeline {

namespace program_building {

void ReplayProgramAssembler::meet(const SendKey &k, std::vector<std::vector<MatchReply>> &replies) {
  const auto found = waiting.take(k.key);
  if (!found) {
    ++unmatched_sends;
    return;
  }
  const auto [slot, ri] = *found;
  m_programs[static_cast<size_t>(slot)].match_recv(ri, k.key.src, k.send_index, k.bytes);
  m_model.side[static_cast<size_t>(slot)].recv_send_event[static_cast<size_t>(ri)] = k.send_event;
  const MatchReply r{k.key.src, k.send_index, k.key.dst, ri};
  const int owner = m_ctx.owner_of(k.key.src);
  if (owner == m_ctx.me())
    answer(r);
  else
    replies[static_cast<size_t>(owner)].push_back(r);
}

void ReplayProgramAssembler::answer(const MatchReply &r) {
  m_programs[static_cast<size_t>(r.src - m_ctx.first())].match_send(r.send_index, r.dst, r.recv_index);
}

int64_t match_messages(const Context &ctx, ReplayProgramAssembler &built) {
  std::vector<std::vector<MatchReply>> replies(static_cast<size_t>(ctx.nprocs()));
  for (const SendKey &k : ctx.alltoallv(built.route)) built.meet(k, replies);
  built.route = {};
  for (const MatchReply &r : ctx.alltoallv(replies)) built.answer(r);
  return built.unmatched_sends;
}

}  // namespace program_building

std::vector<int32_t> matched_receives(const ReplayModel &model, size_t s) {
  const auto &recvs = model.programs[s].recvs;
  const auto &event = model.side[s].recv_event;
  std::vector<int32_t> order;
  for (size_t ri = 0; ri < recvs.size(); ++ri)
    if (recvs[ri].send_index >= 0) order.push_back(static_cast<int32_t>(ri));
  const auto by_sender = [&](int32_t a, int32_t b) {
    return recvs[static_cast<size_t>(a)].src < recvs[static_cast<size_t>(b)].src;
  };
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && event[static_cast<size_t>(order[j])] == event[static_cast<size_t>(order[i])]) ++j;
    if (j - i > 1)
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(i), order.begin() + static_cast<std::ptrdiff_t>(j),
                       by_sender);
    i = j;
  }
  return order;
}

}  // namespace perfsift::pipeline
