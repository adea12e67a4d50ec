// Stage `diagnosis`: the master-worker model (thesis 5.2). Each worker's request/reply
// cycles with the master split its time into task processing, effective communication and
// waiting: for the master's initialisation and finalisation (t_seq), while the master set
// this worker's tasks up (t_w-setup), while it served other workers (t_w-bn), and for the
// last worker to finish (t_w-final). Events Setup and Compute mapped to regions measure the
// setup and task times; otherwise they are recognised from the communication.
//
// Cost: gathers of the messages to or from the master, of one record per rank and of the
// mapped regions' executions; O(messages) work.
#include <algorithm>
#include <cstdio>

#include "pipeline/format/text.h"
#include "pipeline/stages/diagnosis/diagnosis.h"

namespace perfsift::pipeline::diagnosis {

namespace {

// A message to or from the master, gathered everywhere.
struct MwMessage {
  int32_t src, dst, send_event, recv_event;
  int64_t send_enter, recv_enter, done, bytes;
  uint64_t send_site;
};

// Each rank's executions of some regions: sorted, disjoint intervals.
using Spans = std::map<int32_t, std::vector<std::pair<int64_t, int64_t>>>;

int64_t done_time(const kernels::TransferTiming &t) {
  return t.recv_nonblocking && t.recv_wait_exit >= 0 ? t.recv_wait_exit : t.recv_exit;
}

// Time within [from, to] covered by the intervals (sorted, disjoint: one rank's executions).
int64_t covered(const std::vector<std::pair<int64_t, int64_t>> &spans, int64_t from, int64_t to) {
  int64_t t = 0;
  for (const auto &[b, e] : spans) t += std::max<int64_t>(0, std::min(e, to) - std::max(b, from));
  return t;
}

// Each rank's executions of the regions inside `in`, gathered everywhere.
Spans executions(const Context &ctx, const ReplayModel &model, const std::vector<uint8_t> &in) {
  struct Span {
    int32_t rank, pad;
    int64_t begin, end;
  };
  std::vector<Span> mine;
  for (size_t s = 0; s < model.side.size(); ++s)
    for (const auto &x : model.side[s].executions)
      if (x.region >= 0 && static_cast<size_t>(x.region) < in.size() && in[static_cast<size_t>(x.region)])
        mine.push_back({model.programs[s].rank, 0, x.t_begin, x.t_end});
  Spans out;
  for (const Span &x : ctx.allgatherv(mine)) out[x.rank].push_back({x.begin, x.end});
  for (auto &[r, v] : out) {
    std::sort(v.begin(), v.end());
    // Nested executions of mapped regions: keep the outermost.
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (const auto &x : v)
      if (merged.empty() || x.first >= merged.back().second)
        merged.push_back(x);
      else
        merged.back().second = std::max(merged.back().second, x.second);
    v = merged;
  }
  return out;
}

// Collective (a gather): the messages to or from the master, every process's.
std::vector<MwMessage> master_messages(const Context &ctx, const std::vector<MatchedMessage> &msgs, int32_t master) {
  std::vector<MwMessage> mine;
  for (const auto &m : msgs)
    if (m.src == master || m.dst == master)
      mine.push_back({m.src, m.dst, m.send_event, m.recv_event, m.timing.send_enter, m.timing.recv_enter,
                      done_time(m.timing), m.timing.bytes, m.send_site});
  return ctx.allgatherv(mine);
}

// The master's messages by worker, and when the master was ready and finished.
struct MasterTraffic {
  hc::Master master;
  std::map<int32_t, std::vector<const MwMessage *>> requests, replies;
  std::map<uint64_t, int64_t> reply_sites;  // replies per call site of the master
};

MasterTraffic by_worker(const std::vector<MwMessage> &all, int32_t master, const RankTimes &master_times) {
  MasterTraffic traffic;
  traffic.master.ready = INT64_MAX;
  for (const auto &x : all) {
    if (x.dst == master) {
      traffic.requests[x.src].push_back(&x);
      traffic.master.ready = std::min(traffic.master.ready, x.recv_enter);
    } else {
      traffic.replies[x.dst].push_back(&x);
      ++traffic.reply_sites[x.send_site];
    }
  }
  traffic.master.finalize_enter = master_times.finalize_enter;
  return traffic;
}

// The mapped events' executions: the master's in Setup, the workers' in Compute.
struct MappedSpans {
  bool setup_mapped = false, compute_mapped = false;
  Spans setup, compute;
};

// Collective: a gather per mapped event (the mapping is the same everywhere).
MappedSpans mapped_spans(const Context &ctx, const config::Values &cfg, const ReplayModel &model) {
  const auto mapped = event_regions(ctx, cfg);
  MappedSpans spans;
  spans.setup_mapped = mapped.count("Setup") > 0;
  spans.compute_mapped = mapped.count("Compute") > 0;
  if (spans.setup_mapped) spans.setup = executions(ctx, model, mapped.at("Setup"));
  if (spans.compute_mapped) spans.compute = executions(ctx, model, mapped.at("Compute"));
  return spans;
}

// One worker's request/reply cycles with the master, in order.
hc::Worker worker_cycles(int32_t w, std::vector<const MwMessage *> &req, std::vector<const MwMessage *> &rep,
                         const RankTimes &times, const hc::Master &m, int32_t master, const MappedSpans &spans,
                         const kernels::LogGPS &net) {
  auto comm = [&](int64_t bytes) { return net.flight(bytes) + net.recv_overhead(bytes); };
  std::sort(req.begin(), req.end(), [](auto *a, auto *b) { return a->send_event < b->send_event; });
  std::sort(rep.begin(), rep.end(), [](auto *a, auto *b) { return a->recv_event < b->recv_event; });
  hc::Worker wk;
  wk.start = times.start;
  wk.finalize_enter = times.finalize_enter;
  wk.end = times.end;
  for (size_t k = 0; k < std::min(req.size(), rep.size()); ++k)
    wk.cycles.push_back({req[k]->send_enter, req[k]->done, rep[k]->send_enter, rep[k]->done,
                         comm(req[k]->bytes) + comm(rep[k]->bytes)});
  // Mapped events: the master's time in its setup region while this request waited; the
  // worker's in its compute region until its next request.
  for (size_t k = 0; k < wk.cycles.size(); ++k) {
    hc::Cycle &c = wk.cycles[k];
    if (const auto it = spans.setup.find(master); spans.setup_mapped)
      c.setup = it == spans.setup.end() ? 0 : covered(it->second, std::max(c.received, m.ready), c.replied);
    if (const auto it = spans.compute.find(w); spans.compute_mapped && k + 1 < wk.cycles.size())
      c.compute = it == spans.compute.end() ? 0 : covered(it->second, c.assigned, wk.cycles[k + 1].request);
  }
  return wk;
}

// Every worker with at least one cycle.
std::map<int32_t, hc::Worker> workers_of(MasterTraffic &traffic, const std::vector<RankTimes> &times, int32_t master,
                                         const MappedSpans &spans, const kernels::LogGPS &net) {
  std::map<int32_t, hc::Worker> workers;
  for (auto &[w, req] : traffic.requests) {
    hc::Worker wk =
        worker_cycles(w, req, traffic.replies[w], times[static_cast<size_t>(w)], traffic.master, master, spans, net);
    if (!wk.cycles.empty()) workers[w] = std::move(wk);
  }
  return workers;
}

// What the workers' decompositions add up to.
struct WorkerTotals {
  int32_t worst = -1;    // the least efficient worker
  hc::Decomposition wd;  // its decomposition
  int64_t setup_total = 0, compute_total = 0, task_total = 0;
  std::map<std::string, double> mean;  // per worker, s
};

// Decomposes each worker's time into the table `t` (thesis eq. 5.1-5.4).
WorkerTotals decompose_workers(const std::map<int32_t, hc::Worker> &workers, const hc::Master &m,
                               const std::vector<RankTimes> &times, io::Table &t) {
  int64_t last_finish = 0;
  for (const auto &[w, wk] : workers) last_finish = std::max(last_finish, hc::task_finish(wk));
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
  WorkerTotals tot;
  for (const auto &[w, wk] : workers) {
    const auto x = hc::decompose(wk, m, last_finish);
    for (size_t k = 0; k + 1 < wk.cycles.size(); ++k)
      tot.setup_total += wk.cycles[k].setup >= 0 ? wk.cycles[k].setup
                                                 : std::max<int64_t>(0, wk.cycles[k].replied - wk.cycles[k].received);
    tot.compute_total += x.compute;
    tot.task_total += x.tasks;
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
    for (const auto &[k, v] : std::map<std::string, int64_t>{{"computation", x.compute},
                                                             {"waiting", x.wait()},
                                                             {"t_seq", x.seq},
                                                             {"t_w-setup", x.setup},
                                                             {"t_w-bn", x.bn},
                                                             {"t_w-final", x.final},
                                                             {"communication", x.comm}})
      tot.mean[k] += static_cast<double>(v) * 1e-9 / static_cast<double>(workers.size());
    if (tot.worst < 0 || x.efficiency() < tot.wd.efficiency()) {
      tot.worst = w;
      tot.wd = x;
    }
  }
  return tot;
}

// The worst worker's waiting terms, in seconds.
std::map<std::string, double> waiting_seconds(const hc::Decomposition &wd) {
  return {{"t_wait", wd.wait() * 1e-9},   {"t_comm", wd.comm * 1e-9}, {"t_seq", wd.seq * 1e-9},
          {"t_w-setup", wd.setup * 1e-9}, {"t_w-bn", wd.bn * 1e-9},   {"t_w-final", wd.final * 1e-9}};
}

// The inference tree over the worst worker's shares of its lost time.
Inference explain(const KnowledgeBase &kb, const config::Values &cfg, const WorkerTotals &tot, int32_t master,
                  size_t workers, double confidence) {
  const hc::Decomposition &wd = tot.wd;
  const double loss = static_cast<double>(std::max<int64_t>(1, wd.loss()));
  auto share = [&](int64_t v) { return static_cast<double>(v) / loss; };
  const std::map<std::string, double> shares = {{"efficiency", wd.efficiency()}, {"t_wait", share(wd.wait())},
                                                {"t_comm", share(wd.comm)},      {"t_seq", share(wd.seq)},
                                                {"t_w-setup", share(wd.setup)},  {"t_w-bn", share(wd.bn)},
                                                {"t_w-final", share(wd.final)}};
  const int64_t tasks = tot.task_total;
  const std::map<std::string, std::string> words = {
      {"worst", std::to_string(tot.worst)},
      {"master", std::to_string(master)},
      {"workers", std::to_string(workers)},
      {"efficiency", three_decimals(wd.efficiency())},
      {"tasks", std::to_string(tasks)},
      {"setup_per_task",
       format_seconds(tasks ? static_cast<double>(tot.setup_total) * 1e-9 / static_cast<double>(tasks) : 0)},
      {"task_time",
       format_seconds(tasks ? static_cast<double>(tot.compute_total) * 1e-9 / static_cast<double>(tasks) : 0)}};
  char head[160];
  std::snprintf(head, sizeof head, "master-worker (rank %d serves %zu workers; recognised with confidence %.2f)",
                master, workers, confidence);
  return infer(kb, shares, waiting_seconds(wd), words, head, cfg.get_float("diagnosis.min_cause_share"));
}

// The worst worker's terms, then the same terms summed over all workers: how the master
// shapes the whole run's waiting.
std::vector<std::pair<std::string, double>> worker_metrics(const WorkerTotals &tot,
                                                           const std::map<int32_t, hc::Worker> &workers,
                                                           const std::vector<RankTimes> &times, int32_t master) {
  const hc::Decomposition &wd = tot.wd;
  const double loss = static_cast<double>(std::max<int64_t>(1, wd.loss()));
  const int64_t measured_wait = times[static_cast<size_t>(tot.worst)].mpi_ns - wd.comm;
  std::vector<std::pair<std::string, double>> metrics = {{"efficiency", wd.efficiency()},
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
  double all_measured = 0;
  for (const auto &[w, wk] : workers) all_measured += static_cast<double>(times[static_cast<size_t>(w)].mpi_ns) * 1e-9;
  const double n = static_cast<double>(workers.size());
  for (const auto &[k, label] : std::vector<std::pair<std::string, std::string>>{{"waiting", "all_t_wait_s"},
                                                                                 {"t_seq", "all_t_seq_s"},
                                                                                 {"t_w-setup", "all_t_w_setup_s"},
                                                                                 {"t_w-bn", "all_t_w_bn_s"},
                                                                                 {"t_w-final", "all_t_w_final_s"},
                                                                                 {"communication", "all_t_comm_s"}})
    metrics.push_back({label, tot.mean.at(k) * n});
  metrics.push_back({"all_measured_wait_s", all_measured - tot.mean.at("communication") * n});
  return metrics;
}

// What-if questions for the master's causes, at the master's reply call site: a cheaper
// setup shows in the computation before it.
std::map<std::string, std::string> master_questions(const Context &ctx,
                                                    const std::map<uint64_t, int64_t> &reply_sites) {
  uint64_t reply_site = 0;
  int64_t most = -1;
  for (const auto &[site, n] : reply_sites)
    if (n > most) most = n, reply_site = site;
  std::map<std::string, std::string> questions;
  if (reply_site < ctx.store().callsites().size())
    for (const char *id : {"master_setup", "master_bottleneck"})
      questions[id] = "scale 0.5 callsite " + std::to_string(reply_site);  // a master twice as fast at setting tasks up
  return questions;
}

}  // namespace

Diagnosis diagnose_master_worker(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                                 const std::vector<MatchedMessage> &msgs, int32_t master, double confidence) {
  const auto kb = load_knowledge("master-worker", cfg.get_string("diagnosis.knowledge"), master_worker_metrics());
  const auto all = master_messages(ctx, msgs, master);
  const auto times = rank_times(ctx, model);
  MasterTraffic traffic = by_worker(all, master, times[static_cast<size_t>(master)]);
  const MappedSpans spans = mapped_spans(ctx, cfg, model);
  const auto workers = workers_of(traffic, times, master, spans, model.params);
  Diagnosis d;
  d.model = "master-worker";
  d.confidence = confidence;
  if (workers.empty()) {
    d.symptom = "no request/reply cycles between rank " + std::to_string(master) + " and the others";
    return d;
  }
  const WorkerTotals tot = decompose_workers(workers, traffic.master, times, d.entities);
  d.summary = tot.mean;
  d.summary["runtime"] = ctx.wall_time_s();
  d.summary["workers"] = static_cast<double>(workers.size());
  const auto inf = explain(kb, cfg, tot, master, workers.size(), confidence);
  d.worst = "worker " + std::to_string(tot.worst);
  d.symptom =
      "low worker efficiency: worker " + std::to_string(tot.worst) + " at " + three_decimals(tot.wd.efficiency());
  d.metrics = worker_metrics(tot, workers, times, master);
  conclude(d, inf, waiting_seconds(tot.wd), ctx, cfg, "master rank " + std::to_string(master),
           std::to_string(tot.worst), master_questions(ctx, traffic.reply_sites));
  return d;
}

}  // namespace perfsift::pipeline::diagnosis
