// Generated traces of the Hercule models with their analytical answer (see model_traces.h).
#include "tests/unit/pipeline/model_traces.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <set>

namespace perfsift::test {

namespace {

constexpr int64_t kO = 1000;  // ns, every call
constexpr int64_t kL = 3000;  // ns, a message's latency (plus 1 ns per byte)
constexpr int64_t kMs = 1000000;

enum Op : uint16_t { kInit, kFinalize, kSend, kRecv, kIsend, kIrecv, kWaitall };

int64_t arrival(int64_t send_enter, int64_t bytes) { return send_enter + kO + kL + bytes; }

class Rng {
 public:
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t x = (s += 0x9E3779B97F4A7C15ull);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }
  double uni(double a, double b) { return a + (b - a) * static_cast<double>(next() >> 11) * 0x1.0p-53; }
  int pick(int a, int b) { return a + static_cast<int>(next() % static_cast<uint64_t>(b - a + 1)); }
  int64_t ns(double lo_ms, double hi_ms) { return static_cast<int64_t>(uni(lo_ms, hi_ms) * kMs); }

 private:
  uint64_t s;
};

int64_t overlap(int64_t b, int64_t e, int64_t from, int64_t to) {
  return std::max<int64_t>(0, std::min(e, to) - std::max(b, from));
}

// A nonblocking operation waiting for its Waitall.
struct Pending {
  int64_t id;
  bool recv;
  int32_t peer, tag;
  int64_t bytes, send_enter;  // receives: the matching send's start
};

// The ranks' traces, call by call; the caller keeps each rank's clock.
class Tracer {
 public:
  explicit Tracer(int32_t n) : tr(static_cast<size_t>(n)), req(static_cast<size_t>(n), 0) {
    for (int32_t r = 0; r < n; ++r) {
      auto &t = at(r);
      t.rank = r;
      t.region_paths = {io::kRootRegionPath};
      t.metric_names.assign(io::kMetricNames.begin(), io::kMetricNames.end());
      t.profile.assign(t.metric_names.size(), 0.0);
      io::CommRecord world{0x5EED, {}, {}};
      if (r == 0)
        for (int32_t k = 0; k < n; ++k) world.members.push_back(k);
      t.comms.push_back(world);
    }
  }
  io::RankTrace &at(int32_t r) { return tr[static_cast<size_t>(r)]; }
  void init(int32_t r, int64_t exit) { push(r, {0, exit, 0, 0, -1, 0, -1, -1, 0, 0, -1, kInit, 0}); }
  void finalize(int32_t r, int64_t t) { push(r, {t, t + kO, 0, 0, -1, 0, -1, -1, 0, 0, -1, kFinalize, 0}); }
  // MPI_Send (eager): leaves after the call's cost.
  int64_t send(int32_t r, int64_t t, int32_t dst, int32_t tag, int64_t bytes) {
    push(r, {t, t + kO, bytes, 0, -1, 0, dst, tag, 0, 0, -1, kSend, 0});
    return t + kO;
  }
  // MPI_Recv entered at t of a message sent at send_enter; returns its exit.
  int64_t recv(int32_t r, int64_t t, int32_t src, int32_t tag, int64_t bytes, int64_t send_enter, bool any_source) {
    const int64_t exit = std::max(t, arrival(send_enter, bytes)) + kO;
    push(r, {t, exit, bytes, bytes, -1, 0, src, tag, 0, 0, -1, kRecv,
             static_cast<uint16_t>(any_source ? io::kWildcardSource : 0)});
    return exit;
  }
  Pending isend(int32_t r, int64_t t, int32_t dst, int32_t tag, int64_t bytes) {
    const int64_t id = req[static_cast<size_t>(r)]++;
    at(r).requests.push_back({id, size(r), dst, tag, 0, io::kReqSend, bytes});
    push(r, {t, t + kO, bytes, 0, id, 0, dst, tag, 0, 0, -1, kIsend, 0});
    return {id, false, dst, tag, bytes, 0};
  }
  Pending irecv(int32_t r, int64_t t, int32_t src, int32_t tag, int64_t bytes, int64_t send_enter, bool any_source) {
    const int64_t id = req[static_cast<size_t>(r)]++;
    at(r).requests.push_back({id, size(r), any_source ? -2 : src, tag, 0, io::kReqRecv, bytes});
    push(r, {t, t + kO, 0, 0, id, 0, any_source ? -1 : src, tag, 0, 0, -1, kIrecv,
             static_cast<uint16_t>(any_source ? io::kWildcardSource : 0)});
    return {id, true, src, tag, bytes, send_enter};
  }
  // MPI_Waitall entered at t; returns its exit.
  int64_t waitall(int32_t r, int64_t t, const std::vector<Pending> &ps) {
    int64_t ready = t, bytes = 0;
    for (const Pending &p : ps)
      if (p.recv) ready = std::max(ready, arrival(p.send_enter, p.bytes)), bytes += p.bytes;
    const int64_t ev = size(r);
    for (const Pending &p : ps)
      at(r).completions.push_back({ev, p.id, p.recv ? p.peer : -1, p.recv ? p.tag : -1, p.recv ? p.bytes : 0, 0, 0});
    push(r, {t, ready + kO, bytes, bytes, ps.empty() ? -1 : ps.front().id, 0, -1, -1, 0, 0, -1, kWaitall, 0});
    return ready + kO;
  }
  std::vector<io::RankTrace> done() {
    for (auto &t : tr) {
      const auto &ev = t.events;
      double mpi = 0;
      for (const auto &e : ev) mpi += static_cast<double>(e.t_exit - e.t_enter) * 1e-9;
      t.profile[io::kVisits] = 1;
      t.profile[io::kWall] = static_cast<double>(ev.back().t_exit) * 1e-9;
      t.profile[io::kMpiTime] = mpi;
      t.profile[io::kCpu] = t.profile[io::kWall] - mpi;
    }
    return std::move(tr);
  }

