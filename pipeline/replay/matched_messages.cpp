// Matched messages with both sides' timing (see matched_messages.h).
#include "pipeline/replay/matched_messages.h"

#include <algorithm>
#include <tuple>

#include "pipeline/engine/op_traits.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

namespace {

// What a message's sender did: read from the model where the sender is owned here, sent
// by its owner otherwise.
struct SendHalf {
  int32_t src = -1, send_event = -1, send_done = -1, send_region = 0;
  uint32_t send_site = 0, send_done_site = 0;
  uint16_t send_op = 0, send_done_op = 0;
  bool nonblocking = false;
  int64_t enter = 0, exit = 0, wait_enter = -1, wait_exit = -1;
};

// A send half on its way to the receiver's owner, with the receive it meets.
struct Routed {
  SendHalf half;
  int32_t dst, recv_index;
};

bool blocking(const std::vector<OpTraits> &traits, uint16_t op) {
  const OpClass c = op < traits.size() ? traits[op].cls : OpClass::Local;
  return c == OpClass::Send || c == OpClass::Recv || c == OpClass::Sendrecv;
}

// The send half of send k of owned program `s`.
SendHalf send_half(const ReplayModel &model, size_t s, size_t k, const std::vector<OpTraits> &traits) {
  const auto &side = model.side[s];
  const auto ev = static_cast<size_t>(side.send_event[k]);
  SendHalf h;
  h.src = model.programs[s].rank;
  h.send_event = static_cast<int32_t>(ev);
  h.send_done = side.send_done[k];
  const CallLabels::Label &at = side.labels[ev];
  h.send_region = at.region;
  h.send_site = at.site;
  h.send_op = at.op;
  h.nonblocking = !blocking(traits, at.op);
  h.enter = side.enter[ev];
  h.exit = model.measured_exit(s, ev);
  if (h.send_done >= 0) {
    const auto d = static_cast<size_t>(h.send_done);
    const CallLabels::Label &done = side.labels[d];
    h.send_done_site = done.site;
    h.send_done_op = done.op;
    h.wait_enter = side.enter[d];
    h.wait_exit = model.measured_exit(s, d);
  }
  return h;
}

void put_send_half(MatchedMessage &m, const SendHalf &h) {
  m.src = h.src;
  m.send_event = h.send_event;
  m.send_done = h.send_done;
  m.send_region = h.send_region;
  m.send_site = h.send_site;
  m.send_op = h.send_op;
  m.send_done_site = h.send_done_site;
  m.send_done_op = h.send_done_op;
  m.timing.send_nonblocking = h.nonblocking;
  m.timing.send_enter = h.enter;
  m.timing.send_exit = h.exit;
  m.timing.send_wait_enter = h.wait_enter;
  m.timing.send_wait_exit = h.wait_exit;
}

// The receive half of `m` from receive ri of owned program `s`.
void put_recv_half(MatchedMessage &m, const ReplayModel &model, size_t s, size_t ri,
                   const std::vector<OpTraits> &traits) {
  const auto &side = model.side[s];
  const auto ev = static_cast<size_t>(side.recv_event[ri]);
  m.dst = model.programs[s].rank;
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

struct MatchedMessageTable::Store {
  std::shared_ptr<const ReplayModel> model;
  std::vector<OpTraits> traits;
  int32_t first_rank = 0;     // the first owned rank (slot 0)
  std::vector<size_t> first;  // per owned slot, and one past the last: its first message
  std::vector<int32_t> recv;  // per message: its receive in the receiver's program
  // The send halves of messages whose sender another process owns, by message.
  std::vector<std::pair<size_t, SendHalf>> remote;
  bool owned(int32_t rank) const {
    return rank >= first_rank && rank - first_rank < static_cast<int64_t>(model->programs.size());
  }
};

size_t MatchedMessageTable::receiver_of(size_t message) const {
  const auto &first = m_store->first;
  return static_cast<size_t>(std::upper_bound(first.begin(), first.end(), message) - first.begin()) - 1;
}

MatchedMessage MatchedMessageTable::assemble(size_t message, size_t slot) const {
  const Store &st = *m_store;
  const ReplayModel &model = *st.model;
  const auto ri = static_cast<size_t>(st.recv[message]);
  const kernels::replay::RecvMessage &r = model.programs[slot].recvs[ri];
  MatchedMessage m;
  if (st.owned(r.src)) {
    put_send_half(
        m, send_half(model, static_cast<size_t>(r.src - st.first_rank), static_cast<size_t>(r.send_index), st.traits));
  } else {
    const auto it = std::lower_bound(st.remote.begin(), st.remote.end(), message,
                                     [](const auto &x, size_t k) { return x.first < k; });
    put_send_half(m, it->second);
  }
  put_recv_half(m, model, slot, ri, st.traits);
  return m;
}

MessageEnds MatchedMessageTable::ends_of(size_t message, size_t slot) const {
  const auto &p = m_store->model->programs[slot];
  return {p.recvs[static_cast<size_t>(m_store->recv[message])].src, p.rank};
}

MatchedMessage MatchedMessageTable::operator[](size_t i) const {
  const size_t message = m_begin + i;
  return assemble(message, receiver_of(message));
}

MatchedMessageTable::const_iterator MatchedMessageTable::begin() const {
  return empty() ? end() : const_iterator(this, m_begin, receiver_of(m_begin));
}

MatchedMessageTable::const_iterator MatchedMessageTable::end() const { return const_iterator(this, m_end, 0); }

MatchedMessageTable::const_iterator &MatchedMessageTable::const_iterator::operator++() {
  const auto &first = m_table->m_store->first;
  ++m_message;
  while (m_slot + 1 < first.size() && first[m_slot + 1] <= m_message) ++m_slot;
  return *this;
}

MatchedMessageTable MatchedMessageTable::of_receiver(size_t slot) const {
  const auto &first = m_store->first;
  return {m_store, std::clamp(first[slot], m_begin, m_end), std::clamp(first[slot + 1], m_begin, m_end)};
}

MatchedMessageTable match_messages(const Context &ctx, std::shared_ptr<const ReplayModel> model_ptr) {
  const ReplayModel &model = *model_ptr;
  auto st = std::make_shared<MatchedMessageTable::Store>();
  st->model = std::move(model_ptr);
  st->traits = classify_ops(ctx.store().ops());
  st->first_rank = model.programs.empty() ? 0 : model.programs[0].rank;
  // The send halves of senders another process owns travel to the receiver's owner: at
  // K = 1 none does, with blocks of neighbouring ranks few.
  std::vector<std::vector<Routed>> route(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    for (size_t k = 0; k < p.sends.size(); ++k) {
      const int32_t dst = p.sends[k].dst, recv_index = p.sends[k].recv_index;
      if (dst < 0 || recv_index < 0 || st->owned(dst)) continue;
      route[static_cast<size_t>(ctx.owner_of(dst))].push_back({send_half(model, s, k, st->traits), dst, recv_index});
    }
  }
  std::vector<Routed> arrived = ctx.alltoallv(route);
  route = {};
  std::sort(arrived.begin(), arrived.end(), [](const Routed &a, const Routed &b) {
    return std::tie(a.dst, a.recv_index) < std::tie(b.dst, b.recv_index);
  });
  // A receive the replay matched is kept when its send half is here: always for an owned
  // sender whose send names it, for another's when it arrived (it is expected to).
  st->first.push_back(0);
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    for (const int32_t ri : matched_receives(model, s)) {
      const kernels::replay::RecvMessage &r = p.recvs[static_cast<size_t>(ri)];
      if (st->owned(r.src)) {
        const auto &sends = model.programs[static_cast<size_t>(r.src - st->first_rank)].sends;
        if (r.send_index < 0 || static_cast<size_t>(r.send_index) >= sends.size() ||
            sends[static_cast<size_t>(r.send_index)].dst != p.rank ||
            sends[static_cast<size_t>(r.send_index)].recv_index != ri)
          continue;
      } else {
        const auto it = std::lower_bound(arrived.begin(), arrived.end(), std::pair{p.rank, ri},
                                         [](const Routed &a, const std::pair<int32_t, int32_t> &k) {
                                           return std::tie(a.dst, a.recv_index) < std::tie(k.first, k.second);
                                         });
        if (it == arrived.end() || it->dst != p.rank || it->recv_index != ri) continue;
        st->remote.emplace_back(st->recv.size(), it->half);
      }
      st->recv.push_back(ri);
    }
    st->first.push_back(st->recv.size());
  }
  st->recv.shrink_to_fit();
  st->remote.shrink_to_fit();
  const size_t n = st->recv.size();
  return {std::move(st), 0, n};
}

ProductBuilder matched_messages_builder() {
  return {product_name<MatchedMessages>(),
          "both sides' timing of every message, joined by the receiver's owner (one all-to-all)",
          {product_name<MatchedRun>()},
          [](Context &ctx, const std::vector<std::string_view> &) {
            ctx.progress().begin("joining both sides of every message");
            auto items = match_messages(ctx, ctx.products().get<MatchedRun>().model);
            ctx.progress().end();
            ctx.products().publish(MatchedMessages{std::move(items)});
          }};
}

}  // namespace perfsift::pipeline
