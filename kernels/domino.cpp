// Domino-path search (see domino.h).
#include "kernels/domino.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <memory>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "kernels/replay_cuts.h"

namespace perfsift::kernels::domino {

namespace rp = replay;

namespace {

constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max();

uint64_t key_of(EventRef e) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(e.rank)) << 40) ^ static_cast<uint64_t>(e.event);
}

// What is known of a candidate's predicted time: the time itself, or only a lower bound
// (the replay stopped at a threshold, or a bound ruled it out): enough while no later
// question asks below that bound.
struct Known {
  int64_t time;
  bool exact;
  bool settles(int64_t threshold) const { return exact || time >= threshold; }
  int64_t value() const { return exact ? time : kInfinity; }
};

// What is known per candidate (key_of), in one open-addressed table: a long run's search
// asks about millions of events, and a node per entry cost an allocation and a cache
// miss each.
class Memo {
 public:
  const Known *find(uint64_t key) const {
    if (m_keys.empty()) return nullptr;
    for (size_t i = slot_of(key);; i = (i + 1) & (m_keys.size() - 1)) {
      if (m_keys[i] == key) return &m_values[i];
      if (m_keys[i] == kEmpty) return nullptr;
    }
  }
  Known &operator[](uint64_t key) {
    if (2 * (m_size + 1) > m_keys.size()) grow();
    for (size_t i = slot_of(key);; i = (i + 1) & (m_keys.size() - 1)) {
      if (m_keys[i] == key) return m_values[i];
      if (m_keys[i] == kEmpty) {
        m_keys[i] = key;
        ++m_size;
        return m_values[i] = Known{0, false};
      }
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // key_of never gives it (ranks < 2^24)
  size_t slot_of(uint64_t key) const {              // Fibonacci hashing: the product's top bits
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> m_shift);
  }
  void grow() {
    std::vector<uint64_t> keys = std::move(m_keys);
    std::vector<Known> values = std::move(m_values);
    m_keys.assign(std::max<size_t>(1024, 2 * keys.size()), kEmpty);
    m_shift = 64 - std::countr_zero(m_keys.size());
    m_values.assign(m_keys.size(), Known{0, false});
    m_size = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) (*this)[keys[i]] = values[i];
  }
  std::vector<uint64_t> m_keys;
  std::vector<Known> m_values;
  size_t m_size = 0;
  int m_shift = 64;
};

struct Search {
  RunView &view;
  const Options &opt;
  int64_t t0 = 0;
  Memo memo{};
  int64_t replays = 0;
  std::vector<int32_t> replayed_ranks{};  // ranks with a candidate replayed (an exact time in `memo`), sorted

