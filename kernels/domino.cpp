// Domino-path search (see domino.h).
#include "kernels/domino.h"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>

namespace perfsift::kernels::domino {

namespace rp = replay;

namespace {

constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max();

uint64_t key_of(EventRef e) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(e.rank)) << 40) ^ static_cast<uint64_t>(e.event);
}

struct Search {
  const std::vector<rp::RankProgram> &programs;
  const std::vector<std::vector<rp::EventTiming>> &baseline;
  const std::function<std::vector<EventRef>(EventRef)> &partners;
  const Evaluate &evaluate;
  const Options &opt;
  int64_t t0 = 0;
  std::unordered_map<uint64_t, int64_t> memo{};
  std::vector<int32_t> slot_of{};  // rank -> index into programs
  int64_t replays = 0;
  // For the bound: per rank, baseline enter times, waits from event i on, and end.
  std::vector<std::vector<int64_t>> enters{}, waits_after{};
  std::vector<int64_t> ends{};

  void prepare() {
    enters.resize(programs.size());
    waits_after.resize(programs.size());
    ends.assign(programs.size(), 0);
    for (size_t s = 0; s < programs.size(); ++s) {
      const size_t n = baseline[s].size();
      enters[s].resize(n);
      waits_after[s].assign(n + 1, 0);
      for (size_t i = n; i-- > 0;) {
        enters[s][i] = baseline[s][i].enter;
        waits_after[s][i] = waits_after[s][i + 1] + wait({programs[s].rank, static_cast<int64_t>(i)});
      }
      if (n) ends[s] = baseline[s][n - 1].exit;
    }
  }
  // No rank can gain more than e's wait, nor more than its own waiting from e's time on
  // (earlier events are not after e): T(e) >= max_r end_r - min(wait(e), W_r(>= enter_e)).
  int64_t lower_bound(EventRef e) const {
    const size_t se = static_cast<size_t>(slot_of[static_cast<size_t>(e.rank)]);
    const int64_t t = baseline[se][static_cast<size_t>(e.event)].enter, w = wait(e);
    int64_t lb = 0;
    for (size_t s = 0; s < programs.size(); ++s) {
      const size_t k = static_cast<size_t>(std::lower_bound(enters[s].begin(), enters[s].end(), t) - enters[s].begin());
      lb = std::max(lb, ends[s] - std::min(w, waits_after[s][k]));
    }
    return lb;
  }

  // Waiting in MPI_Finalize is the end of the run, not a message anyone can reschedule.
  int64_t wait(EventRef e) const {
    const size_t s = static_cast<size_t>(slot_of[static_cast<size_t>(e.rank)]);
    const auto &p = programs[s];
    const auto &ev = p.events[static_cast<size_t>(e.event)];
    for (int32_t k = ev.first_item; k < ev.first_item + ev.items; ++k) {
      const auto &it = p.items[static_cast<size_t>(k)];
      if (it.type == rp::ItemType::Collective &&
          p.colls[static_cast<size_t>(it.index)].flow == CollectiveFlow::Finalize)
        return 0;
    }
    const auto &t = baseline[s][static_cast<size_t>(e.event)];
    return t.exit - t.nowait_exit;
  }

