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

// The send half of `m` from send k of owned program `s`.
void fill_send_half(MatchedMessage &m, const ReplayModel &model, size_t s, size_t k,
                    const std::vector<OpTraits> &traits) {
  const auto &p = model.programs[s];
  const auto &side = model.side[s];
  const auto ev = static_cast<size_t>(side.send_event[k]);
  m.src = p.rank;
  m.dst = p.sends[k].dst;
  m.send_event = static_cast<int32_t>(ev);
  m.send_done = side.send_done[k];
  const CallLabels::Label &at = side.labels[ev];
  m.send_region = at.region;
  m.send_site = at.site;
  m.send_op = at.op;
  m.timing.send_nonblocking = !blocking(traits, at.op);
  m.timing.send_enter = side.enter[ev];
  m.timing.send_exit = model.measured_exit(s, ev);
  if (m.send_done >= 0) {
    const auto d = static_cast<size_t>(m.send_done);
    const CallLabels::Label &done = side.labels[d];
    m.send_done_site = done.site;
    m.send_done_op = done.op;
    m.timing.send_wait_enter = side.enter[d];
    m.timing.send_wait_exit = model.measured_exit(s, d);
  }
}

// The receive half of `m` from receive ri of owned program `s`.
void fill_recv_half(MatchedMessage &m, const ReplayModel &model, size_t s, size_t ri,
                    const std::vector<OpTraits> &traits) {
  const auto &side = model.side[s];
  const auto ev = static_cast<size_t>(side.recv_event[ri]);
  m.recv_event = static_cast<int32_t>(ev);
  m.recv_done = side.recv_done[ri];
  const CallLabels::Label &at = side.labels[ev];
  m.recv_region = at.region;
  m.recv_site = at.site;
  m.recv_op = at.op;
  m.timing.recv_nonblocking = !blocking(traits, at.op);
  m.timing.recv_enter = side.enter[ev];
  m.timing.recv_exit = model.measured_exit(s, ev);
  if (m.recv_done >= 0) {
    const auto d = static_cast<size_t>(m.recv_done);
    const CallLabels::Label &done = side.labels[d];
    m.recv_done_site = done.site;
    m.recv_done_op = done.op;
    m.timing.recv_wait_enter = side.enter[d];
    m.timing.recv_wait_exit = model.measured_exit(s, d);
  }
  m.timing.bytes = model.programs[s].recvs[ri].bytes();
}

}  // namespace

std::vector<MatchedMessage> match_messages(const Context &ctx, const ReplayModel &model) {
  const auto traits = classify_ops(ctx.store().ops());
  // The records are written in place, in the messages' order (matched_receives): each
  // receive a send met (the replay's match numbered them) has its slot. A send whose
  // receiver this process owns fills its half there directly; the others travel to the
  // receiver's owner. No copy of the whole set is made (at K = 1 none travels).
  std::vector<int64_t> first_recv(model.programs.size() + 1, 0);
  for (size_t s = 0; s < model.programs.size(); ++s)
    first_recv[s + 1] = first_recv[s] + static_cast<int64_t>(model.programs[s].recvs.size());
  std::vector<int64_t> slot_of(static_cast<size_t>(first_recv.back()), -1);
  int64_t slots = 0;
  for (size_t s = 0; s < model.programs.size(); ++s)
    for (const int32_t ri : matched_receives(model, s)) slot_of[static_cast<size_t>(first_recv[s] + ri)] = slots++;
  std::vector<MatchedMessage> out(static_cast<size_t>(slots));
  auto slot = [&](int32_t dst, int32_t recv_index) -> MatchedMessage * {
    const auto at = first_recv[static_cast<size_t>(dst - ctx.first())] + recv_index;
    if (recv_index < 0 || at >= first_recv[static_cast<size_t>(dst - ctx.first()) + 1]) return nullptr;
    const int64_t k = slot_of[static_cast<size_t>(at)];
    return k < 0 ? nullptr : &out[static_cast<size_t>(k)];
  };
  std::vector<std::vector<Routed>> route(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    for (size_t k = 0; k < p.sends.size(); ++k) {
      const int32_t dst = p.sends[k].dst, recv_index = p.sends[k].recv_index;
      if (dst < 0 || recv_index < 0) continue;
      if (dst >= ctx.first() && dst < ctx.last()) {
        if (MatchedMessage *m = slot(dst, recv_index)) fill_send_half(*m, model, s, k, traits);
        continue;
      }
      Routed x{};
      x.recv_index = recv_index;
      fill_send_half(x.m, model, s, k, traits);
      route[static_cast<size_t>(ctx.owner_of(dst))].push_back(x);
    }
  }
  {
    const std::vector<Routed> arrived = ctx.alltoallv(route);
    route = {};
    for (const Routed &x : arrived)
      if (MatchedMessage *m = slot(x.m.dst, x.recv_index)) *m = x.m;
  }
  for (size_t s = 0; s < model.programs.size(); ++s)
    for (size_t ri = 0; ri < model.programs[s].recvs.size(); ++ri)
      if (const int64_t k = slot_of[static_cast<size_t>(first_recv[s]) + ri]; k >= 0)
        fill_recv_half(out[static_cast<size_t>(k)], model, s, ri, traits);
  // A receive the replay matched but whose send never arrived here (not expected): dropped.
  out.erase(std::remove_if(out.begin(), out.end(), [](const MatchedMessage &m) { return m.src < 0; }), out.end());
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
