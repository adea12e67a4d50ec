// Matched messages with both sides' timing (see message_table.h).
#include "pipeline/message_table.h"

#include <algorithm>

#include "pipeline/op_traits.h"
#include "pipeline/replay_model.h"

namespace perfsift::pipeline {

namespace {

// What the sender's owner knows of one message, routed to the receiver's owner.
struct SendSide {
  int32_t dst, recv_index, src, send_event, send_done, send_region;
  uint32_t send_site, send_done_site;
  uint16_t send_op, send_done_op;
  int32_t nonblocking;
  int64_t enter, exit, done_enter, done_exit;
};

bool blocking(const std::vector<OpTraits> &traits, uint16_t op) {
  const OpClass c = op < traits.size() ? traits[op].cls : OpClass::Local;
  return c == OpClass::Send || c == OpClass::Recv || c == OpClass::Sendrecv;
}

}  // namespace

const ReplayModel &matched_model(Context &ctx) {
  if (!ctx.replay) {
    ctx.progress().begin("matching messages");
    ctx.replay = build_replay_model(ctx, kernels::LogGPS{});
    ctx.progress().end();
  }
  return *ctx.replay;
}

std::vector<MatchedMessage> match_messages(const Context &ctx, const ReplayModel &model) {
  const auto traits = classify_ops(ctx.store().ops());
  std::vector<std::vector<SendSide>> route(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    const auto &side = model.side[s];
    for (size_t m = 0; m < p.sends.size(); ++m) {
      const auto &msg = p.sends[m];
      if (msg.dst < 0 || msg.recv_index < 0) continue;
      const auto ev = static_cast<size_t>(side.send_event[m]);
      const int32_t done = side.send_done[m];
      SendSide x{};
      x.dst = msg.dst;
      x.recv_index = msg.recv_index;
      x.src = p.rank;
      x.send_event = static_cast<int32_t>(ev);
      x.send_done = done;
      x.send_region = side.region[ev];
      x.send_site = side.site[ev];
      x.send_op = side.op[ev];
      x.nonblocking = !blocking(traits, side.op[ev]);
      x.enter = side.enter[ev];
      x.exit = side.exit[ev];
      x.done_enter = x.done_exit = -1;
      if (done >= 0) {
        const auto d = static_cast<size_t>(done);
        x.send_done_site = side.site[d];
        x.send_done_op = side.op[d];
        x.done_enter = side.enter[d];
        x.done_exit = side.exit[d];
      }
      route[static_cast<size_t>(ctx.owner_of(msg.dst))].push_back(x);
    }
  }
  const auto arrived = ctx.alltoallv(route);
  std::vector<MatchedMessage> out;
  out.reserve(arrived.size());
  for (const SendSide &x : arrived) {
    const auto s = static_cast<size_t>(x.dst - ctx.first());
    const auto &side = model.side[s];
    const auto ri = static_cast<size_t>(x.recv_index);
    const auto ev = static_cast<size_t>(side.recv_event[ri]);
    const int32_t done = side.recv_done[ri];
    MatchedMessage m;
    m.src = x.src;
    m.dst = x.dst;
    m.send_event = x.send_event;
    m.send_done = x.send_done;
    m.send_region = x.send_region;
    m.send_site = x.send_site;
    m.send_done_site = x.send_done_site;
    m.send_op = x.send_op;
    m.send_done_op = x.send_done_op;
    m.recv_event = static_cast<int32_t>(ev);
    m.recv_done = done;
    m.recv_region = side.region[ev];
    m.recv_site = side.site[ev];
    m.recv_op = side.op[ev];
    auto &t = m.timing;
    t.send_nonblocking = x.nonblocking != 0;
    t.send_enter = x.enter;
    t.send_exit = x.exit;
    t.send_wait_enter = x.done_enter;
    t.send_wait_exit = x.done_exit;
    t.recv_nonblocking = !blocking(traits, side.op[ev]);
    t.recv_enter = side.enter[ev];
    t.recv_exit = side.exit[ev];
    if (done >= 0) {
      const auto d = static_cast<size_t>(done);
      m.recv_done_site = side.site[d];
      m.recv_done_op = side.op[d];
      t.recv_wait_enter = side.enter[d];
      t.recv_wait_exit = side.exit[d];
    }
    t.bytes = model.programs[s].recvs[ri].bytes;
    out.push_back(m);
  }
  std::sort(out.begin(), out.end(), [](const MatchedMessage &a, const MatchedMessage &b) {
    return a.dst != b.dst ? a.dst < b.dst : a.recv_event != b.recv_event ? a.recv_event < b.recv_event : a.src < b.src;
  });
  return out;
}

}  // namespace perfsift::pipeline