  // The events of `rank` up to `last` whose zeroed wait gives the smallest predicted time
  // (all ties), and that time; empty when nothing beats the baseline.
  std::pair<int64_t, std::vector<EventRef>> best_up_to(int32_t rank, int64_t last) {
    std::vector<EventRef> cand;
    for (int64_t j = 0; j <= last; ++j)
      if (wait({rank, j}) > 0) cand.push_back({rank, j});
    std::stable_sort(cand.begin(), cand.end(), [&](EventRef a, EventRef b) { return wait(a) > wait(b); });
    int64_t best = t0;
    std::vector<EventRef> ties;
    const size_t batch = 16;  // fixed: the candidates tried do not depend on the thread count
    size_t k = 0;
    while (k < cand.size()) {
      std::vector<EventRef> todo;
      size_t stop = k;
      // Bound: a wait w can shorten the run by at most w.
      const int64_t threshold = best < t0 ? best + 1 : t0;
      while (stop < cand.size() && todo.size() < batch && t0 - wait(cand[stop]) <= best) {
        if (!memo.count(key_of(cand[stop]))) {
          if (lower_bound(cand[stop]) >= threshold)
            memo[key_of(cand[stop])] = kInfinity;  // cannot matter
          else
            todo.push_back(cand[stop]);
        }
        ++stop;
      }
      if (stop == k) break;
      if (!todo.empty() && replays < opt.max_replays) {
        // A candidate matters only if it beats the best so far (or ties it, below t0).
        const auto times = evaluate(todo, threshold);
        replays += static_cast<int64_t>(todo.size());
        for (size_t i = 0; i < todo.size(); ++i) memo[key_of(todo[i])] = times[i];
      }
      for (size_t i = k; i < stop; ++i) {
        auto it = memo.find(key_of(cand[i]));
        if (it == memo.end()) continue;
        if (it->second < best) {
          best = it->second;
          ties.clear();
        }
        if (it->second == best && best < t0) ties.push_back(cand[i]);
      }
      k = stop;
    }
    std::sort(ties.begin(), ties.end(), [](EventRef a, EventRef b) { return a.event < b.event; });
    return {best, ties};
  }

  // ComputingForEachProcs: returns w(D) and the path it extends.
  int64_t follow(EventRef at, int64_t t_p, std::vector<Step> &path, int depth) {
    if (depth > 100000) return t_p;
    auto [best, ties] = best_up_to(at.rank, at.event);
    if (ties.empty() || best > t_p) return t_p;
    int64_t result = t_p;
    std::vector<Step> best_path = path;
    int explored = 0;
    for (const EventRef m : ties) {
      if (explored++ >= opt.max_ties) break;
      const bool seen =
          std::any_of(path.begin(), path.end(), [&](const Step &s) { return s.event == m || s.partner == m; });
      if (m == at || seen) continue;
      EventRef partner;
      for (const EventRef q : partners(m))
        if (q.rank != m.rank) {
          partner = q;
          break;
        }
      std::vector<Step> branch = path;
      branch.push_back({m, partner, wait(m), best});
      int64_t w = best;
      if (partner.rank >= 0) {
        const bool loop = std::any_of(path.begin(), path.end(),
                                      [&](const Step &s) { return s.event == partner || s.partner == partner; });
        if (!loop) w = follow(partner, best, branch, depth + 1);
      }
      if (w < result || (w == result && best_path.size() == path.size())) {
        result = w;
        best_path = std::move(branch);
      }
    }
    path = std::move(best_path);
    return result;
  }
};

}  // namespace

Result find_paths(const std::vector<rp::RankProgram> &programs,
                  const std::vector<std::vector<rp::EventTiming>> &baseline,
                  const std::function<std::vector<EventRef>(EventRef)> &partners, const Evaluate &evaluate,
                  const Options &opt) {
  Search s{programs, baseline, partners, evaluate, opt};
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  s.slot_of.assign(static_cast<size_t>(nranks), -1);
  for (size_t k = 0; k < programs.size(); ++k)
    s.slot_of[static_cast<size_t>(programs[k].rank)] = static_cast<int32_t>(k);
  s.prepare();
  for (const auto &t : baseline)
    if (!t.empty()) s.t0 = std::max(s.t0, t.back().exit);
  Result r;
  r.baseline = s.t0;
  r.best = s.t0;
  for (const auto &p : programs) {
    if (p.events.empty()) continue;
    Path path;
    path.rank = p.rank;
    const int64_t w = s.follow({p.rank, static_cast<int64_t>(p.events.size()) - 1}, kInfinity, path.steps, 0);
    if (path.steps.empty() || w == kInfinity) continue;
    path.predicted = w;
    r.best = std::min(r.best, w);
    r.paths.push_back(std::move(path));
  }
  std::stable_sort(r.paths.begin(), r.paths.end(),
                   [](const Path &a, const Path &b) { return a.predicted < b.predicted; });
  // The longest-wait choice, for comparison.
  EventRef longest;
  int64_t lw = 0;
  for (const auto &p : programs)
    for (int64_t j = 0; j < static_cast<int64_t>(p.events.size()); ++j)
      if (const int64_t w = s.wait({p.rank, j}); w > lw) {
        lw = w;
        longest = {p.rank, j};
      }
  r.longest_wait.event = longest;
  r.longest_wait.wait = lw;
  r.longest_wait.predicted = s.t0;
  if (longest.rank >= 0) {
    auto it = s.memo.find(key_of(longest));
    r.longest_wait.predicted =
        it != s.memo.end() && it->second != kInfinity ? it->second : evaluate({longest}, kInfinity)[0];
    for (const EventRef q : partners(longest))
      if (q.rank != longest.rank) {
        r.longest_wait.partner = q;
        break;
      }
  }
  r.replays = s.replays;
  return r;
}

