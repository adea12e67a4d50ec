// Stage `diagnosis` (Hercule, Li & Malony): which parallel model the program follows,
// recognised from its communication without configuration, and why it loses time, in the
// model's own terms. The knowledge — metrics, inference tree, cause texts — is data
// (pipeline/knowledge/*.toml, or diagnosis.knowledge); the metrics are computed here from the
// matched trace (kernels/hercule.h).
//
// Recognition: from the sparse communication matrix (every process sees it) and each
// rank's forwarding (receive blocks followed by send blocks to other partners), a
// confidence for each model: one rank serving all others (master-worker); a 2-D grid with
// data passed on downstream (wavefront); partners one bit apart at every level of a
// recursive halving, exchanged rather than forwarded (divide-and-conquer). The most
// confident above diagnosis.min_confidence is diagnosed; diagnosis.model forces one.
//
// Cost: one all-to-all (the matched messages), gathers of the distinct communicating
// pairs, of one record per rank, and of the messages to or from the master; O(messages)
// work; the inference itself is a walk over a tree of a few nodes.
#include <algorithm>
#include <filesystem>
#include <cmath>
#include <map>
#include <ostream>
#include <set>

#include "kernels/hercule.h"
#include "kernels/wait_states.h"
#include "pipeline/format/text.h"
#include "pipeline/knowledge/knowledge_base.h"
#include "pipeline/replay/matched_messages.h"
#include "pipeline/engine/op_traits.h"
#include "pipeline/replay/replay_model.h"
#include "pipeline/format/results_view.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

namespace hc = kernels::hercule;