  // The events of `rank` up to `last` whose zeroed wait gives the smallest predicted time
  // no later than `cap` (all ties), and that time; empty when nothing beats the baseline
  // by Options::min_gain or reaches the cap (larger times cannot matter to the caller).
  std::pair<int64_t, std::vector<RunView::Candidate>> best_up_to(int32_t rank, int64_t last, int64_t cap) {
    int64_t best = std::min(cap, t0 - std::max<int64_t>(0, opt.min_gain));
    // With the replay budget spent, only a replayed candidate's exact time can beat the
    // best, and only candidates of the rank searched are replayed: a rank without one has
    // nothing to offer (its waits, bounds and heap were most of a long run's search).
    if (replays >= opt.max_replays && !std::binary_search(replayed_ranks.begin(), replayed_ranks.end(), rank))
      return {best, {}};
    const auto threshold_now = [&] { return best < t0 ? best + 1 : t0; };
    // Lower bounds rule candidates out only against a time a candidate reached, or the
    // baseline: the least gain is not a time any replay showed, and an event entering
    // before a candidate may still wait less after it (WaitBound counts calls by enter).
    bool reached = false;
    const auto bound_threshold = [&] { return reached ? best + 1 : std::min(cap, t0) < t0 ? cap + 1 : t0; };
    const auto settled = [&](EventRef e) {
      const Known *k = memo.find(key_of(e));
      return k && k->settles(threshold_now());
    };
    // `best` only falls and a candidate matters only while t0 - wait <= best: smaller
    // waits never do. The rest come largest wait first (ties in event order) from a heap,
    // their lower bounds asked a growing batch at a time (collective in a distributed
    // view): a search step reaches a few of a rank's waits, not all 10^5 of a long run.
    std::vector<RunView::Candidate> heap = view.waits_up_to(rank, last, std::max<int64_t>(1, t0 - best));
    const auto after = [](const RunView::Candidate &a, const RunView::Candidate &b) {
      return a.wait != b.wait ? a.wait < b.wait : a.event > b.event;
    };
    std::make_heap(heap.begin(), heap.end(), after);
    std::vector<RunView::Candidate> cand;  // in the order the search takes them
    constexpr int64_t kNotAsked = std::numeric_limits<int64_t>::min();
    std::vector<int64_t> bound_of;  // per cand: its lower bound (kNotAsked: settled when reached)
    size_t next_batch = 64;
    const auto reach = [&](size_t n) {
      if (n <= cand.size() || heap.empty()) return;
      const size_t from = cand.size();
      n = std::max(n, from + next_batch);
      next_batch *= 2;
      while (cand.size() < n && !heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), after);
        cand.push_back(heap.back());
        heap.pop_back();
      }
      std::vector<RunView::Candidate> asked;
      std::vector<size_t> where;
      for (size_t i = from; i < cand.size(); ++i)
        if (!settled({rank, cand[i].event})) {
          asked.push_back(cand[i]);
          where.push_back(i);
        }
      bound_of.resize(cand.size(), kNotAsked);
      if (asked.empty()) return;  // alike on every process (so is the whole search state)
      const auto bounds = view.lower_bounds(asked);
      for (size_t k = 0; k < where.size(); ++k) bound_of[where[k]] = bounds[k];
    };
    std::vector<RunView::Candidate> ties;
    const size_t batch = 16;  // fixed: the candidates tried do not depend on the thread count
    size_t k = 0;
    for (reach(1); k < cand.size(); reach(k + 1)) {
      std::vector<EventRef> todo;
      size_t stop = k;
      const int64_t threshold = threshold_now();
      for (; stop < cand.size() && todo.size() < batch && t0 - cand[stop].wait <= best; reach(++stop + 1)) {
        const EventRef e{rank, cand[stop].event};
        if (!settled(e)) {
          if (bound_of[stop] != kNotAsked && bound_of[stop] >= bound_threshold())
            memo[key_of(e)] = {bound_of[stop], false};  // cannot matter
          else
            todo.push_back(e);
        }
      }
      if (stop == k) break;
      if (!todo.empty() && replays < opt.max_replays) {
        // A candidate matters only if it beats the best so far (or ties it, below t0).
        const auto times = view.evaluate(todo, threshold);
        replays += static_cast<int64_t>(todo.size());
        if (const auto at = std::lower_bound(replayed_ranks.begin(), replayed_ranks.end(), rank);
            at == replayed_ranks.end() || *at != rank)
          replayed_ranks.insert(at, rank);
        for (size_t i = 0; i < todo.size(); ++i)
          memo[key_of(todo[i])] = times[i] == kInfinity ? Known{threshold, false} : Known{times[i], true};
      }
      for (size_t i = k; i < stop; ++i) {
        const Known *known = memo.find(key_of({rank, cand[i].event}));
        if (!known) continue;
        const int64_t t = known->value();
        if (t < best) {
          best = t;
          reached = true;
          ties.clear();
        }
        if (t == best && best < t0) ties.push_back(cand[i]);
      }
      k = stop;
    }
    std::sort(ties.begin(), ties.end(),
              [](const RunView::Candidate &a, const RunView::Candidate &b) { return a.event < b.event; });
    return {best, ties};
  }

  // ComputingForEachProcs: returns w(D) and the path it extends.
  int64_t follow(EventRef at, int64_t t_p, std::vector<Step> &path, int depth) {
    if (depth > 100000) return t_p;
    auto [best, ties] = best_up_to(at.rank, at.event, t_p);
    if (ties.empty() || best > t_p) return t_p;
    int64_t result = t_p;
    std::vector<Step> best_path = path;
    int explored = 0;
    for (const auto &c : ties) {
      if (explored++ >= opt.max_ties) break;
      const EventRef m{at.rank, c.event};
      const bool seen =
          std::any_of(path.begin(), path.end(), [&](const Step &s) { return s.event == m || s.partner == m; });
      if (m == at || seen) continue;
      const EventRef partner = view.partner(m);
      std::vector<Step> branch = path;
      branch.push_back({m, partner, c.wait, best});
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

// Every rank held here: programs and their baseline replay.
class SerialView final : public RunView {
 public:
  SerialView(const std::vector<rp::RankProgram> &programs, const std::vector<rp::TimingColumn> &baseline,
             const std::function<std::vector<EventRef>(EventRef)> &partners, const Evaluate &evaluate)
      : m_programs(programs),
        m_baseline(baseline),
        m_partners(partners),
        m_evaluate(evaluate),
        m_bound(programs, baseline) {
    int32_t nranks = 0;
    for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
    m_slot_of.assign(static_cast<size_t>(nranks), -1);
    for (size_t k = 0; k < programs.size(); ++k)
      m_slot_of[static_cast<size_t>(programs[k].rank)] = static_cast<int32_t>(k);
    for (size_t s = 0; s < programs.size(); ++s)
      if (!baseline[s].empty()) m_t0 = std::max(m_t0, baseline[s].back().exit);
  }
  int64_t baseline() override { return m_t0; }
  std::vector<int64_t> last_events() override {
    std::vector<int64_t> last(m_slot_of.size(), -1);
    for (const auto &p : m_programs) last[static_cast<size_t>(p.rank)] = static_cast<int64_t>(p.events.size()) - 1;
    return last;
  }
  std::vector<int64_t> ends() override {
    std::vector<int64_t> end(m_slot_of.size(), 0);
    for (size_t s = 0; s < m_programs.size(); ++s)
      if (!m_baseline[s].empty()) end[static_cast<size_t>(m_programs[s].rank)] = m_baseline[s].back().exit;
    return end;
  }
  std::vector<Candidate> waits_up_to(int32_t rank, int64_t last, int64_t min_wait) override {
    std::vector<Candidate> out;
    const size_t s = static_cast<size_t>(m_slot_of[static_cast<size_t>(rank)]);
    for (int64_t j = 0; j <= last; ++j)
      if (const int64_t w = wait(s, static_cast<size_t>(j)); w >= min_wait)
        out.push_back({j, w, m_baseline[s].enter(static_cast<size_t>(j))});
    return out;
  }
  std::vector<int64_t> lower_bounds(const std::vector<Candidate> &cands) override { return m_bound.bounds(cands); }
  EventRef partner(EventRef e) override {
    for (const EventRef q : m_partners(e))
      if (q.rank != e.rank) return q;
    return {};
  }
  Step longest_wait() override {
    Step st;
    for (size_t s = 0; s < m_programs.size(); ++s)
      for (size_t j = 0; j < m_programs[s].events.size(); ++j)
        if (const int64_t w = wait(s, j); w > st.wait) {
          st.wait = w;
          st.event = {m_programs[s].rank, static_cast<int64_t>(j)};
        }
    return st;
  }
  std::vector<int64_t> evaluate(const std::vector<EventRef> &events, int64_t threshold) override {
    return m_evaluate(events, threshold);
  }

 private:
  int64_t wait(size_t s, size_t i) const { return event_wait(m_programs[s], m_baseline[s][i], i); }
  const std::vector<rp::RankProgram> &m_programs;
  const std::vector<rp::TimingColumn> &m_baseline;
  const std::function<std::vector<EventRef>(EventRef)> &m_partners;
  const Evaluate &m_evaluate;
  std::vector<int32_t> m_slot_of;
  WaitBound m_bound;
  int64_t m_t0 = 0;
};

}  // namespace

int64_t event_wait(const rp::RankProgram &p, const rp::EventTiming &t, size_t i) {
  // Waiting in MPI_Finalize is the end of the run, not a message anyone can reschedule.
  const auto &ev = p.events[i];
  for (int32_t k = ev.first_item; k < ev.first_item + ev.items; ++k) {
    const auto &it = p.items[static_cast<size_t>(k)];
    if (it.type == rp::ItemType::Collective && p.colls[static_cast<size_t>(it.index)].flow == CollectiveFlow::Finalize)
      return 0;
  }
  return t.exit - t.nowait_exit;
}

int64_t duration_floor(const rp::RankProgram &p, const rp::EventTiming &t, size_t i) {
  const auto &ev = p.events[i];
  for (int32_t k = ev.first_item; k < ev.first_item + ev.items; ++k) {
    const auto &it = p.items[static_cast<size_t>(k)];
    if (it.type == rp::ItemType::Send || it.type == rp::ItemType::PostSend) return 0;
    if (it.type == rp::ItemType::Collective) {
      const auto &c = p.colls[static_cast<size_t>(it.index)];
      if (c.flow == CollectiveFlow::FromRoot && c.root != p.rank) return 0;
    }
  }
  return std::max<int64_t>(0, t.nowait_exit - t.enter);
}

WaitBound::WaitBound(const std::vector<rp::RankProgram> &programs, const std::vector<rp::TimingColumn> &timings) {
  // Each call's time beyond its floor.
  auto above = [&](size_t s, size_t i) {
    const rp::EventTiming t = timings[s][i];
    return std::max<int64_t>(0, t.exit - t.enter - duration_floor(programs[s], t, i));
  };
  // F before any event first: a step at or below it never shows, and is not kept.
  std::vector<int64_t> total(programs.size(), 0);
  for (size_t s = 0; s < programs.size(); ++s) {
    if (timings[s].empty()) continue;
    for (size_t i = 0; i < timings[s].size(); ++i) total[s] += above(s, i);
    m_latest_end = std::max(m_latest_end, timings[s].back().exit);
    m_first = std::max(m_first, timings[s].back().exit - total[s]);
  }
  // Each rank's steps come in event order, F's value rising along them; a single stream
  // enters in event order too, so the ranks' lists merge by enter through a heap (a sort
  // of every step was most of this at 10^8 events, and held them all at once). A rank
  // whose enters fall (several threads) has its steps sorted first.
  struct Stream {
    size_t s, i = 0;
    int64_t after;
    bool materialized = false;  // ranks entering out of order: their steps sorted
    std::vector<std::pair<int64_t, int64_t>> sorted;
    size_t next = 0;
  };
  std::vector<Stream> streams;
  // The stream's next step above `floor` (F never falls: a step at or below the running
  // maximum when its predecessor leaves the heap cannot raise it later either).
  const auto next_step = [&](Stream &x, int64_t floor, std::pair<int64_t, int64_t> &out) {
    if (x.materialized) {
      while (x.next < x.sorted.size() && x.sorted[x.next].second <= floor) ++x.next;
      if (x.next >= x.sorted.size()) return false;
      out = x.sorted[x.next++];
      return true;
    }
    const auto &t = timings[x.s];
    for (; x.i < t.size(); ++x.i) {
      const int64_t a = above(x.s, x.i);
      if (a == 0) continue;  // the term does not change
      x.after -= a;
      if (const int64_t f = t.exit(t.size() - 1) - x.after; f > floor) {
        out = {t.enter(x.i), f};
        ++x.i;
        return true;
      }
    }
    return false;
  };
  for (size_t s = 0; s < programs.size(); ++s) {
    if (timings[s].empty()) continue;
    Stream x{s, 0, total[s], false, {}, 0};
    bool in_order = true;
    for (size_t i = 1; i < timings[s].size() && in_order; ++i)
      in_order = timings[s].enter(i - 1) <= timings[s].enter(i);
    if (!in_order) {
      for (std::pair<int64_t, int64_t> st; next_step(x, m_first, st);) x.sorted.push_back(st);
      std::sort(x.sorted.begin(), x.sorted.end());
      x.materialized = true;
    }
    streams.push_back(std::move(x));
  }
  // Min-heap of (enter, f, stream): F(t) is the running maximum before t, and only the
  // steps where it rises are kept (a fraction of the events that waited; the look-ups
  // then mostly hit the cache).
  using Head = std::tuple<int64_t, int64_t, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
  for (size_t k = 0; k < streams.size(); ++k)
    if (std::pair<int64_t, int64_t> st; next_step(streams[k], m_first, st)) heap.emplace(st.first, st.second, k);
  int64_t top = m_first;
  while (!heap.empty()) {
    const int64_t at = std::get<0>(heap.top());
    int64_t high = top;
    while (!heap.empty() && std::get<0>(heap.top()) == at) {
      const auto [enter, f, k] = heap.top();
      heap.pop();
      high = std::max(high, f);
      if (std::pair<int64_t, int64_t> st; next_step(streams[k], std::max(top, high), st))
        heap.emplace(st.first, st.second, k);
    }
    if (high > top) m_steps.emplace_back(at, top = high);
  }
  m_steps.shrink_to_fit();
}

int64_t WaitBound::bound(int64_t enter, int64_t wait) const {
  // Events entering before `enter` no longer count as waiting after it.
  const auto it =
      std::lower_bound(m_steps.begin(), m_steps.end(), enter, [](const auto &st, int64_t t) { return st.first < t; });
  const int64_t f = it == m_steps.begin() ? m_first : std::prev(it)->second;
  return std::max<int64_t>({0, m_latest_end - wait, f});
}

std::vector<int64_t> WaitBound::bounds(const std::vector<RunView::Candidate> &cands) const {
  std::vector<int64_t> out(cands.size());
  std::vector<uint32_t> order(cands.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cands[a].enter < cands[b].enter; });
  const auto before = [](const std::pair<int64_t, int64_t> &st, int64_t t) { return st.first < t; };
  size_t pos = 0;  // every step before it enters before the current candidate
  for (const uint32_t k : order) {
    const int64_t enter = cands[k].enter;
    size_t lo = pos, hi = pos, stride = 1;  // gallop, then search [lo, hi)
    while (hi < m_steps.size() && m_steps[hi].first < enter) {
      lo = hi + 1;
      hi = lo + stride;
      stride *= 2;
    }
    hi = std::min(hi, m_steps.size());
    pos = static_cast<size_t>(std::lower_bound(m_steps.begin() + static_cast<std::ptrdiff_t>(lo),
                                               m_steps.begin() + static_cast<std::ptrdiff_t>(hi), enter, before) -
                              m_steps.begin());
    const int64_t f = pos == 0 ? m_first : m_steps[pos - 1].second;
    out[k] = std::max<int64_t>({0, m_latest_end - cands[k].wait, f});
  }
  return out;
}

