// perfsift synth: writes a trace store of an SPMD program with chosen behaviour, for
// testing analyses on machines without hardware counters and at scales no test
// machine can run.
//
// The program it models: iterations of, per leaf region, computation then a ring
// exchange (Irecv from rank-1, Isend to rank+1, Waitall), and an Allreduce at the end
// of each iteration. Times follow from a simple network model (2 us latency + bytes /
// 5 GB/s): a rank's Waitall ends when its left neighbour's message has arrived, the
// Allreduce when the slowest rank has entered it. All ranks' clocks are simulated on
// every process (O(ranks) per step); each process keeps the events of its own block.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "io/trace_store.h"
#include "kernels/rank_set.h"
#include "ops.h"
#include "pipeline/cli/commands.h"
#include "pipeline/engine/check.h"

namespace perfsift::cli {

namespace {

constexpr double kLatency = 2e-6;       // s
constexpr double kBandwidth = 5e9;      // bytes/s
constexpr double kCallOverhead = 1e-6;  // s per nonblocking call
constexpr double kDiskBandwidth = 1e9;  // bytes/s of injected file I/O

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
double uniform(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return static_cast<double>(splitmix(seed ^ splitmix(a ^ splitmix(b ^ splitmix(c)))) >> 11) * 0x1.0p-53;
}

struct Injection {
  std::string kind;
  std::string region;          // path, empty for all
  std::vector<int32_t> ranks;  // sorted
  double factor = 1, delay = 0, rate = 0, bytes = 0;
  std::string counter;  // counter: the PAPI event
};

std::map<std::string, std::string> parse_fields(const std::string &spec, const std::string &body) {
  std::map<std::string, std::string> f;
  std::stringstream ss(body);
  std::string item;
  // ranks lists contain commas: a field without '=' continues the previous one.
  std::string last;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) {
      if (last.empty()) throw std::invalid_argument("--inject '" + spec + "': expected key=value, got '" + item + "'");
      f[last] += "," + item;
      continue;
    }
    last = item.substr(0, eq);
    f[last] = item.substr(eq + 1);
  }
  return f;
}

Injection parse_injection(const std::string &spec, int32_t nranks, const std::vector<std::string> &paths) {
  static const std::map<std::string, std::set<std::string>> allowed = {
      {"imbalance", {"region", "ranks", "factor"}},     {"late-sender", {"region", "ranks", "delay"}},
      {"cache-miss", {"region", "ranks", "factor"}},    {"missing", {"ranks"}},
      {"counter", {"name", "region", "ranks", "rate"}}, {"io", {"region", "ranks", "bytes"}},
  };
  const auto colon = spec.find(':');
  Injection in;
  in.kind = spec.substr(0, colon);
  auto kind = allowed.find(in.kind);
  if (kind == allowed.end())
    throw std::invalid_argument(
        "--inject '" + spec + "': unknown behaviour '" + in.kind +
        "'; use imbalance, late-sender, cache-miss, counter, io or missing (see perfsift synth --help)");
  const auto fields = parse_fields(spec, colon == std::string::npos ? "" : spec.substr(colon + 1));
  for (const auto &[k, v] : fields)
    if (!kind->second.count(k))
      throw std::invalid_argument("--inject '" + spec + "': " + in.kind + " takes no field '" + k + "'");
  auto get = [&](const std::string &k, const std::string &dflt) {
    auto it = fields.find(k);
    return it == fields.end() ? dflt : it->second;
  };
  in.ranks = kernels::parse_ranks(get("ranks", "all"), nranks);
  in.region = get("region", "");
  if (!in.region.empty() && std::find(paths.begin(), paths.end(), in.region) == paths.end())
    throw std::invalid_argument("--inject '" + spec + "': no region '" + in.region + "' (regions: " + paths.front() +
                                ", ...)");
  try {
    in.factor = std::stod(get("factor", "2"));
    in.delay = std::stod(get("delay", "0.001"));
    in.rate = std::stod(get("rate", "0"));
    in.bytes = std::stod(get("bytes", "1e6"));
  } catch (const std::exception &) {
    throw std::invalid_argument("--inject '" + spec + "': factor, delay and rate are numbers");
  }
  in.counter = get("name", "");
  if (in.kind == "counter" && in.counter.empty())
    throw std::invalid_argument("--inject '" + spec + "': counter needs name=PAPI_EVENT (one of --counters)");
  return in;
}