namespace {

// What the diagnosis needs of each rank, gathered everywhere.
struct RankTimes {
  int32_t rank = 0, pad = 0;
  int64_t start = 0, finalize_enter = 0;
  int64_t end = 0;     // leaves MPI_Finalize, at the earliest when the last rank entered it
  int64_t mpi_ns = 0;  // in MPI calls after MPI_Init, the wait in MPI_Finalize included
  int64_t elapsed() const { return end - start; }
  int64_t computation() const { return elapsed() - mpi_ns; }
};

// A message to or from the master, gathered everywhere.
struct MwMessage {
  int32_t src, dst, send_event, recv_event;
  int64_t send_enter, recv_enter, done, bytes;
  uint64_t send_site;
};

struct Recognition {
  hc::MasterWorkerScore mw;
  hc::GridScore grid;
  hc::DivideConquerScore dc;
  double forwarding = 0;  // receive blocks followed by sends to other partners, of all followed by sends
  double wavefront() const { return grid.neighbour_share * forwarding; }
  // Splitting partners exchange (or hand results up); they do not forward data on.
  double divide_and_conquer() const { return dc.confidence * (1 - forwarding); }
};

// Every process's per-rank records, in rank order.
template <class Record>
std::vector<Record> gather_by_rank(const Context &ctx, const std::vector<Record> &mine) {
  auto all = ctx.allgatherv(mine);
  std::sort(all.begin(), all.end(), [](const Record &a, const Record &b) { return a.rank < b.rank; });
  return all;
}

int64_t done_time(const kernels::TransferTiming &t) { return t.recv_nonblocking && t.recv_wait_exit >= 0 ? t.recv_wait_exit : t.recv_exit; }

std::vector<RankTimes> rank_times(const Context &ctx, const ReplayModel &model) {
  const auto &ops = ctx.store().ops();
  std::vector<uint8_t> is_init(ops.size()), is_final(ops.size());
  for (size_t o = 0; o < ops.size(); ++o) {
    is_init[o] = ops[o] == "MPI_Init" || ops[o] == "MPI_Init_thread";
    is_final[o] = ops[o] == "MPI_Finalize";
  }
  std::vector<RankTimes> mine;
  for (size_t s = 0; s < model.side.size(); ++s) {
    const auto &side = model.side[s];
    RankTimes r;
    r.rank = model.programs[s].rank;
    r.finalize_enter = r.end = side.exit.empty() ? 0 : side.exit.back();
    for (size_t e = 0; e < side.op.size(); ++e) {
      if (is_init[side.op[e]]) r.start = side.exit[e];
      else r.mpi_ns += side.exit[e] - side.enter[e];
      if (is_final[side.op[e]]) {
        r.finalize_enter = side.enter[e];
        r.end = side.exit[e];
      }
    }
    mine.push_back(r);
  }
  auto all = gather_by_rank(ctx, mine);
  // The trace ends as each rank enters MPI_Finalize; a rank that gets there first waits
  // inside it for the last one (the run's end), unrecorded: that wait is added here.
  int64_t run_end = INT64_MIN;
  for (const auto &r : all) run_end = std::max(run_end, r.finalize_enter);
  for (auto &r : all) {
    const int64_t extra = std::max<int64_t>(0, run_end - r.end);
    r.end += extra;
    r.mpi_ns += extra;
  }
  return all;
}

Recognition recognise(const Context &ctx, const ReplayModel &model, const std::vector<MatchedMessage> &msgs) {
  std::map<std::pair<int32_t, int32_t>, int64_t> local;
  for (const auto &m : msgs) ++local[{m.src, m.dst}];
  std::vector<hc::PairCount> mine;
  for (const auto &[k, n] : local) mine.push_back({k.first, k.second, n});
  std::map<std::pair<int32_t, int32_t>, int64_t> merged;
  for (const auto &p : ctx.allgatherv(mine)) merged[{p.src, p.dst}] += p.messages;
  std::vector<hc::PairCount> pairs;
  for (const auto &[k, n] : merged) pairs.push_back({k.first, k.second, n});
  Recognition r;
  r.mw = hc::score_master_worker(pairs, ctx.nranks());
  r.grid = hc::best_grid(pairs, ctx.nranks());
  r.dc = hc::score_divide_and_conquer(pairs, ctx.nranks());
  // Forwarding, per owned rank: its send and receive completions in program order.
  std::vector<int64_t> blocks = {0, 0};
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    const auto &side = model.side[s];
    std::vector<std::pair<int32_t, hc::Completion>> seq;
    for (size_t k = 0; k < p.sends.size(); ++k)
      if (p.sends[k].dst >= 0) seq.push_back({side.send_done[k] >= 0 ? side.send_done[k] : side.send_event[k], {'S', p.sends[k].dst}});
    for (size_t k = 0; k < p.recvs.size(); ++k)
      if (p.recvs[k].src >= 0) seq.push_back({side.recv_done[k] >= 0 ? side.recv_done[k] : side.recv_event[k], {'R', p.recvs[k].src}});
    std::stable_sort(seq.begin(), seq.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    // A call that both sent and received (Sendrecv, or a Waitall of both) is an exchange.
    std::vector<hc::Completion> order;
    for (size_t i = 0; i < seq.size();) {
      size_t k = i;
      bool sends = false, recvs = false;
      for (; k < seq.size() && seq[k].first == seq[i].first; ++k) (seq[k].second.kind == 'S' ? sends : recvs) = true;
      if (sends && recvs) order.push_back({'X', -1});
      else
        for (size_t x = i; x < k; ++x) order.push_back(seq[x].second);
      i = k;
    }
    const auto [disjoint, total] = hc::forwarding_blocks(order);
    blocks[0] += disjoint;
    blocks[1] += total;
  }
  ctx.allreduce_sum(blocks);
  r.forwarding = blocks[1] ? static_cast<double>(blocks[0]) / static_cast<double>(blocks[1]) : 0;
  return r;
}

std::map<std::string, std::vector<uint8_t>> event_regions(const Context &ctx, const config::Values &cfg) {
  return map_events(cfg.get_list("diagnosis.events"), ctx.store().regions());
}

// Time within [from, to] covered by the intervals (sorted, disjoint: one rank's executions).
int64_t covered(const std::vector<std::pair<int64_t, int64_t>> &spans, int64_t from, int64_t to) {
  int64_t t = 0;
  for (const auto &[b, e] : spans) t += std::max<int64_t>(0, std::min(e, to) - std::max(b, from));
  return t;
}

// Each rank's executions of the regions inside `in`, gathered everywhere.
std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> executions(const Context &ctx, const ReplayModel &model, const std::vector<uint8_t> &in) {
  struct Span {
    int32_t rank, pad;
    int64_t begin, end;
  };
  std::vector<Span> mine;
  for (size_t s = 0; s < model.side.size(); ++s)
    for (const auto &x : model.side[s].executions)
      if (x.region >= 0 && static_cast<size_t>(x.region) < in.size() && in[static_cast<size_t>(x.region)])
        mine.push_back({model.programs[s].rank, 0, x.t_begin, x.t_end});
  std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>> out;
  for (const Span &x : ctx.allgatherv(mine)) out[x.rank].push_back({x.begin, x.end});
  for (auto &[r, v] : out) {
    std::sort(v.begin(), v.end());
    // Nested executions of mapped regions: keep the outermost.
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (const auto &x : v)
      if (merged.empty() || x.first >= merged.back().second) merged.push_back(x);
      else merged.back().second = std::max(merged.back().second, x.second);
    v = merged;
  }
  return out;
}

// One diagnosis, as stored and reported.
struct Diagnosis {
  std::string model, symptom, worst, narrative;
  double confidence = 0;
  struct Cause {
    std::string id, text;
    double share, seconds;
  };
  std::vector<Cause> causes;
  std::vector<std::pair<std::string, double>> metrics;
  io::Table entities;                     // per worker or process
  std::vector<Finding> findings;
  std::map<std::string, double> summary;  // run-level figures a relative diagnosis compares
};

// The tree's fired causes become the diagnosis's causes, and findings when they matter for the run.
void conclude(Diagnosis &d, const Inference &inf, const std::map<std::string, double> &seconds, const Context &ctx, const config::Values &cfg,
              const std::string &where, const std::string &ranks, const std::map<std::string, std::string> &questions) {
  d.narrative = inf.narrative;
  const double wall = ctx.wall_time_s(), min_share = cfg.get_float("diagnosis.min_share");
  for (const auto &f : inf.fired) {
    if (!f.node->cause) continue;
    const double sec = seconds.count(f.node->metric) ? seconds.at(f.node->metric) : 0.0;
    d.causes.push_back({f.node->id, f.text, f.share, sec});
    if (wall <= 0 || sec < min_share * wall) continue;
    Finding fd;
    fd.kind = d.model;
    fd.where = f.node->id + " (" + where + ")";
    fd.ranks = ranks;
    fd.cause = f.text;
    fd.lost_s = sec;
    fd.stage = "diagnosis";
    if (const auto q = questions.find(f.node->id); q != questions.end()) fd.question = q->second;
    d.findings.push_back(fd);
  }
}

Diagnosis diagnose_master_worker(const Context &ctx, const config::Values &cfg, const ReplayModel &model, const std::vector<MatchedMessage> &msgs,
                                 int32_t master, double confidence) {
  const auto kb = load_knowledge("master-worker", cfg.get_string("diagnosis.knowledge"), master_worker_metrics());
  std::vector<MwMessage> mine;
  for (const auto &m : msgs)
    if (m.src == master || m.dst == master)
      mine.push_back({m.src, m.dst, m.send_event, m.recv_event, m.timing.send_enter, m.timing.recv_enter, done_time(m.timing), m.timing.bytes, m.send_site});
  const auto all = ctx.allgatherv(mine);
  const auto times = rank_times(ctx, model);
  const kernels::LogGPS &net = model.params;
  auto comm = [&](int64_t bytes) { return net.flight(bytes) + net.recv_overhead(bytes); };

  std::map<int32_t, std::vector<const MwMessage *>> requests, replies;
  std::map<uint64_t, int64_t> reply_sites;
  hc::Master m;
  m.ready = INT64_MAX;
  for (const auto &x : all) {
    if (x.dst == master) {
      requests[x.src].push_back(&x);
      m.ready = std::min(m.ready, x.recv_enter);
    } else {
      replies[x.dst].push_back(&x);
      ++reply_sites[x.send_site];
    }
  }
  m.finalize_enter = times[static_cast<size_t>(master)].finalize_enter;
  const auto mapped = event_regions(ctx, cfg);
  const auto setup_spans = mapped.count("Setup") ? executions(ctx, model, mapped.at("Setup")) : decltype(executions(ctx, model, {})){};
  const auto compute_spans = mapped.count("Compute") ? executions(ctx, model, mapped.at("Compute")) : decltype(executions(ctx, model, {})){};
  std::map<int32_t, hc::Worker> workers;
  for (auto &[w, req] : requests) {
    auto &rep = replies[w];
    std::sort(req.begin(), req.end(), [](auto *a, auto *b) { return a->send_event < b->send_event; });
    std::sort(rep.begin(), rep.end(), [](auto *a, auto *b) { return a->recv_event < b->recv_event; });
    hc::Worker wk;
    wk.start = times[static_cast<size_t>(w)].start;
    wk.finalize_enter = times[static_cast<size_t>(w)].finalize_enter;
    wk.end = times[static_cast<size_t>(w)].end;
    for (size_t k = 0; k < std::min(req.size(), rep.size()); ++k)
      wk.cycles.push_back({req[k]->send_enter, req[k]->done, rep[k]->send_enter, rep[k]->done, comm(req[k]->bytes) + comm(rep[k]->bytes)});
    // Mapped events: the master's time in its setup region while this request waited; the
    // worker's in its compute region until its next request.
    for (size_t k = 0; k < wk.cycles.size(); ++k) {
      hc::Cycle &c = wk.cycles[k];
      if (const auto it = setup_spans.find(master); mapped.count("Setup"))
        c.setup = it == setup_spans.end() ? 0 : covered(it->second, std::max(c.received, m.ready), c.replied);
      if (const auto it = compute_spans.find(w); mapped.count("Compute") && k + 1 < wk.cycles.size())
        c.compute = it == compute_spans.end() ? 0 : covered(it->second, c.assigned, wk.cycles[k + 1].request);
    }
    if (!wk.cycles.empty()) workers[w] = std::move(wk);
  }
  Diagnosis d;
  d.model = "master-worker";
  d.confidence = confidence;
  if (workers.empty()) {
    d.symptom = "no request/reply cycles between rank " + std::to_string(master) + " and the others";
    return d;
  }
  int64_t last_finish = 0;
  for (const auto &[w, wk] : workers) last_finish = std::max(last_finish, hc::task_finish(wk));
  io::Table &t = d.entities;
  t.description = "each worker's time in the master-worker model (thesis eq. 5.1-5.4)";
  auto &rank = t.ints("rank", "", "worker rank");
  auto &tasks = t.ints("tasks", "", "tasks it processed");
  auto &eff = t.floats("efficiency", "", "task processing over elapsed time");
  auto &comp = t.floats("compute_s", "s", "task processing");
  auto &wait = t.floats("wait_s", "s", "t_wait = t_seq + t_w-setup + t_w-bn + t_w-final");
  auto &measured = t.floats("measured_wait_s", "s", "time in MPI calls after MPI_Init minus effective communication");
  auto &seq = t.floats("t_seq_s", "s", "waiting for the master's initialisation and finalisation");
  auto &setup = t.floats("t_w_setup_s", "s", "waiting while the master set this worker's tasks up");
  auto &bn = t.floats("t_w_bn_s", "s", "waiting while the master served other workers");
  auto &fin = t.floats("t_w_final_s", "s", "waiting for the last worker to finish");
  auto &com = t.floats("t_comm_s", "s", "effective communication (LogGPS transfer costs)");
  int32_t worst = -1;
  hc::Decomposition wd;
  int64_t setup_total = 0, compute_total = 0, task_total = 0;
  std::map<std::string, double> sum;
  for (const auto &[w, wk] : workers) {
    const auto x = hc::decompose(wk, m, last_finish);
    for (size_t k = 0; k + 1 < wk.cycles.size(); ++k)
      setup_total += wk.cycles[k].setup >= 0 ? wk.cycles[k].setup : std::max<int64_t>(0, wk.cycles[k].replied - wk.cycles[k].received);
    compute_total += x.compute;
    task_total += x.tasks;
    rank.push_back(w);
    tasks.push_back(x.tasks);
    eff.push_back(x.efficiency());
    comp.push_back(static_cast<double>(x.compute) * 1e-9);
    wait.push_back(static_cast<double>(x.wait()) * 1e-9);
    measured.push_back(static_cast<double>(times[static_cast<size_t>(w)].mpi_ns - x.comm) * 1e-9);
    seq.push_back(static_cast<double>(x.seq) * 1e-9);
    setup.push_back(static_cast<double>(x.setup) * 1e-9);
    bn.push_back(static_cast<double>(x.bn) * 1e-9);
    fin.push_back(static_cast<double>(x.final) * 1e-9);
    com.push_back(static_cast<double>(x.comm) * 1e-9);
    for (const auto &[k, v] : std::map<std::string, int64_t>{{"computation", x.compute}, {"waiting", x.wait()}, {"t_seq", x.seq}, {"t_w-setup", x.setup},
                                                             {"t_w-bn", x.bn}, {"t_w-final", x.final}, {"communication", x.comm}})
      sum[k] += static_cast<double>(v) * 1e-9 / static_cast<double>(workers.size());
    if (worst < 0 || x.efficiency() < wd.efficiency()) {
      worst = w;
      wd = x;
    }
  }
  d.summary = sum;
  d.summary["runtime"] = ctx.wall_time_s();
  d.summary["workers"] = static_cast<double>(workers.size());
  const double loss = static_cast<double>(std::max<int64_t>(1, wd.loss()));
  auto share = [&](int64_t v) { return static_cast<double>(v) / loss; };
  const std::map<std::string, double> shares = {{"efficiency", wd.efficiency()}, {"t_wait", share(wd.wait())}, {"t_comm", share(wd.comm)},
                                                {"t_seq", share(wd.seq)},           {"t_w-setup", share(wd.setup)}, {"t_w-bn", share(wd.bn)},
                                                {"t_w-final", share(wd.final)}};
  const std::map<std::string, double> seconds = {{"t_wait", wd.wait() * 1e-9}, {"t_comm", wd.comm * 1e-9}, {"t_seq", wd.seq * 1e-9},
                                                 {"t_w-setup", wd.setup * 1e-9}, {"t_w-bn", wd.bn * 1e-9}, {"t_w-final", wd.final * 1e-9}};
  char e[32];
  std::snprintf(e, sizeof e, "%.3f", wd.efficiency());
  const std::map<std::string, std::string> words = {
      {"worst", std::to_string(worst)},
      {"master", std::to_string(master)},
      {"workers", std::to_string(workers.size())},
      {"efficiency", e},
      {"tasks", std::to_string(task_total)},
      {"setup_per_task", format_seconds(task_total ? static_cast<double>(setup_total) * 1e-9 / static_cast<double>(task_total) : 0)},
      {"task_time", format_seconds(task_total ? static_cast<double>(compute_total) * 1e-9 / static_cast<double>(task_total) : 0)}};
  char head[160];
  std::snprintf(head, sizeof head, "master-worker (rank %d serves %zu workers; recognised with confidence %.2f)", master, workers.size(), confidence);
  const auto inf = infer(kb, shares, seconds, words, head, cfg.get_float("diagnosis.min_cause_share"));
  d.worst = "worker " + std::to_string(worst);
  d.symptom = "low worker efficiency: worker " + std::to_string(worst) + " at " + e;
  const int64_t measured_wait = times[static_cast<size_t>(worst)].mpi_ns - wd.comm;
  d.metrics = {{"efficiency", wd.efficiency()},
               {"loss_s", loss * 1e-9},
               {"t_wait_s", wd.wait() * 1e-9},
               {"measured_wait_s", static_cast<double>(measured_wait) * 1e-9},
               {"t_seq_s", wd.seq * 1e-9},
               {"t_w_setup_s", wd.setup * 1e-9},
               {"t_w_bn_s", wd.bn * 1e-9},
               {"t_w_final_s", wd.final * 1e-9},
               {"t_comm_s", wd.comm * 1e-9},
               {"master", static_cast<double>(master)},
               {"workers", static_cast<double>(workers.size())}};
  // The same terms summed over all workers: how the master shapes the whole run's waiting.
  double all_measured = 0;
  for (const auto &[w, wk] : workers) all_measured += static_cast<double>(times[static_cast<size_t>(w)].mpi_ns) * 1e-9;
  const double n = static_cast<double>(workers.size());
  for (const auto &[k, label] : std::vector<std::pair<std::string, std::string>>{{"waiting", "all_t_wait_s"}, {"t_seq", "all_t_seq_s"},
                                                                                {"t_w-setup", "all_t_w_setup_s"}, {"t_w-bn", "all_t_w_bn_s"},
                                                                                {"t_w-final", "all_t_w_final_s"}, {"communication", "all_t_comm_s"}})
    d.metrics.push_back({label, sum[k] * n});
  d.metrics.push_back({"all_measured_wait_s", all_measured - sum["communication"] * n});
  // The master's reply call site: a cheaper setup shows in the computation before it.
  uint64_t reply_site = 0;
  int64_t most = -1;
  for (const auto &[site, n] : reply_sites)
    if (n > most) most = n, reply_site = site;
  std::map<std::string, std::string> questions;
  if (reply_site < ctx.store().callsites().size())
    for (const char *id : {"master_setup", "master_bottleneck"}) questions[id] = "scale 0.5 callsite " + std::to_string(reply_site);  // a master twice as fast at setting tasks up
  conclude(d, inf, seconds, ctx, cfg, "master rank " + std::to_string(master), std::to_string(worst), questions);
  return d;
}

// A wavefront process's time, split by eq. 5.6, plus what the summary needs.
struct WfRank {
  int32_t rank = 0, pad = 0;
  int64_t fill = 0, empty = 0, handshake = 0, direction = 0, comm = 0, comp = 0, elapsed = 0;
  int64_t wait() const { return fill + empty + handshake + direction; }
};

int sign(int v) { return (v > 0) - (v < 0); }

Diagnosis diagnose_wavefront(const Context &ctx, const config::Values &cfg, const ReplayModel &model, const std::vector<MatchedMessage> &msgs,
                             const hc::GridScore &grid, double confidence) {
  const auto kb = load_knowledge("wavefront", cfg.get_string("diagnosis.knowledge"), wavefront_metrics());
  const auto times = rank_times(ctx, model);
  int64_t last_finalize = INT64_MIN;
  for (const auto &t : times) last_finalize = std::max(last_finalize, t.finalize_enter);
  const kernels::LogGPS &net = model.params;
  const int32_t px = grid.px;
  auto xy = [&](int32_t r) { return std::pair<int, int>{r % px, r / px}; };
  // msgs are the owned receivers' messages, by (receiver, receive event).
  std::map<int32_t, std::vector<const MatchedMessage *>> received;
  for (const auto &m : msgs) received[m.dst].push_back(&m);
  std::vector<WfRank> mine;
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    const auto &side = model.side[s];
    const int32_t r = p.rank;
    const auto [x, y] = xy(r);
    // The rank's activity in program order: receives (with their wait) and sends.
    struct Step {
      int32_t event;
      bool send;
      int fx, fy;  // flow direction of the data
      int64_t wait;
    };
    std::vector<Step> steps;
    for (size_t k = 0; k < p.sends.size(); ++k)
      if (p.sends[k].dst >= 0) {
        const auto [qx, qy] = xy(p.sends[k].dst);
        steps.push_back({side.send_done[k] >= 0 ? side.send_done[k] : side.send_event[k], true, sign(qx - x), sign(qy - y), 0});
      }
    WfRank w;
    w.rank = r;
    for (const MatchedMessage *m : received[r]) {
      const auto [qx, qy] = xy(m->src);
      steps.push_back({m->recv_done >= 0 ? m->recv_done : m->recv_event, false, sign(x - qx), sign(y - qy), kernels::waitstates::late_sender(m->timing)});
      w.comm += net.flight(m->timing.bytes) + net.recv_overhead(m->timing.bytes);
    }
    std::stable_sort(steps.begin(), steps.end(), [](const Step &a, const Step &b) { return a.event < b.event; });
    int lx = 0, ly = 0;  // the last flow direction seen
    bool first_block = true;
    for (size_t i = 0; i < steps.size();) {
      size_t k = i;
      const bool send = steps[i].send;
      int bx = 0, by = 0;
      int64_t wait = 0;
      for (; k < steps.size() && steps[k].send == send; ++k) {
        bx = bx ? bx : steps[k].fx;
        by = by ? by : steps[k].fy;
        wait += steps[k].wait;
      }
      if (!send) {
        const bool reversed = (bx && lx && bx != lx) || (by && ly && by != ly);
        if (first_block) w.fill += wait;
        else if (reversed) w.direction += wait;
        else w.handshake += wait;
      }
      first_block = false;
      lx = bx ? bx : lx;
      ly = by ? by : ly;
      i = k;
    }
    const auto &t = times[static_cast<size_t>(r)];
    w.empty = std::clamp<int64_t>(last_finalize - t.finalize_enter, 0, t.end - t.finalize_enter);
    w.elapsed = t.elapsed();
    w.comp = t.computation();
    mine.push_back(w);
  }
  const auto all = gather_by_rank(ctx, mine);
  Diagnosis d;
  d.model = "wavefront";
  d.confidence = confidence;
  io::Table &t = d.entities;
  t.description = "each process's time in the wavefront model (thesis eq. 5.5-5.6)";
  auto &rank = t.ints("rank", "", "process");
  auto &stage = t.ints("stage", "", "its pipeline stage in a north-west sweep: x + y + 1");
  auto &eff = t.floats("efficiency", "", "computation over elapsed time");
  auto &comp = t.floats("compute_s", "s", "computation");
  auto &fill = t.floats("t_pl_fill_s", "s", "waiting for the pipeline to fill up");
  auto &empty = t.floats("t_pl_empty_s", "s", "waiting for the pipeline to empty");
  auto &hs = t.floats("t_pl_handshake_s", "s", "waiting for predecessors within sweeps");
  auto &dc = t.floats("t_pl_directionchange_s", "s", "waiting after sweep direction changes");
  auto &com = t.floats("t_comm_s", "s", "effective communication (LogGPS transfer costs)");
  const WfRank *worst = nullptr;
  std::map<std::string, double> sum;
  for (const WfRank &w : all) {
    const auto [x, y] = xy(w.rank);
    rank.push_back(w.rank);
    stage.push_back(x + y + 1);
    eff.push_back(w.elapsed ? static_cast<double>(w.comp) / static_cast<double>(w.elapsed) : 0);
    comp.push_back(w.comp * 1e-9);
    fill.push_back(w.fill * 1e-9);
    empty.push_back(w.empty * 1e-9);
    hs.push_back(w.handshake * 1e-9);
    dc.push_back(w.direction * 1e-9);
    com.push_back(w.comm * 1e-9);
    const double n = static_cast<double>(all.size());
    for (const auto &[k, v] : std::map<std::string, int64_t>{{"computation", w.comp}, {"waiting", w.wait()}, {"t_pl_fill", w.fill}, {"t_pl_empty", w.empty},
                                                             {"t_pl_handshake", w.handshake}, {"t_pl_directionchange", w.direction}, {"communication", w.comm}})
      sum[k] += static_cast<double>(v) * 1e-9 / n;
    if (!worst || w.wait() > worst->wait()) worst = &w;
  }
  const int64_t depth = hc::pipeline_depth(grid.px, grid.py);
  d.summary = sum;
  d.summary["runtime"] = ctx.wall_time_s();
  d.summary["depth"] = static_cast<double>(depth);
  if (!worst) return d;
  const double loss = static_cast<double>(std::max<int64_t>(1, worst->elapsed - worst->comp));
  const double efficiency = worst->elapsed ? static_cast<double>(worst->comp) / static_cast<double>(worst->elapsed) : 0;
  auto share = [&](int64_t v) { return static_cast<double>(v) / loss; };
  const std::map<std::string, double> shares = {{"efficiency", efficiency},
                                                {"t_wait", share(worst->wait())},
                                                {"t_comm", share(worst->comm)},
                                                {"t_pl_fill", share(worst->fill)},
                                                {"t_pl_empty", share(worst->empty)},
                                                {"t_pl_handshake", share(worst->handshake)},
                                                {"t_pl_directionchange", share(worst->direction)}};
  const std::map<std::string, double> seconds = {{"t_wait", worst->wait() * 1e-9},         {"t_comm", worst->comm * 1e-9},
                                                 {"t_pl_fill", worst->fill * 1e-9},        {"t_pl_empty", worst->empty * 1e-9},
                                                 {"t_pl_handshake", worst->handshake * 1e-9}, {"t_pl_directionchange", worst->direction * 1e-9}};
  char e[32];
  std::snprintf(e, sizeof e, "%.3f", efficiency);
  const auto [wx, wy] = xy(worst->rank);
  const std::map<std::string, std::string> words = {{"worst", std::to_string(worst->rank)}, {"stage", std::to_string(wx + wy + 1)},
                                                    {"depth", std::to_string(depth)},      {"px", std::to_string(grid.px)},
                                                    {"py", std::to_string(grid.py)},       {"efficiency", e}};
  char head[160];
  std::snprintf(head, sizeof head, "wavefront (a %d x %d grid, %lld pipeline stages; recognised with confidence %.2f)", grid.px, grid.py,
                static_cast<long long>(depth), confidence);
  const auto inf = infer(kb, shares, seconds, words, head, cfg.get_float("diagnosis.min_cause_share"));
  d.worst = "process " + std::to_string(worst->rank);
  d.symptom = "low process efficiency: process " + std::to_string(worst->rank) + " at " + e;
  d.metrics = {{"efficiency", efficiency},          {"loss_s", loss * 1e-9},
               {"t_wait_s", worst->wait() * 1e-9},  {"t_pl_fill_s", worst->fill * 1e-9},
               {"t_pl_empty_s", worst->empty * 1e-9}, {"t_pl_handshake_s", worst->handshake * 1e-9},
               {"t_pl_directionchange_s", worst->direction * 1e-9}, {"t_comm_s", worst->comm * 1e-9},
               {"px", static_cast<double>(grid.px)}, {"py", static_cast<double>(grid.py)},
               {"depth", static_cast<double>(depth)}};
  conclude(d, inf, seconds, ctx, cfg, std::to_string(grid.px) + " x " + std::to_string(grid.py) + " pipeline", std::to_string(worst->rank), {});
  return d;
}