std::vector<std::vector<int64_t>> rest_bounds(const std::vector<rp::RankProgram> &programs,
                                              const std::vector<std::vector<rp::EventTiming>> &baseline) {
  std::vector<std::vector<int64_t>> rest(programs.size());
  for (size_t s = 0; s < programs.size(); ++s) {
    const auto &ev = programs[s].events;
    rest[s].assign(ev.size() + 1, 0);
    for (size_t i = ev.size(); i-- > 0;) {
      const auto &t = baseline[s][i];
      rest[s][i] = rest[s][i + 1] + ev[i].gap + (t.nowait_exit - t.enter);
    }
  }
  return rest;
}

int64_t zero_wait_time(const std::vector<rp::RankProgram> &programs, const rp::Scenario &base,
                       const std::vector<std::vector<int64_t>> &rest, const rp::Snapshot &snap, int32_t slot,
                       EventRef e, int64_t threshold) {
  rp::Scenario sc = base;
  sc.zero_wait_rank = e.rank;
  sc.zero_wait_event = e.event;
  sc.rest = &rest;
  sc.abort_at = threshold;
  sc.resume = &snap;
  sc.resume_at = snap.timings[static_cast<size_t>(slot)][static_cast<size_t>(e.event)].enter;
  sc.stop_when_converged = true;
  return rp::replay_serial(programs, sc, false).makespan;
}

Evaluate serial_evaluator(const std::vector<rp::RankProgram> &programs, const rp::Scenario &base,
                          const std::vector<std::vector<int64_t>> &rest) {
  // Candidates resume from the baseline at the zeroed event's start: what ended before
  // cannot change.
  auto snap = std::make_shared<rp::Snapshot>(rp::replay_snapshot(programs, base));
  std::vector<int32_t> slot_of;
  for (size_t s = 0; s < programs.size(); ++s) {
    if (static_cast<size_t>(programs[s].rank) >= slot_of.size())
      slot_of.resize(static_cast<size_t>(programs[s].rank) + 1, -1);
    slot_of[static_cast<size_t>(programs[s].rank)] = static_cast<int32_t>(s);
  }
  return [&programs, &base, &rest, snap, slot_of](const std::vector<EventRef> &events, int64_t threshold) {
    std::vector<int64_t> out(events.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < events.size(); ++i) {
      out[i] = zero_wait_time(programs, base, rest, *snap, slot_of[static_cast<size_t>(events[i].rank)], events[i],
                              threshold);
    }
    return out;
  };
}