// "64" -> 8 phases with 7 kernels each; "solve,solve/smooth,io" -> those (parents added).
std::vector<std::string> region_paths(const std::string &spec) {
  std::set<std::string> out;
  if (!spec.empty() && std::all_of(spec.begin(), spec.end(), ::isdigit)) {
    const int n = std::stoi(spec);
    if (n < 1) throw std::invalid_argument("--regions: at least 1");
    const int parents = std::max(1, n / 8);
    char b[64];
    for (int p = 0; p < parents; ++p) {
      std::snprintf(b, sizeof b, "phase%02d", p);
      out.insert(b);
    }
    for (int k = 0, made = parents; made < n; ++k)
      for (int p = 0; p < parents && made < n; ++p, ++made) {
        std::snprintf(b, sizeof b, "phase%02d/kernel%02d", p, k);
        out.insert(b);
      }
  } else {
    std::stringstream ss(spec);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (item.empty() || item.front() == '/' || item.back() == '/')
        throw std::invalid_argument("--regions: bad path '" + item + "'");
      for (size_t p = item.find('/'); p != std::string::npos; p = item.find('/', p + 1)) out.insert(item.substr(0, p));
      out.insert(item);
    }
  }
  std::vector<std::string> v{io::kRootRegionPath};
  v.insert(v.end(), out.begin(), out.end());
  return v;
}

uint16_t op_code(const char *name) {
  for (size_t i = 0; i < std::size(collect::kOps); ++i)
    if (std::string(collect::kOps[i].name) == name) return static_cast<uint16_t>(i);
  internal_error(__FILE__, __LINE__, std::string("no operation ") + name + " in the generated operation table");
}

bool in_ranks(const std::vector<int32_t> &v, int32_t r) { return std::binary_search(v.begin(), v.end(), r); }

// The program's regions: a tree of paths; computation happens in the leaves.
struct RegionTree {
  std::vector<std::string> paths;  // the root first
  std::vector<int32_t> parent;     // -1 for the root
  std::vector<int32_t> leaves;     // in path order; the root when there is no other region

  // Whether region g is a or lies below it.
  bool under(int32_t g, int32_t a) const {
    for (; g >= 0; g = parent[g])
      if (g == a) return true;
    return false;
  }
};

RegionTree region_tree(const std::string &spec) {
  RegionTree tree;
  tree.paths = region_paths(spec);
  const auto &paths = tree.paths;
  const int32_t nreg = static_cast<int32_t>(paths.size());
  tree.parent.assign(nreg, -1);
  std::vector<bool> leaf(nreg, true);
  for (int32_t g = 1; g < nreg; ++g) {
    const auto slash = paths[g].rfind('/');
    tree.parent[g] =
        slash == std::string::npos
            ? 0
            : static_cast<int32_t>(std::find(paths.begin(), paths.end(), paths[g].substr(0, slash)) - paths.begin());
    leaf[tree.parent[g]] = false;
  }
  for (int32_t g = 1; g < nreg; ++g)
    if (leaf[g]) tree.leaves.push_back(g);
  if (tree.leaves.empty()) tree.leaves.push_back(0);
  return tree;
}

// Every --inject, checked; a counter injection needs its counter recorded.
std::vector<Injection> parse_injections(const SynthOptions &o, const std::vector<std::string> &paths) {
  std::vector<Injection> inj;
  for (const auto &s : o.inject) inj.push_back(parse_injection(s, o.ranks, paths));
  for (const auto &in : inj)
    if (in.kind == "counter" && std::find(o.counters.begin(), o.counters.end(), in.counter) == o.counters.end())
      throw std::invalid_argument("--inject counter:name=" + in.counter + ": record it with --counters " + in.counter);
  return inj;
}