// A divide-and-conquer process's waiting by stage.
struct DcRank {
  int32_t rank = 0, pad = 0;
  int64_t divide = 0, solve = 0, merge = 0, comm = 0, comp = 0, elapsed = 0;
  int64_t wait() const { return divide + solve + merge; }
};

Diagnosis diagnose_divide_and_conquer(const Context &ctx, const config::Values &cfg, const ReplayModel &model, const std::vector<MatchedMessage> &msgs,
                                      double confidence) {
  const auto kb = load_knowledge("divide-and-conquer", cfg.get_string("diagnosis.knowledge"), divide_and_conquer_metrics());
  const auto times = rank_times(ctx, model);
  const kernels::LogGPS &net = model.params;
  std::map<int32_t, std::vector<const MatchedMessage *>> received;  // in receive order (msgs are sorted so)
  for (const auto &m : msgs) received[m.dst].push_back(&m);
  int32_t levels = 0;
  while ((int64_t{1} << (levels + 1)) <= ctx.nranks()) ++levels;
  const auto mapped = event_regions(ctx, cfg);
  auto inside = [&](const char *event, int32_t region) {
    const auto it = mapped.find(event);
    return it != mapped.end() && region >= 0 && static_cast<size_t>(region) < it->second.size() && it->second[static_cast<size_t>(region)];
  };
  std::vector<DcRank> mine;
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const int32_t r = model.programs[s].rank;
    DcRank w;
    w.rank = r;
    const auto &in = received[r];
    // Splitting: the falling run of levels from the rank's highest; the rest with a
    // one-bit partner is merging; any other partner moves load (solve).
    int32_t top = -1;
    for (const MatchedMessage *m : in) top = std::max(top, hc::split_level(m->src, m->dst));
    bool dividing = !in.empty() && hc::split_level(in[0]->src, in[0]->dst) == top && top >= 0;
    int32_t last = INT32_MAX;
    for (const MatchedMessage *m : in) {
      const int32_t l = hc::split_level(m->src, m->dst);
      const int64_t wait = kernels::waitstates::late_sender(m->timing);
      w.comm += net.flight(m->timing.bytes) + net.recv_overhead(m->timing.bytes);
      // The user's regions decide where they are given.
      const int32_t region = m->recv_done >= 0 ? model.side[s].region[static_cast<size_t>(m->recv_done)] : m->recv_region;
      if (inside("Divide", region) || inside("Solve", region) || inside("Merge", region)) {
        (inside("Divide", region) ? w.divide : inside("Solve", region) ? w.solve : w.merge) += wait;
        dividing = dividing && inside("Divide", region);
        continue;
      }
      if (dividing && l >= 0 && l < last) {
        w.divide += wait;
        last = l;
        continue;
      }
      dividing = false;
      (l >= 0 ? w.merge : w.solve) += wait;
    }
    const auto &t = times[static_cast<size_t>(r)];
    w.merge += t.end - t.finalize_enter;  // idle once its part of the merge is done
    w.elapsed = t.elapsed();
    w.comp = t.computation();
    mine.push_back(w);
  }
  const auto all = gather_by_rank(ctx, mine);
  Diagnosis d;
  d.model = "divide-and-conquer";
  d.confidence = confidence;
  io::Table &t = d.entities;
  t.description = "each process's time in the divide-and-conquer model (thesis eq. 3.1-3.7)";
  auto &rank = t.ints("rank", "", "process");
  auto &eff = t.floats("efficiency", "", "computation over elapsed time");
  auto &comp = t.floats("compute_s", "s", "computation");
  auto &dv = t.floats("t_w_divide_s", "s", "waiting in splitting exchanges");
  auto &sv = t.floats("t_w_solve_s", "s", "waiting for load moved between processes");
  auto &mg = t.floats("t_w_merge_s", "s", "waiting for siblings' results, and idle after handing its own on");
  auto &com = t.floats("t_comm_s", "s", "effective communication (LogGPS transfer costs)");
  auto &gran = t.floats("granularity", "", "computation over communication");
  const DcRank *worst = nullptr;
  std::map<std::string, double> sum;
  auto efficiency = [](const DcRank &w) { return w.elapsed ? static_cast<double>(w.comp) / static_cast<double>(w.elapsed) : 0.0; };
  for (const DcRank &w : all) {
    rank.push_back(w.rank);
    eff.push_back(efficiency(w));
    comp.push_back(w.comp * 1e-9);
    dv.push_back(w.divide * 1e-9);
    sv.push_back(w.solve * 1e-9);
    mg.push_back(w.merge * 1e-9);
    com.push_back(w.comm * 1e-9);
    gran.push_back(w.comm ? static_cast<double>(w.comp) / static_cast<double>(w.comm) : 0);
    const double n = static_cast<double>(all.size());
    for (const auto &[k, v] : std::map<std::string, int64_t>{{"computation", w.comp}, {"waiting", w.wait()}, {"t_w-divide", w.divide},
                                                             {"t_w-solve", w.solve}, {"t_w-merge", w.merge}, {"communication", w.comm}})
      sum[k] += static_cast<double>(v) * 1e-9 / n;
    if (!worst || efficiency(w) < efficiency(*worst)) worst = &w;
  }
  d.summary = sum;
  d.summary["runtime"] = ctx.wall_time_s();
  d.summary["depth"] = levels;
  if (!worst) return d;
  const double loss = static_cast<double>(std::max<int64_t>(1, worst->elapsed - worst->comp));
  auto share = [&](int64_t v) { return static_cast<double>(v) / loss; };
  const std::map<std::string, double> shares = {{"efficiency", efficiency(*worst)}, {"t_wait", share(worst->wait())}, {"t_comm", share(worst->comm)},
                                                {"t_w-divide", share(worst->divide)}, {"t_w-solve", share(worst->solve)}, {"t_w-merge", share(worst->merge)}};
  const std::map<std::string, double> seconds = {{"t_wait", worst->wait() * 1e-9},    {"t_comm", worst->comm * 1e-9},  {"t_w-divide", worst->divide * 1e-9},
                                                 {"t_w-solve", worst->solve * 1e-9}, {"t_w-merge", worst->merge * 1e-9}};
  char e[32], g[32];
  std::snprintf(e, sizeof e, "%.3f", efficiency(*worst));
  std::snprintf(g, sizeof g, "%.3g", worst->comm ? static_cast<double>(worst->comp) / static_cast<double>(worst->comm) : 0.0);
  const std::map<std::string, std::string> words = {{"worst", std::to_string(worst->rank)}, {"levels", std::to_string(levels)}, {"efficiency", e}, {"granularity", g}};
  char head[160];
  std::snprintf(head, sizeof head, "divide-and-conquer (%d ranks, %d levels of recursive halving; recognised with confidence %.2f)", ctx.nranks(), levels, confidence);
  const auto inf = infer(kb, shares, seconds, words, head, cfg.get_float("diagnosis.min_cause_share"));
  d.worst = "process " + std::to_string(worst->rank);
  d.symptom = "low process efficiency: process " + std::to_string(worst->rank) + " at " + e;
  d.metrics = {{"efficiency", efficiency(*worst)}, {"loss_s", loss * 1e-9},          {"t_wait_s", worst->wait() * 1e-9},
               {"t_w_divide_s", worst->divide * 1e-9}, {"t_w_solve_s", worst->solve * 1e-9}, {"t_w_merge_s", worst->merge * 1e-9},
               {"t_comm_s", worst->comm * 1e-9},      {"levels", static_cast<double>(levels)}};
  conclude(d, inf, seconds, ctx, cfg, std::to_string(levels) + "-level recursion", std::to_string(worst->rank), {});
  return d;
}

