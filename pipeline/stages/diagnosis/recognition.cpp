// Stage `diagnosis`: recognising the parallel model from the communication, without
// configuration. From the sparse communication matrix (every process sees it) and each
// rank's forwarding (receive blocks followed by send blocks to other partners), a
// confidence for each model: one rank serving all others, or masters side by side each
// serving its own workers (master-worker); a 2-D grid with
// data passed on downstream (wavefront); bisection partners at every level of a
// recursive halving, exchanged rather than forwarded, or handed down a tree of the
// halving's splits and back up (divide-and-conquer: a tree has no cycle, a wavefront's
// grid does, so a tree on 6 ranks, whose splits are all neighbours on a 3 x 2 grid, is
// not a wavefront).
//
// Request/reply balance is counted in turns (runs of messages one way) between the master
// candidate and each worker: a request, a task and a result, or tasks in flight whose
// results double as requests, alternate as one request and one reply do.
//
// Cost: gathers of the distinct communicating pairs and of the master candidate's
// messages (worker, direction, time), one sum; O(messages) work.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <set>

#include "pipeline/stages/diagnosis/diagnosis.h"

namespace perfsift::pipeline::diagnosis {

namespace {

// The run's communication matrix, sparse: messages per (source, destination), gathered everywhere.
std::vector<hc::PairCount> communicating_pairs(const Context &ctx, const MatchedMessageTable &msgs) {
  // A hash map (not a tree lookup per message): the pairs are few, the messages many.
  std::unordered_map<int64_t, int64_t> local;
  const int64_t n = ctx.nranks();
  for (auto it = msgs.begin(); it != msgs.end(); ++it) {
    const MessageEnds e = it.ends();
    ++local[e.src * n + e.dst];
  }
  std::vector<hc::PairCount> mine;
  for (const auto &[k, count] : local)
    mine.push_back({static_cast<int32_t>(k / n), static_cast<int32_t>(k % n), count});
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

// Collective (a gather): request/reply balance counted in turns, not messages, between
// each master and its workers: a task of a request, a task and a result message, or tasks
// kept in flight, still alternate between worker and master.
double balance_in_turns(const Context &ctx, const MatchedMessageTable &msgs, const std::vector<int32_t> &masters) {
  std::vector<hc::Turn> mine;
  for (auto it = msgs.begin(); it != msgs.end(); ++it) {
    const MessageEnds m = it.ends();  // the message itself only when it touches a master
    if (m.src == m.dst) continue;
    for (const int32_t x : masters)
      if (m.src == x || m.dst == x) {
        const int32_t worker = m.src == x ? m.dst : m.src;
        mine.push_back({x * ctx.nranks() + worker, m.dst == x, (*it).timing.send_enter});
        break;
      }
  }
  return hc::turn_balance(ctx.allgatherv(mine));
}

// Farms side by side (masters each serving workers of their own, as a run split into
// communicators has): after the master candidate `first`, the rank with the most partners
// among the pairs no master touches, while it has two or more. Every other rank must then
// talk to one master only, and each master serve two ranks or more; else the run has the
// one master candidate.
std::vector<int32_t> farm_masters(const std::vector<hc::PairCount> &pairs, int32_t first) {
  std::vector<int32_t> masters{first};
  // Flags, not a search of the masters: a run of many ranks talking to neighbours adds
  // hundreds of candidates, each round testing every pair.
  int32_t top = first;
  for (const auto &p : pairs) top = std::max({top, p.src, p.dst});
  std::vector<uint8_t> flagged(static_cast<size_t>(top) + 1, 0);
  flagged[static_cast<size_t>(first)] = 1;
  auto is_master = [&](int32_t r) { return r >= 0 && r <= top && flagged[static_cast<size_t>(r)] != 0; };
  for (;;) {
    std::map<int32_t, std::set<int32_t>> partners;
    for (const auto &p : pairs)
      if (p.src != p.dst && !is_master(p.src) && !is_master(p.dst)) {
        partners[p.src].insert(p.dst);
        partners[p.dst].insert(p.src);
      }
    if (partners.empty()) break;
    int32_t next = -1;
    size_t most = 0;
    for (const auto &[r, with] : partners)
      if (with.size() > most) most = with.size(), next = r;
    if (most < 2) return {first};
    masters.push_back(next);
    flagged[static_cast<size_t>(next)] = 1;
  }
  if (masters.size() == 1) return masters;
  std::map<int32_t, std::set<int32_t>> masters_of, workers_of;
  for (const auto &p : pairs) {
    if (p.src == p.dst) continue;
    if (is_master(p.src) && is_master(p.dst)) return {first};  // masters serve workers only
    const int32_t m = is_master(p.src) ? p.src : p.dst, w = is_master(p.src) ? p.dst : p.src;
    masters_of[w].insert(m);
    workers_of[m].insert(w);
  }
  for (const auto &[w, ms] : masters_of)
    if (ms.size() > 1) return {first};
  for (const int32_t m : masters)
    if (workers_of[m].size() < 2) return {first};
  std::sort(masters.begin(), masters.end());
  return masters;
}

// Collective: the master-worker score, of one master or of farms side by side.
void score_farms(const Context &ctx, const std::vector<hc::PairCount> &pairs, const MatchedMessageTable &msgs,
                 Recognition &r) {
  r.mw = hc::score_master_worker(pairs, ctx.nranks());
  if (r.mw.master < 0) return;
  r.masters = {r.mw.master};
  r.mw.balance = balance_in_turns(ctx, msgs, r.masters);
  r.mw.confidence = r.mw.touching * r.mw.served * r.mw.balance;
  const auto masters = farm_masters(pairs, r.mw.master);
  if (masters.size() < 2) return;
  // Every message touches a master (farm_masters made sure); the workers served, of the others.
  std::set<int32_t> served;
  for (const auto &p : pairs)
    if (p.src != p.dst)
      served.insert(std::find(masters.begin(), masters.end(), p.src) != masters.end() ? p.dst : p.src);
  hc::MasterWorkerScore farms = r.mw;
  farms.touching = 1;
  farms.served =
      static_cast<double>(served.size()) / static_cast<double>(ctx.nranks() - static_cast<int32_t>(masters.size()));
  farms.balance = balance_in_turns(ctx, msgs, masters);
  farms.confidence = farms.touching * farms.served * farms.balance;
  if (farms.confidence <= r.mw.confidence) return;
  r.mw = farms;
  r.masters = masters;
}

// The bisection's splits of ranks 0..nranks-1, each group [lo, hi) splitting at mid
// (rounded down or up, as hc::split_level allows): the pairs (lo, mid).
void bisection_splits(int32_t lo, int32_t hi, int32_t round_up, std::set<std::pair<int32_t, int32_t>> &out) {
  if (hi - lo < 2) return;
  const int32_t mid = lo + (hi - lo + round_up) / 2;
  out.insert({lo, mid});
  bisection_splits(lo, mid, round_up, out);
  bisection_splits(mid, hi, round_up, out);
}

// How well the communicating pairs form a tree of the bisection's splits (Recognition::tree).
double tree_score(const std::vector<hc::PairCount> &pairs, int32_t nranks) {
  if (nranks < 4) return 0;  // a pair or a triple: a request/reply as much as a split
  std::set<std::pair<int32_t, int32_t>> used;
  for (const auto &p : pairs)
    if (p.src != p.dst && p.messages > 0 && p.src >= 0 && p.dst >= 0 && p.src < nranks && p.dst < nranks)
      used.insert({std::min(p.src, p.dst), std::max(p.src, p.dst)});
  if (used.size() != static_cast<size_t>(nranks - 1)) return 0;  // a tree on all ranks has P - 1 edges
  // Connected (with P - 1 edges: no cycle).
  std::vector<int32_t> root(static_cast<size_t>(nranks));
  for (int32_t r = 0; r < nranks; ++r) root[static_cast<size_t>(r)] = r;
  auto find = [&](int32_t r) {
    while (root[static_cast<size_t>(r)] != r)
      r = root[static_cast<size_t>(r)] = root[static_cast<size_t>(root[static_cast<size_t>(r)])];
    return r;
  };
  for (const auto &[a, b] : used) {
    const int32_t x = find(a), y = find(b);
    if (x == y) return 0;
    root[static_cast<size_t>(x)] = y;
  }
  double best = 0;
  for (const int32_t round_up : {0, 1}) {
    std::set<std::pair<int32_t, int32_t>> splits;
    bisection_splits(0, nranks, round_up, splits);
    double both = 0;
    for (const auto &s : splits) both += used.count(s);
    best = std::max(best, both / static_cast<double>(splits.size()) * both / static_cast<double>(used.size()));
  }
  return best;
}

}  // namespace

Recognition recognise(const Context &ctx, const ReplayModel &model, const MatchedMessageTable &msgs) {
  const auto pairs = communicating_pairs(ctx, msgs);
  Recognition r;
  score_farms(ctx, pairs, msgs, r);
  r.grid = hc::best_grid(pairs, ctx.nranks());
  r.dc = hc::score_divide_and_conquer(pairs, ctx.nranks());
  r.halo_like =
      r.grid.px > 0 && r.grid.neighbour_share >= 0.99 && r.dc.median_pair_messages >= Recognition::kHaloPairMessages;
  if (r.halo_like) r.dc.confidence *= 0.5;
  r.tree = tree_score(pairs, ctx.nranks());
  r.forwarding = forwarding_share(ctx, model);
  return r;
}

}  // namespace perfsift::pipeline::diagnosis