 private:
  int64_t size(int32_t r) { return static_cast<int64_t>(at(r).events.size()); }
  void push(int32_t r, io::Event e) { at(r).events.push_back(e); }
  std::vector<io::RankTrace> tr;
  std::vector<int64_t> req;
};

// Truth bookkeeping: lost time per rank (elapsed minus computation), terms in ns.
struct Terms {
  std::vector<std::map<std::string, int64_t>> ns;
  std::vector<int64_t> compute, start, fin_enter;
  explicit Terms(int32_t n)
      : ns(static_cast<size_t>(n)),
        compute(static_cast<size_t>(n), 0),
        start(static_cast<size_t>(n), 0),
        fin_enter(static_cast<size_t>(n), 0) {}
  void into(GeneratedRun &run, const std::set<int32_t> &skip) const {
    const int64_t end = *std::max_element(fin_enter.begin(), fin_enter.end());
    for (int32_t r = 0; r < run.nranks; ++r) {
      const auto u = static_cast<size_t>(r);
      const double loss = static_cast<double>(end - start[u] - compute[u]);
      run.loss_s.push_back(loss * 1e-9);
      std::map<std::string, double> shares;
      if (!skip.count(r))
        for (const auto &[k, v] : ns[u]) shares[k] = static_cast<double>(v) / loss;
      run.truth.push_back(shares);
    }
  }
};

// Every rank leaves MPI_Init at the same moment; returns each rank's clock, set there.
std::vector<int64_t> start_all(Tracer &tr, Terms &terms, int32_t n) {
  const int64_t t0 = kMs;
  for (int32_t r = 0; r < n; ++r) tr.init(r, t0), terms.start[static_cast<size_t>(r)] = t0;
  return std::vector<int64_t>(static_cast<size_t>(n), t0);
}

// Every rank enters MPI_Finalize at its clock; its wait there for the last one is `term`.
void finalize_all(Tracer &tr, Terms &terms, const std::vector<int64_t> &clock, const char *term) {
  for (size_t u = 0; u < clock.size(); ++u) {
    terms.fin_enter[u] = clock[u];
    tr.finalize(static_cast<int32_t>(u), clock[u]);
  }
  const int64_t end = *std::max_element(terms.fin_enter.begin(), terms.fin_enter.end());
  for (size_t u = 0; u < clock.size(); ++u) terms.ns[u][term] += end - terms.fin_enter[u];
}

}  // namespace