struct Evaluated {
  std::string model;  // "none" when nothing was recognised
  Diagnosis d;
  Recognition r;
};

// Recognises (or takes diagnosis.model) and diagnoses one run.
Evaluated evaluate(Context &ctx, const config::Values &cfg, const ReplayModel &model, const std::vector<MatchedMessage> &msgs,
                   const std::string &forced) {
  ctx.progress().begin("diagnosis: recognising the model");
  Evaluated ev;
  ev.r = recognise(ctx, model, msgs);
  ctx.progress().end();
  ev.model = forced;
  if (forced == "auto") {
    ev.model = "none";
    double best = cfg.get_float("diagnosis.min_confidence");
    if (ev.r.mw.confidence >= best) ev.model = "master-worker", best = ev.r.mw.confidence;
    if (ev.r.wavefront() > best) ev.model = "wavefront", best = ev.r.wavefront();
    if (ev.r.divide_and_conquer() > best) ev.model = "divide-and-conquer";
  }
  if (ev.model == "master-worker") ev.d = diagnose_master_worker(ctx, cfg, model, msgs, std::max(0, ev.r.mw.master), ev.r.mw.confidence);
  if (ev.model == "wavefront") {
    if (ev.r.grid.px == 0) throw std::runtime_error("diagnosis.model = wavefront: " + std::to_string(ctx.nranks()) + " ranks form no 2-D grid");
    ev.d = diagnose_wavefront(ctx, cfg, model, msgs, ev.r.grid, ev.r.wavefront());
  }
  if (ev.model == "divide-and-conquer") ev.d = diagnose_divide_and_conquer(ctx, cfg, model, msgs, ev.r.divide_and_conquer());
  return ev;
}

