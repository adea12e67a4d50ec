// Matched messages with both sides' timing (see matched_messages.h).
#include "pipeline/replay/matched_messages.h"

#include <algorithm>

#include "pipeline/engine/op_traits.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

namespace {

// A message on its way to the receiver's owner: its send half, and the receive it meets.
struct Routed {
  MatchedMessage m;
  int32_t recv_index;
};

bool blocking(const std::vector<OpTraits> &traits, uint16_t op) {
  const OpClass c = op < traits.size() ? traits[op].cls : OpClass::Local;
  return c == OpClass::Send || c == OpClass::Recv || c == OpClass::Sendrecv;
}

}  // namespace

std::vector<MatchedMessage> match_messages(const Context &ctx, const ReplayModel &model) {
  const auto traits = classify_ops(ctx.store().ops());
  // The sender's owner fills the send half of each record; the receiver's owner, which
  // knows the receive by its index, fills the rest.
  std::vector<std::vector<Routed>> route(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    const auto &side = model.side[s];
    for (size_t k = 0; k < p.sends.size(); ++k) {
      const int32_t dst = p.sends[k].dst, recv_index = p.sends[k].recv_index;
      if (dst < 0 || recv_index < 0) continue;
      Routed x{};
      x.recv_index = recv_index;
      MatchedMessage &m = x.m;
      const auto ev = static_cast<size_t>(side.send_event[k]);
      m.src = p.rank;
      m.dst = dst;
      m.send_event = static_cast<int32_t>(ev);
      m.send_done = side.send_done[k];
      m.send_region = side.region[ev];
      m.send_site = side.site[ev];
      m.send_op = side.op[ev];
      m.timing.send_nonblocking = !blocking(traits, side.op[ev]);
      m.timing.send_enter = side.enter[ev];
      m.timing.send_exit = side.exit[ev];
      if (m.send_done >= 0) {
        const auto d = static_cast<size_t>(m.send_done);
        m.send_done_site = side.site[d];
        m.send_done_op = side.op[d];
        m.timing.send_wait_enter = side.enter[d];
        m.timing.send_wait_exit = side.exit[d];
      }
      route[static_cast<size_t>(ctx.owner_of(dst))].push_back(x);
    }
  }
  const std::vector<Routed> arrived = ctx.alltoallv(route);
  route = {};
  // Where each owned receive's message sits in `arrived` (-1: none met it), so that the
  // messages come out in (receiver, receive) order without sorting 120-byte records.
  std::vector<int64_t> first_recv(model.programs.size() + 1, 0);
  for (size_t s = 0; s < model.programs.size(); ++s)
    first_recv[s + 1] = first_recv[s] + static_cast<int64_t>(model.programs[s].recvs.size());
  std::vector<int64_t> at(static_cast<size_t>(first_recv.back()), -1);
  for (size_t k = 0; k < arrived.size(); ++k)
    at[static_cast<size_t>(first_recv[static_cast<size_t>(arrived[k].m.dst - ctx.first())] + arrived[k].recv_index)] =
        static_cast<int64_t>(k);
  std::vector<MatchedMessage> out;
  out.reserve(arrived.size());
  for (const int64_t k : at) {
    if (k < 0) continue;
    const Routed &x = arrived[static_cast<size_t>(k)];
    MatchedMessage m = x.m;
    const auto s = static_cast<size_t>(m.dst - ctx.first());
    const auto &side = model.side[s];
    const auto ri = static_cast<size_t>(x.recv_index);
    const auto ev = static_cast<size_t>(side.recv_event[ri]);
    m.recv_event = static_cast<int32_t>(ev);
    m.recv_done = side.recv_done[ri];
    m.recv_region = side.region[ev];
    m.recv_site = side.site[ev];
    m.recv_op = side.op[ev];
    m.timing.recv_nonblocking = !blocking(traits, side.op[ev]);
    m.timing.recv_enter = side.enter[ev];
    m.timing.recv_exit = side.exit[ev];
    if (m.recv_done >= 0) {
      const auto d = static_cast<size_t>(m.recv_done);
      m.recv_done_site = side.site[d];
      m.recv_done_op = side.op[d];
      m.timing.recv_wait_enter = side.enter[d];
      m.timing.recv_wait_exit = side.exit[d];
    }
    m.timing.bytes = model.programs[s].recvs[ri].bytes;
    out.push_back(m);
  }
  // Receives are numbered in event order; one call's several receives (MPI_Waitall of
  // receives, MPI_Sendrecv) go by sender, as the messages' order has always been.
  auto same_call = [](const MatchedMessage &a, const MatchedMessage &b) {
    return a.dst == b.dst && a.recv_event == b.recv_event;
  };
  for (size_t i = 0; i < out.size();) {
    size_t j = i + 1;
    while (j < out.size() && same_call(out[i], out[j])) ++j;
    if (j - i > 1)
      std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(i), out.begin() + static_cast<std::ptrdiff_t>(j),
                       [](const MatchedMessage &a, const MatchedMessage &b) { return a.src < b.src; });
    i = j;
  }
  return out;
}

ProductBuilder matched_messages_builder() {
  return {product_name<MatchedMessages>(),
          "both sides' timing of every message, joined by the receiver's owner (one all-to-all)",
          {product_name<MatchedRun>()},
          [](Context &ctx) {
            ctx.progress().begin("joining both sides of every message");
            auto items = std::make_shared<const std::vector<MatchedMessage>>(
                match_messages(ctx, *ctx.products().get<MatchedRun>().model));
            ctx.progress().end();
            ctx.products().publish(MatchedMessages{std::move(items)});
          }};
}

}  // namespace perfsift::pipeline