const std::vector<std::string> &generated_op_names() {
  static const std::vector<std::string> names = {"MPI_Init",  "MPI_Finalize", "MPI_Send",   "MPI_Recv",
                                                 "MPI_Isend", "MPI_Irecv",    "MPI_Waitall"};
  return names;
}

// ---- master-worker: 1-3 masters, each serving its own workers (farms side by side);
// request, a task in one or two messages, the result separate or as the next request; 1-3
// tasks in flight; any-source receives or not; a slow master's setup or a slow worker.
GeneratedRun master_worker_run(uint64_t seed) {
  Rng g(seed * 7919 + 11);
  GeneratedRun run;
  run.model = "master-worker";
  const int farms = seed < 20 ? 1 : g.pick(2, 3);
  const int32_t n = g.pick(3 * farms, 9);
  const int task_msgs = g.pick(1, 2), in_flight = g.pick(1, 3);
  const bool separate_result = in_flight == 1 && g.pick(0, 1), any_source = g.pick(0, 1);
  const bool master_first = g.pick(0, 1);
  const int32_t tag_req = g.pick(0, 40), tag_task = tag_req + g.pick(1, 40), tag_res = tag_task + g.pick(1, 40),
                tag_stop = tag_res + g.pick(1, 40);
  const bool slow_master = seed % 2 == 0;
  const int32_t slow_worker = g.pick(0, n - 1);  // unless a master
  const double slow_factor = g.uni(3, 5);
  std::vector<int32_t> masters;
  for (int f = 0; f < farms; ++f) {
    const int32_t lo = n * f / farms, hi = n * (f + 1) / farms;
    masters.push_back(master_first ? lo : hi - 1);
  }
  char buf[200];
  std::snprintf(buf, sizeof buf, "%d ranks, %d master%s (%s), %d msgs/task, %d in flight%s%s", n, farms,
                farms > 1 ? "s" : "", master_first ? "first" : "last", 1 + task_msgs + (separate_result ? 1 : 0),
                in_flight, any_source ? ", any-source" : "",
                separate_result || in_flight > 1 ? "" : ", results as requests");
  run.shape = buf;
  run.injected = slow_master ? "slow master setup" : "slow worker " + std::to_string(slow_worker);
  run.cause = slow_master ? "master_setup|master_bottleneck" : "final_imbalance";
  run.nranks = n;

  Tracer tr(n);
  Terms terms(n);
  std::vector<int64_t> clock = start_all(tr, terms, n);
  const int64_t t0 = clock.front();  // the end of MPI_Init
  // A worker's waits: [begin, end) and, for a task, the master's setup of it.
  struct Wait {
    int64_t b, e, pb, pe;
  };
  std::vector<std::vector<Wait>> waits(static_cast<size_t>(n));
  std::vector<int64_t> last_to_master(static_cast<size_t>(n), t0), outstanding(static_cast<size_t>(n), 0);
  std::vector<int64_t> ready(static_cast<size_t>(farms), -1);  // each master's first communication
  struct Msg {
    int64_t arrival, seq;
    int32_t src, tag;
    int64_t bytes, send_enter;
    bool result;
    bool operator>(const Msg &o) const { return arrival != o.arrival ? arrival > o.arrival : seq > o.seq; }
  };
  for (int f = 0; f < farms; ++f) {
    const int32_t lo = n * f / farms, hi = n * (f + 1) / farms, master = masters[static_cast<size_t>(f)];
    const int workers = hi - lo - 1;
    const int ntasks = workers * in_flight + g.pick(workers, 4 * workers);
    std::vector<int64_t> task(static_cast<size_t>(ntasks)), prep(static_cast<size_t>(ntasks));
    double mean = 0;
    for (auto &t : task) mean += static_cast<double>(t = g.ns(1, 3)) / ntasks;
    for (auto &p : prep)
      p = slow_master ? static_cast<int64_t>(mean * g.uni(0.3, 0.9)) : static_cast<int64_t>(g.uni(0.02, 0.08) * kMs);
    std::priority_queue<Msg, std::vector<Msg>, std::greater<Msg>> inbox;
    int64_t seq = 0;
    int64_t &first = ready[static_cast<size_t>(f)];
    auto to_master = [&](int32_t w, int32_t tag, int64_t bytes, bool result) {
      int64_t &c = clock[static_cast<size_t>(w)];
      inbox.push({arrival(c, bytes), seq++, w, tag, bytes, c, result});
      last_to_master[static_cast<size_t>(w)] = c;
      c = tr.send(w, c, master, tag, bytes);
    };
    auto worker_recv = [&](int32_t w, int32_t tag, int64_t bytes, int64_t send_enter, int64_t pb, int64_t pe) {
      int64_t &c = clock[static_cast<size_t>(w)];
      waits[static_cast<size_t>(w)].push_back({c, std::max(c, send_enter), pb, pe});
      c = tr.recv(w, c, master, tag, bytes, send_enter, false);
    };
    int64_t tm = t0 + g.ns(0.2, 1);  // the master's initialisation
    int next = 0;
    auto send_task = [&](int32_t w) {
      const int j = next++;
      const int64_t pb = tm;
      tm += prep[static_cast<size_t>(j)];
      const int64_t head = g.pick(64, 512), data = g.pick(256, 4096);
      const int64_t s1 = tm;
      if (first < 0) first = s1;
      tm = tr.send(master, tm, w, tag_task, head);
      worker_recv(w, tag_task, head, s1, pb, s1);
      if (task_msgs == 2) {
        const int64_t s2 = tm;
        tm = tr.send(master, tm, w, tag_task + 1, data);
        worker_recv(w, tag_task + 1, data, s2, pb, s1);
      }
      ++outstanding[static_cast<size_t>(w)];
      int64_t &c = clock[static_cast<size_t>(w)];
      const int64_t work = w == slow_worker && !slow_master
                               ? static_cast<int64_t>(static_cast<double>(task[static_cast<size_t>(j)]) * slow_factor)
                               : task[static_cast<size_t>(j)];
      c += work;
      terms.compute[static_cast<size_t>(w)] += work;
      to_master(w, tag_res, g.pick(64, 1024), true);  // the result, or the result as the next request
      if (separate_result) to_master(w, tag_req, 16, false);
    };
    auto stop = [&](int32_t w) {
      const int64_t s = tm;
      tm = tr.send(master, tm, w, tag_stop, 8);
      worker_recv(w, tag_stop, 8, s, 0, 0);
      int64_t &c = clock[static_cast<size_t>(w)];
      terms.fin_enter[static_cast<size_t>(w)] = c;
      tr.finalize(w, c);
    };
    if (in_flight == 1) {
      for (int32_t w = lo; w < hi; ++w)
        if (w != master) {
          clock[static_cast<size_t>(w)] += g.pick(0, 20000);
          to_master(w, tag_req, 16, false);
        }
    } else {
      for (int k = 0; k < in_flight; ++k)
        for (int32_t w = lo; w < hi; ++w)
          if (w != master) send_task(w);
    }
    while (!inbox.empty()) {
      const Msg m = inbox.top();
      inbox.pop();
      if (first < 0) first = tm;
      tm = tr.recv(master, tm, m.src, m.tag, m.bytes, m.send_enter, any_source);
      const auto w = static_cast<size_t>(m.src);
      if (m.result) --outstanding[w];
      if (separate_result && m.result) {
        tm += 20000;  // files the result
        continue;
      }
      if (next < ntasks)
        send_task(m.src);
      else if (outstanding[w] == 0)
        stop(m.src);
    }
    terms.fin_enter[static_cast<size_t>(master)] = tm;
    tr.finalize(master, tm);
  }

  // The thesis's terms of each worker's waiting (eq. 5.3); the last worker to finish is the
  // run's (farms side by side end together).
  const int64_t end = *std::max_element(terms.fin_enter.begin(), terms.fin_enter.end());
  int64_t last_finish = 0;
  std::set<int32_t> skip(masters.begin(), masters.end());
  for (int32_t w = 0; w < n; ++w)
    if (!skip.count(w)) last_finish = std::max(last_finish, last_to_master[static_cast<size_t>(w)]);
  for (int f = 0; f < farms; ++f) {
    const int32_t lo = n * f / farms, hi = n * (f + 1) / farms, master = masters[static_cast<size_t>(f)];
    const int64_t master_fin = terms.fin_enter[static_cast<size_t>(master)], rdy = ready[static_cast<size_t>(f)];
    for (int32_t w = lo; w < hi; ++w) {
      if (w == master) continue;
      const auto u = static_cast<size_t>(w);
      auto &t = terms.ns[u];
      const int64_t finish = last_to_master[u];
      waits[u].push_back({terms.fin_enter[u], end, 0, 0});
      for (const Wait &x : waits[u]) {
        t["sequential"] += overlap(x.b, x.e, INT64_MIN, rdy);
        const int64_t busy = overlap(x.b, x.e, rdy, finish);
        const int64_t mine = std::min(busy, overlap(std::max(x.b, rdy), std::min(x.e, finish), x.pb, x.pe));
        t["master_setup"] += mine;
        t["master_bottleneck"] += busy - mine;
        // After its last task: the last worker, the master's finalisation, the rest.
        const int64_t b = std::max(x.b, finish), e = std::max(x.e, finish);
        const int64_t fin = overlap(b, e, finish, std::max(finish, last_finish));
        const int64_t sq = overlap(b, e, std::max(finish, last_finish), std::max(finish, master_fin));
        t["final_imbalance"] += fin;
        t["sequential"] += sq;
        t["master_bottleneck"] += e - b - fin - sq;
      }
    }
  }
  run.traces = tr.done();
  terms.into(run, skip);
  return run;
}

