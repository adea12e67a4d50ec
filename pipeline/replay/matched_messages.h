// Matched point-to-point messages with both sides' timing, for the analyses that judge a
// transfer by what both ends did (Vetter's classifier, Scalasca's Late Sender and Late
// Receiver). Built from the replay model's matching (kernels/message_match.h: one
// implementation for the replay and these): each sender's owner routes the send side
// of its messages to the receiver's owner, which joins them with the receives. One
// all-to-all; O(messages) work and memory.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kernels/message_class.h"
#include "pipeline/engine/context.h"

namespace perfsift::pipeline {

struct ReplayModel;

struct MatchedMessage {
  int32_t src = -1, dst = -1;
  // Event indices within their ranks; *_done: the call that completed the request
  // (-1: the call itself was blocking, or nothing completed it).
  int32_t send_event = -1, send_done = -1, recv_event = -1, recv_done = -1;
  int32_t send_region = 0, recv_region = 0;
  uint32_t send_site = 0, recv_site = 0, send_done_site = 0, recv_done_site = 0;
  uint16_t send_op = 0, recv_op = 0, send_done_op = 0, recv_done_op = 0;
  kernels::vetter::TransferTiming timing;
};

// Collective: the matched messages whose receiver this process owns, ordered by
// (receiver, receive event); 136 bytes per message.
std::vector<MatchedMessage> match_messages(const Context &ctx, const ReplayModel &model);

// Product: the messages of the owned receivers with both sides' timing, joined once at
// the first stage boundary that needs them and shared by the stages after.
struct MatchedMessages {
  static constexpr std::string_view kProduct = "matched messages";
  std::shared_ptr<const std::vector<MatchedMessage>> items;
};

}  // namespace perfsift::pipeline