Result find_paths(RunView &view, const Options &opt) {
  Search s{view, opt};
  s.t0 = view.baseline();
  Result r;
  r.baseline = s.t0;
  r.best = s.t0;
  const auto last = view.last_events();
  // Paths from the ranks that end last first: they hold up the run, and the replay budget
  // (Options::max_replays) goes to them before the others.
  const auto end = view.ends();
  std::vector<int32_t> order(last.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int32_t>(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return end[static_cast<size_t>(a)] > end[static_cast<size_t>(b)]; });
  for (const int32_t rank : order) {
    if (last[static_cast<size_t>(rank)] < 0) continue;
    Path path;
    path.rank = rank;
    const int64_t w = s.follow({rank, last[static_cast<size_t>(rank)]}, kInfinity, path.steps, 0);
    if (path.steps.empty() || w == kInfinity) continue;
    path.predicted = w;
    r.best = std::min(r.best, w);
    r.paths.push_back(std::move(path));
  }
  std::stable_sort(r.paths.begin(), r.paths.end(),
                   [](const Path &a, const Path &b) { return a.predicted < b.predicted; });
  // The longest-wait choice, for comparison.
  r.longest_wait = view.longest_wait();
  r.longest_wait.predicted = s.t0;
  if (r.longest_wait.event.rank >= 0) {
    // Replayed only as far as it may still gain Options::min_gain: less is reported as none
    // (the baseline), and a tightly coupled run's disturbance, however small, crosses
    // processes at every message to the run's end.
    const int64_t threshold = opt.min_gain > 0 ? s.t0 - opt.min_gain + 1 : kInfinity;
    const Known *known = s.memo.find(key_of(r.longest_wait.event));
    if (known && known->exact)
      r.longest_wait.predicted = known->time < threshold ? known->time : s.t0;
    else if (!known || !known->settles(threshold))
      r.longest_wait.predicted = std::min(s.t0, view.evaluate({r.longest_wait.event}, threshold)[0]);
    r.longest_wait.partner = view.partner(r.longest_wait.event);
  }
  r.replays = s.replays;
  // The candidates' rank states left for reuse, on every thread that replayed them (the
  // calling one among them).
#pragma omp parallel
  rp::Engine::release_spare_states();
  return r;
}