// What the injections do to rank r in leaf region g: multipliers, delays, rates.
class Behaviour {
 public:
  Behaviour(std::vector<Injection> injections, const std::vector<std::string> &paths)
      : inj(std::move(injections)), paths(paths) {}

  // Ranks whose data is lost (they still ran).
  std::vector<bool> missing(int32_t nranks) const {
    std::vector<bool> m(nranks, false);
    for (const auto &in : inj)
      if (in.kind == "missing")
        for (int32_t r : in.ranks) m[r] = true;
    return m;
  }
  double work_factor(int32_t r, int32_t g) const {  // more work: more instructions
    double f = 1;
    for (const auto &in : inj)
      if (applies(in, "imbalance", r, g)) f *= in.factor;
    return f;
  }
  double comp_factor(int32_t r, int32_t g) const {  // cache misses slow the same work a little
    double f = work_factor(r, g);
    for (const auto &in : inj)
      if (applies(in, "cache-miss", r, g)) f *= 1 + 0.05 * (in.factor - 1);
    return f;
  }
  double miss_factor(int32_t r, int32_t g) const {
    double f = 1;
    for (const auto &in : inj)
      if (applies(in, "cache-miss", r, g)) f *= in.factor;
    return f;
  }
  // A counter's rate (per second of computation) set by counter:..., or NaN.
  double counter_rate(const std::string &name, int32_t r, int32_t g) const {
    double v = std::nan("");
    for (const auto &in : inj)
      if (applies(in, "counter", r, g) && in.counter == name) v = in.rate;
    return v;
  }
  double io_bytes(int32_t r, int32_t g) const {  // file bytes written per visit
    double b = 0;
    for (const auto &in : inj)
      if (applies(in, "io", r, g)) b += in.bytes;
    return b;
  }
  double send_delay(int32_t r, int32_t g) const {
    double d = 0;
    for (const auto &in : inj)
      if (applies(in, "late-sender", r, g)) d += in.delay;
    return d;
  }

 private:
  bool applies(const Injection &in, const char *kind, int32_t r, int32_t g) const {
    return in.kind == kind && (in.region.empty() || in.region == paths[g]) && in_ranks(in.ranks, r);
  }

  std::vector<Injection> inj;
  const std::vector<std::string> &paths;
};

struct OpCodes {
  uint16_t irecv = op_code("MPI_Irecv"), isend = op_code("MPI_Isend"), waitall = op_code("MPI_Waitall"),
           allreduce = op_code("MPI_Allreduce"), init = op_code("MPI_Init"), finalize = op_code("MPI_Finalize");
};