// Thesis 5.3.2: the reference run sets the expectations. Weak scaling (the same work per
// rank) expects the same times and reports differences in percent; strong scaling (the
// same total work) expects per-rank times to shrink with the rank count.
void relative(Diagnosis &d, const Diagnosis &ref, int64_t ranks, int64_t ref_ranks, const std::string &scaling, const std::string &path,
              StageOutput &out) {
  io::Table t;
  t.description = "the run against the reference run (Hercule's relative diagnosis)";
  auto &name = t.strings("metric", "model metric (mean per worker or process, s; runtime: the run's)");
  auto &run = t.floats("run", "", "this run");
  auto &refv = t.floats("reference", "", "the reference run");
  auto &exp = t.floats("expected", "", "what the reference predicts for this run");
  auto &diff = t.floats("difference_percent", "%", "(run - expected) / expected x 100");
  const bool strong = scaling == "strong";
  std::string grew;
  double grew_by = 0;
  for (const auto &[k, v] : d.summary) {
    const auto it = ref.summary.find(k);
    if (it == ref.summary.end()) continue;
    const bool per_rank_time = k != "runtime" && k != "depth" && k != "workers";
    const double expected = strong && per_rank_time ? hc::expected_strong_scaling(it->second, ref_ranks, ranks)  // time shrinks with 1/P
                                                    : (strong && k == "runtime" ? it->second * static_cast<double>(ref_ranks) / static_cast<double>(ranks) : it->second);
    name.push_back(k);
    run.push_back(v);
    refv.push_back(it->second);
    exp.push_back(expected);
    diff.push_back(hc::difference_percent(v, expected));
    // The waiting term that grew most, in seconds.
    const bool waiting_term = k.rfind("t_", 0) == 0;
    if (waiting_term && v - expected > grew_by) grew_by = v - expected, grew = k;
  }
  out.table("relative", t);
  out.attribute("reference", path);
  out.attribute("scaling", scaling);
  std::string cause;
  if (grew.empty()) {
    cause = "no waiting term grew against the reference run";
  } else if ((grew == "t_pl_fill" || grew == "t_pl_empty" || grew == "t_pl_directionchange") && d.summary.count("depth") &&
             d.summary.at("depth") > ref.summary.at("depth")) {
    // Fill-up, empty-up and the refill after a direction change all grow with the depth.
    char b[400];
    std::snprintf(b, sizeof b, "the increase of pipeline depth from %.0f to %.0f stages is the main cause of the overhead increase: fill-up %+.0f%%, "
                  "empty-up %+.0f%%, direction changes %+.0f%% per process against the reference",
                  ref.summary.at("depth"), d.summary.at("depth"), hc::difference_percent(d.summary.at("t_pl_fill"), ref.summary.at("t_pl_fill")),
                  hc::difference_percent(d.summary.at("t_pl_empty"), ref.summary.at("t_pl_empty")),
                  hc::difference_percent(d.summary.at("t_pl_directionchange"), ref.summary.at("t_pl_directionchange")));
    cause = b;
  } else {
    cause = grew + " grew most against the reference run (" + format_seconds(grew_by) + " more per " + (d.model == "master-worker" ? "worker" : "process") + ")";
  }
  out.attribute("relative_cause", cause);
  d.narrative += "Relative to " + path + " (" + scaling + " scaling): " + cause + ".\n";
}