Result find_paths(const std::vector<rp::RankProgram> &programs, const std::vector<rp::TimingColumn> &baseline,
                  const std::function<std::vector<EventRef>(EventRef)> &partners, const Evaluate &evaluate,
                  const Options &opt) {
  SerialView view(programs, baseline, partners, evaluate);
  return find_paths(view, opt);
}

std::vector<rp::BlockDeltaColumn> rest_bounds(const std::vector<rp::RankProgram> &programs,
                                              const std::vector<rp::TimingColumn> &baseline) {
  std::vector<rp::BlockDeltaColumn> rest;
  rest.reserve(programs.size());
  std::vector<int64_t> full;  // one rank's at a time
  for (size_t s = 0; s < programs.size(); ++s) {
    const auto &ev = programs[s].events;
    full.assign(ev.size() + 1, 0);
    for (size_t i = ev.size(); i-- > 0;)
      full[i] = full[i + 1] + ev[i].gap + duration_floor(programs[s], baseline[s][i], i);
    rest.emplace_back(full);
  }
  return rest;
}

int64_t zero_wait_time(const std::vector<rp::RankProgram> &programs, const rp::Scenario &base,
                       const std::vector<rp::BlockDeltaColumn> &rest, const rp::Snapshot &snap,
                       const std::vector<std::vector<int64_t>> *cuts, int32_t slot, EventRef e, int64_t threshold) {
  rp::Scenario sc = base;
  sc.cuts = cuts;
  sc.zero_wait_rank = e.rank;
  sc.zero_wait_event = e.event;
  sc.rest = &rest;
  sc.abort_at = threshold;
  sc.resume = &snap;
  sc.resume_at = snap.timings()[static_cast<size_t>(slot)].enter(static_cast<size_t>(e.event));
  sc.stop_when_converged = true;
  // At or past the threshold the answer is only "not below it", however the replay ended.
  const int64_t t = rp::replay_serial(programs, sc, false).makespan;
  return t >= threshold ? kInfinity : t;
}