int64_t ns(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

// One rank's visit of a leaf region: computation from start to comp_end, then the ring
// exchange with its neighbours (times in s).
struct Visit {
  int32_t rank, region;
  size_t leaf_index;
  double base, noise;  // the leaf's computation time and this visit's noise factor
  double start, comp_end, send_time, wait_enter, wait_exit;
  int32_t left, right;
};

// The simulated run: the clocks of every rank (on every process), the traces of this
// process's block [first, last) of ranks.
class Simulation {
 public:
  Simulation(const SynthOptions &o, const RegionTree &tree, const Behaviour &behaviour, int me, int np)
      : o(o),
        tree(tree),
        behaviour(behaviour),
        P(o.ranks),
        missing(behaviour.missing(o.ranks)),
        per_iter(3 * static_cast<int64_t>(tree.leaves.size()) + 1),
        iters(std::max<int64_t>(1, (o.events_per_rank - 2 + per_iter - 1) / per_iter)),  // at least as many as asked
        first(static_cast<int32_t>(static_cast<int64_t>(P) * me / np)),
        last(static_cast<int32_t>(static_cast<int64_t>(P) * (me + 1) / np)) {}

  int64_t iterations() const { return iters; }
  int64_t events_per_rank() const { return iters * per_iter + 2; }
  const std::vector<bool> &missing_ranks() const { return missing; }

  std::vector<io::RankTrace> run() {
    start_traces();
    mpi_init();
    for (int64_t it = 0; it < iters; ++it) {
      for (size_t li = 0; li < tree.leaves.size(); ++li) run_leaf(it, li);
      allreduce();
    }
    mpi_finalize();
    return std::move(traces);
  }

 private:
  bool recorded(int32_t r) const { return r >= first && r < last && !missing[r]; }
  double &prof(int32_t r, int32_t g, int m) { return traces[r - first].profile[static_cast<size_t>(g) * nm + m]; }

  void start_traces() {
    std::vector<std::string> metric_names(io::kMetricNames.begin(), io::kMetricNames.end());
    for (const auto &c : o.counters) metric_names.push_back(c);
    nm = metric_names.size();
    traces.resize(static_cast<size_t>(last - first));
    for (int32_t r = first; r < last; ++r) {
      auto &tr = traces[r - first];
      tr.rank = r;
      tr.complete = !missing[r];
      if (missing[r]) continue;
      tr.region_paths = tree.paths;
      tr.metric_names = metric_names;
      tr.profile.assign(tree.paths.size() * nm, 0.0);
      io::CommRecord world{0x5EED, {}, {}};
      if (r == 0)
        for (int32_t k = 0; k < P; ++k) world.members.push_back(k);
      tr.comms.push_back(std::move(world));
      // Exact sizes (no growth slack: 10^8 events are most of the memory): per leaf and
      // iteration an Irecv and an Isend completed by one Waitall, and a step per ancestor.
      tr.events.reserve(static_cast<size_t>(iters * per_iter + 2));
      const auto messages = static_cast<size_t>(iters) * tree.leaves.size();
      tr.requests.reserve(2 * messages);
      tr.completions.reserve(2 * messages);
      size_t ancestors = 0;
      for (const int32_t leaf : tree.leaves)
        for (int32_t a = leaf; a > 0; a = tree.parent[static_cast<size_t>(a)]) ++ancestors;
      tr.steps.reserve(static_cast<size_t>(iters) * ancestors);
    }
  }

  // Missing ranks still ran; only their data is lost.
  void mpi_init() {
    const double init_time = o.startup_s;
    for (int32_t r = first; r < last; ++r)
      if (!missing[r]) {
        traces[r - first].events.push_back({0, ns(init_time), 0, 0, -1, 0, -1, -1, 0, 0, -1, ops.init, 0});
        prof(r, 0, io::kMpiTime) += init_time;
      }
    t.assign(P, init_time);
    next_request.assign(P, 0);
  }

  // Every rank computes in leaf li, then exchanges with its ring neighbours.
  void run_leaf(int64_t it, size_t li) {
    const int32_t g = tree.leaves[li];
    const double base = 1e-3 * (1 + static_cast<int>(li % 4));
    std::vector<double> comp_end(P), send_time(P), noise(P);
    for (int32_t r = 0; r < P; ++r) {
      noise[r] = 1 + 0.02 * (2 * uniform(o.seed, r, it, g) - 1);
      comp_end[r] = t[r] + base * noise[r] * behaviour.comp_factor(r, g) + behaviour.send_delay(r, g) +
                    behaviour.io_bytes(r, g) / kDiskBandwidth;
      send_time[r] = comp_end[r] + kCallOverhead;  // Isend follows the Irecv
    }
    for (int32_t r = 0; r < P; ++r) {
      const int32_t left = (r + P - 1) % P, right = (r + 1) % P;
      const double wait_enter = send_time[r] + kCallOverhead;
      const double arrival = send_time[left] + kCallOverhead + kLatency + o.message_bytes / kBandwidth;
      const double wait_exit = std::max(wait_enter + kCallOverhead, arrival);
      if (recorded(r)) {
        const Visit v{r, g, li, base, noise[r], t[r], comp_end[r], send_time[r], wait_enter, wait_exit, left, right};
        record_exchange(v);
        record_profile(v);
      }
      next_request[r] += 2;
      t[r] = wait_exit;
    }
  }

  void record_exchange(const Visit &v) {
    auto &tr = traces[v.rank - first];
    const int64_t msg_bytes = o.message_bytes;
    const int64_t ev0 = static_cast<int64_t>(tr.events.size());
    const int64_t rq = next_request[v.rank];
    const int32_t g = v.region;
    tr.events.push_back(
        {ns(v.comp_end), ns(v.comp_end + kCallOverhead), 0, 0, rq, 0, v.left, 7, 0, g, -1, ops.irecv, 0});
    tr.events.push_back({ns(v.send_time), ns(v.send_time + kCallOverhead), msg_bytes, 0, rq + 1, 0, v.right, 7, 0, g,
                         -1, ops.isend, 0});
    tr.events.push_back(
        {ns(v.wait_enter), ns(v.wait_exit), msg_bytes, msg_bytes, rq, 0, -1, -1, 0, g, -1, ops.waitall, 0});
    tr.requests.push_back({rq, ev0, v.left, 7, 0, io::kReqRecv, msg_bytes});
    tr.requests.push_back({rq + 1, ev0 + 1, v.right, 7, 0, io::kReqSend, msg_bytes});
    tr.completions.push_back({ev0 + 2, rq, v.left, 7, msg_bytes, 0, 0});
    tr.completions.push_back({ev0 + 2, rq + 1, -1, -1, 0, 0, 0});
    // The leaf's execution, inside each enclosing region (what-if questions locate
    // computation by them).
    for (int32_t a = g; a > 0; a = tree.parent[a]) tr.steps.push_back({a, -1, ns(v.start), ns(v.wait_exit)});
  }

  // The visit's times, bytes and counters, added to the leaf and every enclosing region.
  void record_profile(const Visit &v) {
    const int32_t r = v.rank, g = v.region;
    const size_t li = v.leaf_index;
    // Wall time before the exchange; file I/O waits on the disk (no CPU, no cycles).
    const double io_wait = behaviour.io_bytes(r, g) / kDiskBandwidth;
    const double comp = v.comp_end - v.start - io_wait, mpi = v.wait_exit - v.comp_end;
    for (int32_t a = g; a >= 0; a = tree.parent[a]) {
      prof(r, a, io::kWall) += comp + io_wait + mpi;
      prof(r, a, io::kCpu) += comp;
      prof(r, a, io::kMpiTime) += mpi;
      prof(r, a, io::kMpiBytesSent) += o.message_bytes;
      prof(r, a, io::kMpiBytesRecv) += o.message_bytes;
      prof(r, a, io::kIoBytesWritten) += behaviour.io_bytes(r, g);
      if (a != 0 && (li == 0 || !tree.under(tree.leaves[li - 1], a)))
        prof(r, a, io::kVisits) += 1;  // once per iteration
      for (size_t c = 0; c < o.counters.size(); ++c)
        prof(r, a, io::kBuiltinMetricCount + static_cast<int>(c)) += counter_value(o.counters[c], v, comp);
    }
  }

  double counter_value(const std::string &name, const Visit &v, double comp) const {
    const int32_t r = v.rank, g = v.region;
    const double cycles = comp * 2.5e9, ins = v.base * v.noise * behaviour.work_factor(r, g) * 2.5e9 * 1.5;
    if (const double rate = behaviour.counter_rate(name, r, g); !std::isnan(rate)) return rate * comp;
    if (name == "PAPI_TOT_CYC") return cycles;
    if (name == "PAPI_TOT_INS") return ins;
    if (name == "PAPI_L1_DCM") return ins * 0.02 * behaviour.miss_factor(r, g);
    if (name == "PAPI_L2_TCM" || name == "PAPI_L2_DCM") return ins * 0.004 * behaviour.miss_factor(r, g);
    if (name == "PAPI_L3_TCM") return ins * 0.001 * behaviour.miss_factor(r, g);
    return ins * 0.01;
  }

  // Everyone leaves when the last has arrived, plus a log-depth cost.
  void allreduce() {
    const double slowest = *std::max_element(t.begin(), t.end());
    const double done = slowest + kLatency * std::ceil(std::log2(std::max(2, P))) + 1e-6;
    for (int32_t r = first; r < last; ++r) {
      if (missing[r]) continue;
      traces[r - first].events.push_back({ns(t[r]), ns(done), 16, 8, -1, 0, -1, -1, 0, 0, -1, ops.allreduce, 0});
      prof(r, 0, io::kMpiTime) += done - t[r];
      prof(r, 0, io::kMpiBytesSent) += 8;
      prof(r, 0, io::kMpiBytesRecv) += 8;
    }
    std::fill(t.begin(), t.end(), done);
  }

  void mpi_finalize() {
    const double fin_end = t[0] + 1e-4;
    for (int32_t r = first; r < last; ++r) {
      if (missing[r]) continue;
      auto &tr = traces[r - first];
      tr.events.push_back({ns(t[r]), ns(fin_end), 0, 0, -1, 0, -1, -1, 0, 0, -1, ops.finalize, 0});
      prof(r, 0, io::kMpiTime) += fin_end - t[r];
      prof(r, 0, io::kWall) = fin_end;
      prof(r, 0, io::kVisits) = 1;
    }
  }

  const SynthOptions &o;
  const RegionTree &tree;
  const Behaviour &behaviour;
  const int32_t P;
  const std::vector<bool> missing;
  const int64_t per_iter, iters;
  const int32_t first, last;
  const OpCodes ops;
  size_t nm = 0;  // metrics per region
  std::vector<io::RankTrace> traces;
  std::vector<double> t;  // every rank's clock, s
  std::vector<int64_t> next_request;
};

io::RunInfo synth_run_info(const SynthOptions &o, const std::vector<bool> &missing) {
  io::RunInfo run;
  run.nranks = o.ranks;
  std::ostringstream cmd;
  cmd << "perfsift synth --ranks " << o.ranks << " --regions " << o.regions << " --events-per-rank "
      << o.events_per_rank << " --message-bytes " << o.message_bytes << " --startup " << o.startup_s;
  for (const auto &s : o.inject) cmd << " --inject " << s;
  run.command = cmd.str();
  run.start_time = "2026-01-01T00:00:00Z";
  run.counters_recorded = o.counters;
  for (const std::string c : {"PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L1_DCM", "PAPI_L2_TCM"})
    if (std::find(o.counters.begin(), o.counters.end(), c) == o.counters.end()) run.counters_unavailable.push_back(c);
  for (int32_t r = 0; r < o.ranks; ++r)
    if (missing[r]) run.missing_ranks.push_back(r);
  run.incomplete = !run.missing_ranks.empty();
  run.mpi_library = "synthetic (perfsift synth)";
  return run;
}

}  // namespace

int run_synth(const SynthOptions &o) {
  ensure_mpi();
  MPI_Comm comm = MPI_COMM_WORLD;
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  if (o.ranks < 1) throw std::invalid_argument("--ranks: at least 1");
  const RegionTree tree = region_tree(o.regions);
  const Behaviour behaviour(parse_injections(o, tree.paths), tree.paths);
  if (o.message_bytes < 0) throw std::invalid_argument("--message-bytes: not negative");
  if (!(o.startup_s >= 0)) throw std::invalid_argument("--startup: seconds, not negative");
  Simulation sim(o, tree, behaviour, me, np);
  auto traces = sim.run();
  std::vector<std::string> op_names;
  for (const auto &op : collect::kOps) op_names.emplace_back(op.name);
  io::write_trace_store(comm, o.output, synth_run_info(o, sim.missing_ranks()), traces, op_names,
                        /*release_traces=*/true);
  if (me == 0)
    std::printf("%s: %d ranks, %d regions, %lld iterations, %lld events per rank\n", o.output.c_str(), o.ranks,
                static_cast<int32_t>(tree.paths.size()), static_cast<long long>(sim.iterations()),
                static_cast<long long>(sim.events_per_rank()));
  return 0;
}

}  // namespace perfsift::cli