// ---- wavefront: a px x py grid (rank y * px + x), sweeps from one corner or from each of
// four in turn, 1-3 blocks per sweep; blocking Recv/Send or Irecv/Isend + Waitall; tags
// chosen at random; a slow stage or a costly fill-up.
GeneratedRun wavefront_run(uint64_t seed) {
  Rng g(seed * 104729 + 5);
  GeneratedRun run;
  run.model = "wavefront";
  static const int grids[][2] = {{2, 3}, {3, 2}, {3, 4}, {4, 3}, {2, 4}, {4, 2}, {2, 5}, {5, 2}, {3, 3}};
  const auto &grid = grids[g.pick(0, 8)];
  const int px = grid[0], py = grid[1], n = px * py;
  const int corners = g.pick(0, 1) ? 4 : 1, blocks = g.pick(1, 3);
  const int sweeps = corners == 4 ? 4 * g.pick(1, 2) : g.pick(2, 4);
  const bool nonblocking = g.pick(0, 1);
  const int32_t tag0 = g.pick(0, 1000);
  const bool slow_stage = seed % 2 == 0;
  const int32_t slow = g.pick(0, n - 1);
  const double slow_factor = g.uni(2.5, 4);
  const int64_t base = slow_stage ? g.ns(0.5, 1.5) : g.ns(2, 4);
  const int64_t bytes = g.pick(64, 8192);
  char buf[200];
  std::snprintf(buf, sizeof buf, "%d x %d grid, %d corner%s, %d sweeps of %d blocks, %s", px, py, corners,
                corners > 1 ? "s" : "", sweeps, blocks, nonblocking ? "Irecv/Isend" : "Recv/Send");
  run.shape = buf;
  run.injected = slow_stage ? "slow stage " + std::to_string(slow) : "costly fill-up";
  run.cause = slow_stage ? (corners == 4 ? "direction_change|handshaking" : "handshaking") : "fill_up|empty_up";
  run.nranks = n;

  Tracer tr(n);
  Terms terms(n);
  std::vector<int64_t> clock = start_all(tr, terms, n);
  static const int dirs[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
  // send start of the message from (x, y) to its downstream neighbours in the current block
  std::vector<int64_t> sent(static_cast<size_t>(n), 0);
  for (int s = 0; s < sweeps; ++s) {
    const int dx = dirs[s % corners][0], dy = dirs[s % corners][1];
    const int ox = dx > 0 ? 0 : px - 1, oy = dy > 0 ? 0 : py - 1;
    const bool changed = s > 0 && corners == 4;
    const int32_t tag = tag0 + g.pick(0, 3) * 100 + s;
    for (int b = 0; b < blocks; ++b) {
      // ranks by their stage: upstream ones first
      std::vector<int32_t> order(static_cast<size_t>(n));
      for (int32_t r = 0; r < n; ++r) order[static_cast<size_t>(r)] = r;
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t c) {
        return std::abs(a % px - ox) + std::abs(a / px - oy) < std::abs(c % px - ox) + std::abs(c / px - oy);
      });
      for (int32_t r : order) {
        const int x = r % px, y = r / px;
        const auto u = static_cast<size_t>(r);
        std::vector<int32_t> up, down;
        if (x - dx >= 0 && x - dx < px) up.push_back(y * px + x - dx);
        if (y - dy >= 0 && y - dy < py) up.push_back((y - dy) * px + x);
        if (x + dx >= 0 && x + dx < px) down.push_back(y * px + x + dx);
        if (y + dy >= 0 && y + dy < py) down.push_back((y + dy) * px + x);
        int64_t &c = clock[u];
        int64_t wait = 0;
        if (!up.empty()) {
          if (nonblocking) {
            std::vector<Pending> ps;
            for (int32_t q : up)
              ps.push_back(tr.irecv(r, c, q, tag, bytes, sent[static_cast<size_t>(q)], false)), c += kO;
            int64_t latest = 0;
            for (int32_t q : up) latest = std::max(latest, sent[static_cast<size_t>(q)]);
            wait = std::max<int64_t>(0, latest - c);
            c = tr.waitall(r, c, ps);
          } else {
            for (int32_t q : up) {
              wait += std::max<int64_t>(0, sent[static_cast<size_t>(q)] - c);
              c = tr.recv(r, c, q, tag, bytes, sent[static_cast<size_t>(q)], false);
            }
          }
        }
        const char *kind = s == 0 && b == 0 ? "fill_up" : changed && b == 0 ? "direction_change" : "handshaking";
        if (!up.empty()) terms.ns[u][kind] += wait;
        const int64_t work =
            slow_stage && r == slow ? static_cast<int64_t>(static_cast<double>(base) * slow_factor) : base;
        const int64_t noisy = static_cast<int64_t>(static_cast<double>(work) * g.uni(0.97, 1.03));
        c += noisy;
        terms.compute[u] += noisy;
        sent[u] = c;
        if (nonblocking) {
          std::vector<Pending> ps;
          for (int32_t q : down) ps.push_back(tr.isend(r, c, q, tag, bytes)), c += kO;
          if (!ps.empty()) {
            sent[u] = c - kO * static_cast<int64_t>(ps.size());
            c = tr.waitall(r, c, ps);
          }
        } else {
          for (int32_t q : down) c = tr.send(r, c, q, tag, bytes);
        }
      }
    }
  }
  // Sends to the second downstream neighbour start one call later: close enough (1 us).
  finalize_all(tr, terms, clock, "empty_up");
  run.traces = tr.done();
  terms.into(run, {});
  return run;
}