Evaluate serial_evaluator(const std::vector<rp::RankProgram> &programs, const rp::Scenario &base,
                          const std::vector<rp::BlockDeltaColumn> &rest) {
  // Candidates resume from the baseline at the zeroed event's start: what ended before
  // cannot change.
  auto snap = std::make_shared<rp::Snapshot>(rp::replay_snapshot(programs, base));
  // ... and stop where every rank leaves a clean cut equally ahead of it.
  auto cuts = std::make_shared<const std::vector<std::vector<int64_t>>>(rp::clean_cuts(programs, *snap));
  std::vector<int32_t> slot_of;
  for (size_t s = 0; s < programs.size(); ++s) {
    if (static_cast<size_t>(programs[s].rank) >= slot_of.size())
      slot_of.resize(static_cast<size_t>(programs[s].rank) + 1, -1);
    slot_of[static_cast<size_t>(programs[s].rank)] = static_cast<int32_t>(s);
  }
  return [&programs, &base, &rest, snap, cuts, slot_of](const std::vector<EventRef> &events, int64_t threshold) {
    std::vector<int64_t> out(events.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < events.size(); ++i) {
      out[i] = zero_wait_time(programs, base, rest, *snap, cuts.get(), slot_of[static_cast<size_t>(events[i].rank)],
                              events[i], threshold);
    }
    return out;
  };
}