void run_diagnosis(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const ReplayModel &model = *ctx.products().get<MatchedRun>().model;
  const Evaluated ev = evaluate(ctx, cfg, model, *ctx.products().get<MatchedMessages>().items, cfg.get_string("diagnosis.model"));
  const Recognition &r = ev.r;
  io::Table rec;
  rec.description = "how well each model's communication structure fits the run";
  auto &rm = rec.strings("model", "master-worker, wavefront or divide-and-conquer");
  auto &rc = rec.floats("confidence", "", "0..1");
  auto &rd = rec.strings("evidence", "what was measured");
  char buf[256];
  rm.push_back("master-worker");
  rc.push_back(r.mw.confidence);
  std::snprintf(buf, sizeof buf, "rank %d: %.0f%% of messages go to or from it; it talks to %.0f%% of the other ranks; requests and replies %.0f%% balanced",
                r.mw.master, 100 * r.mw.touching, 100 * r.mw.served, 100 * r.mw.balance);
  rd.push_back(r.mw.master >= 0 ? buf : "fewer than 3 ranks or no messages");
  rm.push_back("wavefront");
  rc.push_back(r.wavefront());
  std::snprintf(buf, sizeof buf, "%.0f%% of messages between neighbours of a %d x %d grid; %.0f%% of receive blocks forwarded to other partners",
                100 * r.grid.neighbour_share, r.grid.px, r.grid.py, 100 * r.forwarding);
  rd.push_back(r.grid.px ? buf : "no 2-D grid layout (the rank count is prime or below 4)");
  rm.push_back("divide-and-conquer");
  rc.push_back(r.divide_and_conquer());
  std::snprintf(buf, sizeof buf, "%.0f%% of messages between ranks one bit apart; ranks meet partners on %.0f%% of the levels; %.0f%% forwarded",
                100 * r.dc.pow2, 100 * r.dc.levels, 100 * r.forwarding);
  rd.push_back(ctx.nranks() >= 4 ? buf : "fewer than 4 ranks");
  out.table("recognition", rec);
  out.attribute("model", ev.model);
  if (ev.model == "none") return;
  Diagnosis d = ev.d;
  if (const std::string path = cfg.get_string("diagnosis.reference"); !path.empty()) {
    io::TraceStore ref_store(path, ctx.comm());
    Context rctx(ctx.comm(), ref_store, ctx.config(), ctx.progress());
    const auto rmodel = build_replay_model(rctx, model.params);
    const Evaluated rev = evaluate(rctx, cfg, *rmodel, match_messages(rctx, *rmodel), ev.model);
    std::string scaling = cfg.get_string("diagnosis.scaling");
    if (scaling == "auto") {
      // Weak scaling keeps the work per rank, strong the total: whichever ratio is nearer 1.
      const double per_rank = d.summary.count("computation") && rev.d.summary.count("computation") && rev.d.summary.at("computation") > 0
                                  ? d.summary.at("computation") / rev.d.summary.at("computation") : 1;
      const double total = per_rank * static_cast<double>(ctx.nranks()) / static_cast<double>(rctx.nranks());
      scaling = std::fabs(std::log(per_rank)) <= std::fabs(std::log(total)) ? "weak" : "strong";
    }
    relative(d, rev.d, ctx.nranks(), rctx.nranks(), scaling, path, out);
  }
  for (const auto &f : d.findings) ctx.findings.push_back(f);
  out.table(d.model == "master-worker" ? "workers" : "processes", d.entities);
  out.attribute("confidence", d.confidence);
  out.attribute("symptom", d.symptom);
  out.attribute("worst", d.worst);
  out.attribute("narrative", d.narrative);
  for (const auto &[k, v] : d.metrics) out.attribute("metric_" + k, v);
  io::Table c;
  c.description = "the fired causes of the inference tree, with their share of the worst entity's lost time";
  auto &id = c.strings("id", "cause id from the knowledge base");
  auto &sh = c.floats("share", "", "share of the lost time");
  auto &se = c.floats("seconds", "s", "time it accounts for");
  auto &tx = c.strings("text", "the cause in the model's terms");
  for (const auto &x : d.causes) {
    id.push_back(x.id);
    sh.push_back(x.share);
    se.push_back(x.seconds);
    tx.push_back(x.text);
  }
  out.table("causes", c);
}

