// Matched point-to-point messages with both sides' timing, for the analyses that judge a
// transfer by what both ends did (Vetter's classifier, Scalasca's Late Sender and Late
// Receiver). Built from the replay model's matching (kernels/message_match.h: one
// implementation for the replay and these): each sender's owner routes the send side
// of its messages to the receiver's owner, which joins them with the receives. One
// all-to-all; O(messages) work and memory.
#pragma once

#include <memory>
#include <vector>

#include "kernels/message_class.h"
#include "pipeline/engine/stage.h"

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

// The replay model of the run: the whatif stage's when it ran, else built here (default
// network parameters; matching does not depend on them) and kept in ctx.replay.
// Collective.
ReplayModel &matched_model(Context &ctx);

// Collective the first time for a model (every process asks in the same stage): the
// matched messages whose receiver this process owns, ordered by (receiver, receive
// event). Kept in the model for the stages after; about 120 bytes per message.
const std::vector<MatchedMessage> &matched_messages(const Context &ctx, ReplayModel &model);

}  // namespace perfsift::pipeline