std::vector<WaitSource> wait_sources(const rp::RankProgram &p, int64_t event) {
  std::vector<WaitSource> out;
  auto add = [&](const rp::Item &it) {
    if (it.type == rp::ItemType::Recv || it.type == rp::ItemType::PostRecv) {
      const auto &m = p.recvs[static_cast<size_t>(it.index)];
      if (m.src >= 0) out.push_back({WaitSource::Sender, m.src, m.send_index});
    } else if (it.type == rp::ItemType::Send || it.type == rp::ItemType::PostSend) {
      const auto &m = p.sends[static_cast<size_t>(it.index)];
      if (m.dst >= 0) out.push_back({WaitSource::Receiver, m.dst, m.recv_index});
    } else if (it.type == rp::ItemType::Collective || it.type == rp::ItemType::PostCollective) {
      const auto &c = p.colls[static_cast<size_t>(it.index)];
      const bool rooted = c.flow == CollectiveFlow::FromRoot && c.root >= 0;
      out.push_back({WaitSource::Instance, rooted ? c.root : -1, c.instance});
    }
  };
  const auto &ev = p.events[static_cast<size_t>(event)];
  for (int32_t k = ev.first_item; k < ev.first_item + ev.items; ++k) {
    const auto &it = p.items[static_cast<size_t>(k)];
    if (it.type == rp::ItemType::Recv || it.type == rp::ItemType::Send || it.type == rp::ItemType::Collective) {
      add(it);
    } else if (it.type == rp::ItemType::Complete) {
      // The activation with this slot: search back within the rank (slots are few).
      for (int32_t a = k - 1; a >= 0; --a)
        if (p.items[static_cast<size_t>(a)].slot == it.index) {
          if (p.items[static_cast<size_t>(a)].type != rp::ItemType::Complete) add(p.items[static_cast<size_t>(a)]);
          break;
        }
    }
  }
  return out;
}