void diagnosis_text(std::ostream &os, const io::ResultsStore &rs) {
  const auto a = rs.attributes("diagnosis");
  const std::string model = attr_or<std::string>(a, "model", "none");
  if (model == "none") {
    os << "\nModel diagnosis (Hercule): no master-worker, wavefront or divide-and-conquer structure recognised\n";
    return;
  }
  const std::string rel = attr_or<std::string>(a, "relative_cause", "");
  char conf[32];
  std::snprintf(conf, sizeof conf, "%.2f", attr_or<double>(a, "confidence", 0));
  os << "\nModel diagnosis (Hercule): " << model << " (confidence " << conf << "); " << attr_or<std::string>(a, "symptom", "") << "\n";
  const auto t = rs.table("diagnosis/causes");
  const auto &id = column<std::string>(t, "id");
  const auto &sh = column<double>(t, "share");
  const auto &se = column<double>(t, "seconds");
  os << " ";
  for (size_t i = 0; i < t.rows(); ++i) os << " " << id[i] << " " << format_percent(sh[i]) << " (" << format_seconds(se[i]) << ")" << (i + 1 < t.rows() ? "," : "");
  os << "\n";
  if (!rel.empty()) os << "  against " << attr_or<std::string>(a, "reference", "") << " (" << attr_or<std::string>(a, "scaling", "") << " scaling): " << rel << "\n";
}