// ---- divide-and-conquer, tree-shaped: a group [lo, hi) splits at mid = lo + (hi - lo) / 2;
// lo splits its data and sends the upper part to mid; each half recurses; the leaves
// solve; mid hands its half's result back to lo, which merges. 2-9 ranks; an unbalanced
// split or a slow split.
GeneratedRun divide_conquer_run(uint64_t seed) {
  Rng g(seed * 1299709 + 3);
  GeneratedRun run;
  run.model = "divide-and-conquer";
  const int32_t n = seed < 4 ? static_cast<int32_t>(seed % 2 + 2) : g.pick(4, 9);
  const bool unbalanced = seed % 2 == 0;
  const double skew = g.uni(1.6, 2.5);
  const int64_t split_ns = unbalanced ? g.ns(1, 3) : g.ns(15, 30), solve_ns = g.ns(20, 40), merge_ns = g.ns(1, 3);
  const int64_t data = g.pick(4096, 65536);
  const int32_t tag_down = g.pick(0, 99), tag_up = tag_down + g.pick(1, 99);
  char buf[200];
  std::snprintf(buf, sizeof buf, "%d ranks, tree-shaped bisection", n);
  run.shape = buf;
  run.injected = unbalanced ? "unbalanced top split" : "slow split";
  run.cause = unbalanced ? "merge_wait" : "divide_wait|merge_wait";
  run.nranks = n;

  Tracer tr(n);
  Terms terms(n);
  std::vector<int64_t> clock = start_all(tr, terms, n);
  auto work = [&](int32_t r, double amount) {
    const auto w = static_cast<int64_t>(amount);
    clock[static_cast<size_t>(r)] += w;
    terms.compute[static_cast<size_t>(r)] += w;
  };
  // Rank lo holds `frac` of the data at its clock.
  std::function<void(int32_t, int32_t, double)> divide = [&](int32_t lo, int32_t hi, double frac) {
    if (hi - lo < 2) {
      work(lo, static_cast<double>(solve_ns) * frac * n);
      return;
    }
    const int32_t mid = lo + (hi - lo) / 2;
    double upper = frac * (hi - mid) / (hi - lo);
    if (unbalanced && lo == 0 && hi == n) upper = std::min(0.85 * frac, upper * skew);
    work(lo, static_cast<double>(split_ns) * frac);
    const auto bytes = static_cast<int64_t>(static_cast<double>(data) * upper) + 8;
    const int64_t s = clock[static_cast<size_t>(lo)];
    clock[static_cast<size_t>(lo)] = tr.send(lo, s, mid, tag_down, bytes);
    int64_t &cm = clock[static_cast<size_t>(mid)];
    terms.ns[static_cast<size_t>(mid)]["divide_wait"] += std::max<int64_t>(0, s - cm);
    cm = tr.recv(mid, cm, lo, tag_down, bytes, s, false);
    divide(lo, mid, frac - upper);
    divide(mid, hi, upper);
    const int64_t back = clock[static_cast<size_t>(mid)];
    const auto rbytes = static_cast<int64_t>(static_cast<double>(data) * upper / 4) + 8;
    clock[static_cast<size_t>(mid)] = tr.send(mid, back, lo, tag_up, rbytes);
    int64_t &cl = clock[static_cast<size_t>(lo)];
    terms.ns[static_cast<size_t>(lo)]["merge_wait"] += std::max<int64_t>(0, back - cl);
    cl = tr.recv(lo, cl, mid, tag_up, rbytes, back, false);
    work(lo, static_cast<double>(merge_ns) * frac);
  };
  divide(0, n, 1.0);
  finalize_all(tr, terms, clock, "merge_wait");
  run.traces = tr.done();
  terms.into(run, {});
  return run;
}

}  // namespace perfsift::test