std::function<std::vector<EventRef>(EventRef)> program_partners(const std::vector<rp::RankProgram> &programs,
                                                                const std::vector<rp::TimingColumn> &baseline) {
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
    for (const WaitSource &w : wait_sources(programs[static_cast<size_t>(s)], e.event)) {
      const int32_t q = w.rank >= 0 ? t->slot_of[static_cast<size_t>(w.rank)] : -1;
      if (w.kind == WaitSource::Sender && q >= 0)
        out.push_back({w.rank, t->send_event[static_cast<size_t>(q)][static_cast<size_t>(w.index)]});
      else if (w.kind == WaitSource::Receiver && q >= 0)
        out.push_back({w.rank, t->recv_event[static_cast<size_t>(q)][static_cast<size_t>(w.index)]});
      else if (w.kind == WaitSource::Instance)
        for (const auto &m : t->members[w.index])
          if (w.rank >= 0 ? m.rank == w.rank : !(m == e)) out.push_back(m);
    }
    // The latest arrival first: the one that held this event up.
    auto enter = [&](EventRef x) {
      const int32_t q = t->slot_of[static_cast<size_t>(x.rank)];
      if (q < 0 || x.event < 0 || static_cast<size_t>(x.event) >= baseline[static_cast<size_t>(q)].size())
        return INT64_MIN;
      return baseline[static_cast<size_t>(q)].enter(static_cast<size_t>(x.event));
    };
    out.erase(std::remove_if(out.begin(), out.end(), [](EventRef x) { return x.event < 0; }), out.end());
    std::stable_sort(out.begin(), out.end(), [&](EventRef a, EventRef b) { return enter(a) > enter(b); });
    return out;
  };
}

}  // namespace perfsift::kernels::domino