// "diagnosis": [{"model", "confidence", "symptom", "worst", "causes": [{"id", "share", "text"}], "narrative", "metrics"}]
void diagnosis_json(JsonWriter &j, const io::ResultsStore &rs) {
  const auto a = rs.attributes("diagnosis");
  j.begin_array();
  const std::string model = attr_or<std::string>(a, "model", "none");
  if (model != "none") {
    j.begin_object().key("model").value(model).key("confidence").value(attr_or<double>(a, "confidence", 0));
    j.key("symptom").value(attr_or<std::string>(a, "symptom", "")).key("worst").value(attr_or<std::string>(a, "worst", ""));
    const auto t = rs.table("diagnosis/causes");
    const auto &id = column<std::string>(t, "id"), &tx = column<std::string>(t, "text");
    const auto &sh = column<double>(t, "share"), &se = column<double>(t, "seconds");
    j.key("causes").begin_array();
    for (size_t i = 0; i < t.rows(); ++i)
      j.begin_object().key("id").value(id[i]).key("share").value(sh[i]).key("seconds").value(se[i]).key("text").value(tx[i]).end_object();
    j.end_array();
    j.key("metrics").begin_object();
    for (const auto &[k, v] : a)
      if (k.rfind("metric_", 0) == 0 && std::holds_alternative<double>(v)) j.key(k.substr(7)).value(std::get<double>(v));
    j.end_object();
    if (const std::string rel = attr_or<std::string>(a, "relative_cause", ""); !rel.empty()) {
      j.key("relative").begin_object().key("reference").value(attr_or<std::string>(a, "reference", ""));
      j.key("scaling").value(attr_or<std::string>(a, "scaling", "")).key("cause").value(rel).key("metrics").begin_array();
      const auto r = rs.table("diagnosis/relative");
      const auto &n = column<std::string>(r, "metric");
      const auto &x = column<double>(r, "run"), &y = column<double>(r, "reference"), &e = column<double>(r, "expected"), &p = column<double>(r, "difference_percent");
      for (size_t i = 0; i < r.rows(); ++i)
        j.begin_object().key("metric").value(n[i]).key("run").value(x[i]).key("reference").value(y[i]).key("expected").value(e[i]).key("difference_percent").value(p[i]).end_object();
      j.end_array().end_object();
    }
    j.key("narrative").value(attr_or<std::string>(a, "narrative", "")).end_object();
  }
  j.end_array();
}

// Set-up: the model's name, the scaling, the reference store, the knowledge base and
// the event mapping.
void check_diagnosis(const config::Values &cfg, const io::TraceStore &store) {
  const std::string m = cfg.get_string("diagnosis.model");
  const std::vector<std::string> models = {"auto", "master-worker", "wavefront", "divide-and-conquer", "none"};
  if (std::find(models.begin(), models.end(), m) == models.end())
    throw std::runtime_error(cfg.where("diagnosis.model") + ": unknown model '" + m +
                             "' (this version diagnoses: auto, master-worker, wavefront, divide-and-conquer, none; did you mean '" +
                             config::nearest(m, models) + "'?)");
  const std::string sc = cfg.get_string("diagnosis.scaling");
  if (sc != "auto" && sc != "weak" && sc != "strong")
    throw std::runtime_error(cfg.where("diagnosis.scaling") + ": '" + sc + "' is not auto, weak or strong");
  if (const std::string ref = cfg.get_string("diagnosis.reference"); !ref.empty() && !std::filesystem::exists(ref))
    throw std::runtime_error(ref + ": the reference trace store does not exist (" + cfg.where("diagnosis.reference") + ")");
  check_knowledge(cfg.get_string("diagnosis.knowledge"));
  map_events(cfg.get_list("diagnosis.events"), store.regions());
}

}  // namespace

StageInfo diagnosis_stage() {
  StageInfo s{"diagnosis",
              "Hercule's model-based diagnosis: recognises master-worker, wavefront or divide-and-conquer structure from the communication and "
              "explains the lost time in the model's terms (knowledge base in TOML), with a narrative",
              {{"model", config::Type::String, std::string("auto"), "", "auto (recognise), master-worker, wavefront, divide-and-conquer, or none", 0, 0},
               {"reference", config::Type::String, std::string(""), "", "a reference run's trace store: relative diagnosis against it (analyze --reference)", 0, 0},
               {"scaling", config::Type::String, std::string("auto"), "", "how the run relates to the reference: weak, strong, or auto (from the work per rank)", 0, 0},
               {"events", config::Type::StringList, std::vector<std::string>{}, "",
                "abstract events mapped to regions, e.g. [\"Setup=master_setup\", \"Compute=worker_compute\"] (master-worker) or Divide=, Solve=, Merge= (divide-and-conquer); unmapped events are recognised from the communication", 0, 0},
               {"min_confidence", config::Type::Float, 0.6, "", "recognition below this confidence diagnoses nothing", 0, 1},
               {"knowledge", config::Type::String, std::string(""), "", "directory of model files (<model>.toml) replacing the built-in ones", 0, 0},
               {"min_cause_share", config::Type::Float, 0.02, "", "tree nodes below this share of the lost time are evaluated but not reported (a node's own threshold can be higher)", 0, 1},
               {"min_share", config::Type::Float, 0.01, "", "a fired cause becomes a finding when it accounts for this share of the run", 0, 1}},
              run_diagnosis, diagnosis_text, nullptr};
  s.json_value = diagnosis_json;
  s.requires_products = {product_name<MatchedRun>(), product_name<MatchedMessages>()};
  s.check = check_diagnosis;
  return s;
}

}  // namespace perfsift::pipeline