std::function<std::vector<EventRef>(EventRef)> program_partners(
    const std::vector<rp::RankProgram> &programs, const std::vector<std::vector<rp::EventTiming>> &baseline) {
  struct Tables {
    std::vector<int32_t> slot_of;
    std::vector<std::vector<int64_t>> send_event, recv_event;    // per rank: message index -> event
    std::unordered_map<int64_t, std::vector<EventRef>> members;  // collective instance -> member events
  };
  auto t = std::make_shared<Tables>();
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  t->slot_of.assign(static_cast<size_t>(nranks), -1);
  t->send_event.resize(programs.size());
  t->recv_event.resize(programs.size());
  for (size_t s = 0; s < programs.size(); ++s) {
    const auto &p = programs[s];
    t->slot_of[static_cast<size_t>(p.rank)] = static_cast<int32_t>(s);
    t->send_event[s].assign(p.sends.size(), -1);
    t->recv_event[s].assign(p.recvs.size(), -1);
    for (int64_t i = 0; i < static_cast<int64_t>(p.events.size()); ++i) {
      const auto &e = p.events[static_cast<size_t>(i)];
      for (int32_t k = e.first_item; k < e.first_item + e.items; ++k) {
        const auto &it = p.items[static_cast<size_t>(k)];
        if (it.type == rp::ItemType::Send || it.type == rp::ItemType::PostSend)
          t->send_event[s][static_cast<size_t>(it.index)] = i;
        if (it.type == rp::ItemType::Recv || it.type == rp::ItemType::PostRecv)
          t->recv_event[s][static_cast<size_t>(it.index)] = i;
        if (it.type == rp::ItemType::Collective || it.type == rp::ItemType::PostCollective)
          t->members[p.colls[static_cast<size_t>(it.index)].instance].push_back({p.rank, i});
      }
    }
  }
  return [t, &programs, &baseline](EventRef e) {
    std::vector<EventRef> out;
    const int32_t s = t->slot_of[static_cast<size_t>(e.rank)];
    if (s < 0) return out;
    const auto &p = programs[static_cast<size_t>(s)];
    const auto &ev = p.events[static_cast<size_t>(e.event)];
    auto sender = [&](int32_t recv_index) {
      const auto &m = p.recvs[static_cast<size_t>(recv_index)];
      if (m.src >= 0 && t->slot_of[static_cast<size_t>(m.src)] >= 0)
        out.push_back({m.src, t->send_event[static_cast<size_t>(t->slot_of[static_cast<size_t>(m.src)])]
                                           [static_cast<size_t>(m.send_index)]});
    };
    auto receiver = [&](int32_t send_index) {
      const auto &m = p.sends[static_cast<size_t>(send_index)];
      if (m.dst >= 0 && t->slot_of[static_cast<size_t>(m.dst)] >= 0)
        out.push_back({m.dst, t->recv_event[static_cast<size_t>(t->slot_of[static_cast<size_t>(m.dst)])]
                                           [static_cast<size_t>(m.recv_index)]});
    };
    auto collective = [&](const rp::Collective &c) {
      if (c.flow == CollectiveFlow::FromRoot && c.root >= 0) {
        for (const auto &m : t->members[c.instance])
          if (m.rank == c.root) out.push_back(m);
        return;
      }
      for (const auto &m : t->members[c.instance])
        if (!(m == e)) out.push_back(m);
    };
    for (int32_t k = ev.first_item; k < ev.first_item + ev.items; ++k) {
      const auto &it = p.items[static_cast<size_t>(k)];
      switch (it.type) {
        case rp::ItemType::Recv:
          sender(it.index);
          break;
        case rp::ItemType::Send:
          receiver(it.index);
          break;
        case rp::ItemType::Collective:
          collective(p.colls[static_cast<size_t>(it.index)]);
          break;
        case rp::ItemType::Complete:
          // The activation with this slot: search back within the rank (slots are few).
          for (int32_t a = k - 1; a >= 0; --a) {
            const auto &act = p.items[static_cast<size_t>(a)];
            if (act.slot != it.index) continue;
            if (act.type == rp::ItemType::PostRecv)
              sender(act.index);
            else if (act.type == rp::ItemType::PostSend)
              receiver(act.index);
            else if (act.type == rp::ItemType::PostCollective)
              collective(p.colls[static_cast<size_t>(act.index)]);
            break;
          }
          break;
        default:
          break;
      }
    }
    // The latest arrival first: the one that held this event up.
    auto enter = [&](EventRef x) {
      const int32_t q = t->slot_of[static_cast<size_t>(x.rank)];
      if (q < 0 || x.event < 0 || static_cast<size_t>(x.event) >= baseline[static_cast<size_t>(q)].size())
        return INT64_MIN;
      return baseline[static_cast<size_t>(q)][static_cast<size_t>(x.event)].enter;
    };
    out.erase(std::remove_if(out.begin(), out.end(), [](EventRef x) { return x.event < 0; }), out.end());
    std::stable_sort(out.begin(), out.end(), [&](EventRef a, EventRef b) { return enter(a) > enter(b); });
    return out;
  };
}

}  // namespace perfsift::kernels::domino
