// Stage `diagnosis`: recognising the parallel model from the communication, without
// configuration. From the sparse communication matrix (every process sees it) and each
// rank's forwarding (receive blocks followed by send blocks to other partners), a
// confidence for each model: one rank serving all others (master-worker); a 2-D grid with
// data passed on downstream (wavefront); bisection partners at every level of a
// recursive halving, exchanged rather than forwarded (divide-and-conquer).
//
// Request/reply balance is counted in turns (runs of messages one way) between the master
// candidate and each worker: a request, a task and a result, or tasks in flight whose
// results double as requests, alternate as one request and one reply do.
//
// Cost: gathers of the distinct communicating pairs and of the master candidate's
// messages (worker, direction, time), one sum; O(messages) work.
#include <algorithm>
#include <map>

#include "pipeline/stages/diagnosis/diagnosis.h"

namespace perfsift::pipeline::diagnosis {

namespace {

// The run's communication matrix, sparse: messages per (source, destination), gathered everywhere.
std::vector<hc::PairCount> communicating_pairs(const Context &ctx, const std::vector<MatchedMessage> &msgs) {
  std::map<std::pair<int32_t, int32_t>, int64_t> local;
  for (const auto &m : msgs) ++local[{m.src, m.dst}];
  std::vector<hc::PairCount> mine;
  for (const auto &[k, n] : local) mine.push_back({k.first, k.second, n});
  std::map<std::pair<int32_t, int32_t>, int64_t> merged;
  for (const auto &p : ctx.allgatherv(mine)) merged[{p.src, p.dst}] += p.messages;
  std::vector<hc::PairCount> pairs;
  for (const auto &[k, n] : merged) pairs.push_back({k.first, k.second, n});
  return pairs;
}

// One owned rank's send and receive completions in program order.
std::vector<hc::Completion> completion_order(const kernels::replay::RankProgram &p, const ReplayModel::Side &side) {
  std::vector<std::pair<int32_t, hc::Completion>> seq;
  for (size_t k = 0; k < p.sends.size(); ++k)
    if (p.sends[k].dst >= 0)
      seq.push_back({side.send_done[k] >= 0 ? side.send_done[k] : side.send_event[k], {'S', p.sends[k].dst}});
  for (size_t k = 0; k < p.recvs.size(); ++k)
    if (p.recvs[k].src >= 0)
      seq.push_back({side.recv_done[k] >= 0 ? side.recv_done[k] : side.recv_event[k], {'R', p.recvs[k].src}});
  std::stable_sort(seq.begin(), seq.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  // A call that both sent and received (Sendrecv, or a Waitall of both) is an exchange.
  std::vector<hc::Completion> order;
  for (size_t i = 0; i < seq.size();) {
    size_t k = i;
    bool sends = false, recvs = false;
    for (; k < seq.size() && seq[k].first == seq[i].first; ++k) (seq[k].second.kind == 'S' ? sends : recvs) = true;
    if (sends && recvs)
      order.push_back({'X', -1});
    else
      for (size_t x = i; x < k; ++x) order.push_back(seq[x].second);
    i = k;
  }
  return order;
}

// Collective (a sum): of the receive blocks followed by sends, the share followed by sends to other partners.
double forwarding_share(const Context &ctx, const ReplayModel &model) {
  std::vector<int64_t> blocks = {0, 0};
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto [disjoint, total] = hc::forwarding_blocks(completion_order(model.programs[s], model.side[s]));
    blocks[0] += disjoint;
    blocks[1] += total;
  }
  ctx.allreduce_sum(blocks);
  return blocks[1] ? static_cast<double>(blocks[0]) / static_cast<double>(blocks[1]) : 0;
}

// Collective (a gather): request/reply balance counted in turns, not messages, for the
// master candidate: a task of a request, a task and a result message, or tasks kept in
// flight, still alternate between worker and master.
void balance_in_turns(const Context &ctx, const std::vector<MatchedMessage> &msgs, hc::MasterWorkerScore &s) {
  if (s.master < 0) return;
  std::vector<hc::Turn> mine;
  for (const auto &m : msgs)
    if (m.src != m.dst && (m.src == s.master || m.dst == s.master))
      mine.push_back({m.src == s.master ? m.dst : m.src, m.dst == s.master, m.timing.send_enter});
  s.balance = hc::turn_balance(ctx.allgatherv(mine));
  s.confidence = s.touching * s.served * s.balance;
}

}  // namespace

Recognition recognise(const Context &ctx, const ReplayModel &model, const std::vector<MatchedMessage> &msgs) {
  const auto pairs = communicating_pairs(ctx, msgs);
  Recognition r;
  r.mw = hc::score_master_worker(pairs, ctx.nranks());
  balance_in_turns(ctx, msgs, r.mw);
  r.grid = hc::best_grid(pairs, ctx.nranks());
  r.dc = hc::score_divide_and_conquer(pairs, ctx.nranks());
  r.forwarding = forwarding_share(ctx, model);
  return r;
}

}  // namespace perfsift::pipeline::diagnosis
