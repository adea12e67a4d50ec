// Stage `diagnosis`: the master-worker model (thesis 5.2). A worker's time splits into task
// processing (outside MPI, or its mapped Compute region), effective communication and
// waiting; every moment it spends in MPI is split by what the master did meanwhile: its
// initialisation and finalisation (t_seq), setting one of this worker's tasks up
// (t_w-setup: from the master's previous message to the task's send, or its mapped Setup
// region within that), serving other workers (t_w-bn), and, after the worker's last task,
// the last worker to finish (t_w-final). No request is paired with a reply, so any
// protocol holds: a request, a task and a result; tasks in flight; results as requests.
// The terms and the communication add up to the worker's time in MPI, within its lost time.
//
// Farms side by side (several masters, each serving workers of its own) are diagnosed
// together: each worker against its own master, the wait for the last worker the run's.
//
// Cost: gathers of the messages to or from each master, of one record per worker and of
// the mapped regions' executions; O(messages + a worker's MPI calls) work.
#include <algorithm>
#include <cstdio>

#include "pipeline/engine/op_traits.h"
#include "pipeline/engine/check.h"
#include "pipeline/format/text.h"
#include "pipeline/whatif/fix_questions.h"
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
std::vector<MwMessage> master_messages(const Context &ctx, const MatchedMessageTable &msgs, int32_t master) {
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
  std::map<int32_t, std::vector<const MwMessage *>> requests, replies;  // to and from the master, by worker
  std::vector<int64_t> events;              // the master's side of each message: receive done, send entered
  std::map<uint64_t, int64_t> reply_sites;  // replies per call site of the master
};

MasterTraffic by_worker(const std::vector<MwMessage> &all, int32_t master, const RankTimes &master_times) {
  MasterTraffic traffic;
  traffic.master.ready = INT64_MAX;
  for (const auto &x : all) {
    if (x.dst == master) {
      traffic.requests[x.src].push_back(&x);
      traffic.master.ready = std::min(traffic.master.ready, x.recv_enter);
      traffic.events.push_back(x.done);
    } else {
      traffic.replies[x.dst].push_back(&x);
      traffic.master.ready = std::min(traffic.master.ready, x.send_enter);
      traffic.events.push_back(x.send_enter);
      ++traffic.reply_sites[x.send_site];
    }
  }
  std::sort(traffic.events.begin(), traffic.events.end());
  for (auto &[w, v] : traffic.requests)
    std::sort(v.begin(), v.end(), [](auto *a, auto *b) { return a->send_enter < b->send_enter; });
  for (auto &[w, v] : traffic.replies)
    std::sort(v.begin(), v.end(), [](auto *a, auto *b) { return a->send_enter < b->send_enter; });
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

// The master working on worker w's tasks: before each task it sends w, the master's time
// since its previous message (the request it answers, or the task before when it sends
// several unasked, as a task farm keeping tasks in flight does); with Setup mapped, the
// master's setup region within that time.
std::vector<hc::Span> setup_spans(const std::vector<const MwMessage *> &replies, const MasterTraffic &traffic,
                                  int32_t master, const MappedSpans &spans) {
  std::vector<hc::Span> out;
  for (const MwMessage *r : replies) {
    const auto it = std::lower_bound(traffic.events.begin(), traffic.events.end(), r->send_enter);
    const int64_t begin = std::max(traffic.master.ready, it == traffic.events.begin() ? r->send_enter : *(it - 1));
    if (begin >= r->send_enter) continue;
    if (!spans.setup_mapped) {
      out.push_back({begin, r->send_enter});
      continue;
    }
    if (const auto m = spans.setup.find(master); m != spans.setup.end())
      for (const auto &[b, e] : m->second)
        if (std::min(e, r->send_enter) > std::max(b, begin))
          out.push_back({std::max(b, begin), std::min(e, r->send_enter)});
  }
  return out;
}

// One owned worker's time in MPI calls, MPI_Init excluded, the unrecorded wait in
// MPI_Finalize for the last rank included.
std::vector<hc::Span> mpi_spans(const Context &ctx, const ReplayModel &model, size_t s, const RankTimes &times) {
  const auto &ops = ctx.store().ops();
  const auto &side = model.side[s];
  std::vector<hc::Span> out;
  for (size_t e = 0; e < side.labels.size(); ++e) {
    const std::string &op = ops[side.labels.op(e)];
    if (is_init_op(op)) continue;
    out.push_back({side.enter[e], model.measured_exit(s, e)});
  }
  if (times.end > times.finalize_enter) out.push_back({times.finalize_enter, times.end});
  return out;
}

// One worker's record, decomposed where its rank's trace is; gathered everywhere.
struct WorkerRecord {
  int32_t rank = 0, pad = 0;
  hc::Decomposition d;
  int64_t setup_total = 0;  // the master's time on its tasks
};

// Collective (a gather): every worker's decomposition, in rank order.
// last_finish: the last task's finish over all workers (of every master).
std::vector<WorkerRecord> decompose_workers(const Context &ctx, const ReplayModel &model, const MasterTraffic &traffic,
                                            const std::vector<RankTimes> &times, int32_t master,
                                            const MappedSpans &spans, int64_t last_finish) {
  auto comm = [&](int64_t bytes) { return model.params.flight(bytes) + model.params.recv_overhead(bytes); };
  std::vector<WorkerRecord> mine;
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const int32_t w = model.programs[s].rank;
    const auto rq = traffic.requests.find(w);
    const auto rp = traffic.replies.find(w);
    if (w == master || rq == traffic.requests.end() || rp == traffic.replies.end() || rp->second.empty()) continue;
    const RankTimes &t = times[static_cast<size_t>(w)];
    hc::Worker wk;
    wk.start = t.start;
    wk.end = t.end;
    wk.finish = rq->second.back()->send_enter;
    wk.mpi = mpi_spans(ctx, model, s, t);
    wk.setup = setup_spans(rp->second, traffic, master, spans);
    for (const MwMessage *x : rq->second) wk.comm += comm(x->bytes);
    for (const MwMessage *x : rp->second) wk.comm += comm(x->bytes);
    wk.tasks = static_cast<int64_t>(rp->second.size()) - 1;  // the last message stops it
    if (spans.compute_mapped) {
      wk.compute = 0;
      if (const auto it = spans.compute.find(w); it != spans.compute.end())
        wk.compute = covered(it->second, wk.start, wk.end);
    }
    WorkerRecord rec;
    rec.rank = w;
    rec.d = hc::decompose(wk, traffic.master, last_finish);
    // The terms and the communication are the worker's time in MPI: within its lost time.
    PERFSIFT_CHECK(rec.d.wait() + rec.d.comm <= rec.d.loss() && rec.d.seq >= 0 && rec.d.setup >= 0 && rec.d.bn >= 0 &&
                       rec.d.final >= 0 && rec.d.comm >= 0,
                   "master-worker terms of worker " + std::to_string(w) + " exceed its lost time");
    for (const auto &x : wk.setup) rec.setup_total += x.end - x.begin;
    mine.push_back(rec);
  }
  return gather_by_rank(ctx, mine);
}

// What the workers' decompositions add up to.
struct WorkerTotals {
  int32_t worst = -1;    // the least efficient worker
  hc::Decomposition wd;  // its decomposition
  int64_t setup_total = 0, compute_total = 0, task_total = 0;
  std::map<std::string, double> mean;  // per worker, s
};

// Each worker's time into the table `t` (thesis eq. 5.1-5.4).
WorkerTotals tabulate_workers(const std::vector<WorkerRecord> &workers, const std::vector<RankTimes> &times,
                              io::Table &t) {
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
  for (const WorkerRecord &r : workers) {
    const hc::Decomposition &x = r.d;
    tot.setup_total += r.setup_total;
    tot.compute_total += x.compute;
    tot.task_total += x.tasks;
    rank.push_back(r.rank);
    tasks.push_back(x.tasks);
    eff.push_back(x.efficiency());
    comp.push_back(static_cast<double>(x.compute) * 1e-9);
    wait.push_back(static_cast<double>(x.wait()) * 1e-9);
    measured.push_back(static_cast<double>(times[static_cast<size_t>(r.rank)].mpi_ns - x.comm) * 1e-9);
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
      tot.worst = r.rank;
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

// The masters as the texts name them: "0", or "0, 4 and 8".
std::string master_names(const std::vector<int32_t> &masters) {
  std::string s;
  for (size_t i = 0; i < masters.size(); ++i)
    s += (i == 0 ? "" : i + 1 == masters.size() ? " and " : ", ") + std::to_string(masters[i]);
  return s;
}

// The inference tree over the worst worker's shares of its lost time.
Inference explain(const KnowledgeBase &kb, const config::Values &cfg, const WorkerTotals &tot,
                  const std::vector<int32_t> &masters, size_t workers, double confidence) {
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
      {"master", master_names(masters)},
      {"workers", std::to_string(workers)},
      {"efficiency", three_decimals(wd.efficiency())},
      {"tasks", std::to_string(tasks)},
      {"setup_per_task",
       format_seconds(tasks ? static_cast<double>(tot.setup_total) * 1e-9 / static_cast<double>(tasks) : 0)},
      {"task_time",
       format_seconds(tasks ? static_cast<double>(tot.compute_total) * 1e-9 / static_cast<double>(tasks) : 0)}};
  char head[160];
  std::snprintf(head, sizeof head, "master-worker (%s %s %s %zu workers; recognised with confidence %.2f)",
                masters.size() > 1 ? "ranks" : "rank", master_names(masters).c_str(),
                masters.size() > 1 ? "serve" : "serves", workers, confidence);
  return infer(kb, shares, waiting_seconds(wd), words, head, cfg.get_float("diagnosis.min_cause_share"));
}

// The worst worker's terms, then the same terms summed over all workers: how the master
// shapes the whole run's waiting.
std::vector<std::pair<std::string, double>> worker_metrics(const WorkerTotals &tot,
                                                           const std::vector<WorkerRecord> &workers,
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
  for (const WorkerRecord &r : workers)
    all_measured += static_cast<double>(times[static_cast<size_t>(r.rank)].mpi_ns) * 1e-9;
  const double n = static_cast<double>(workers.size());
  for (const auto &[k, label] : std::vector<std::pair<std::string, std::string>>{{"waiting", "all_t_wait_s"},
                                                                                 {"t_seq", "all_t_seq_s"},
                                                                                 {"t_w-setup", "all_t_w_setup_s"},
                                                                                 {"t_w-bn", "all_t_w_bn_s"},
                                                                                 {"t_w-final", "all_t_w_final_s"},
                                                                                 {"communication", "all_t_comm_s"}})
    metrics.push_back({label, tot.mean.at(k) * n});
  metrics.push_back({"all_measured_wait_s", all_measured - tot.mean.at("communication") * n});
  metrics.push_back(
      {"setup_per_task_s",
       tot.task_total ? static_cast<double>(tot.setup_total) * 1e-9 / static_cast<double>(tot.task_total) : 0.0});
  return metrics;
}

// What-if questions for the master's causes, at the master's reply call site: a cheaper
// setup shows in the computation before it.
std::map<std::string, Fix> master_fixes(const Context &ctx, const std::map<uint64_t, int64_t> &reply_sites) {
  uint64_t reply_site = 0;
  int64_t most = -1;
  for (const auto &[site, n] : reply_sites)
    if (n > most) most = n, reply_site = site;
  std::map<std::string, Fix> fixes;
  const auto &sites = ctx.store().callsites();
  if (reply_site < sites.size())
    for (const char *id : {"master_setup", "master_bottleneck"})  // a master twice as fast at setting tasks up
      fixes[id] = callsite_fix(Fix::Action::Scale, sites, static_cast<int64_t>(reply_site), "0.5");
  return fixes;
}

}  // namespace

Diagnosis diagnose_master_worker(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                                 const MatchedMessageTable &msgs, const std::vector<int32_t> &masters,
                                 double confidence) {
  const auto kb = load_knowledge("master-worker", cfg.get_string("diagnosis.knowledge"), master_worker_metrics());
  const auto times = rank_times(ctx, model);
  // Each master's messages (farms side by side: each its own workers).
  std::vector<std::vector<MwMessage>> all;
  std::vector<MasterTraffic> traffic;
  all.reserve(masters.size());
  for (const int32_t m : masters) {
    all.push_back(master_messages(ctx, msgs, m));
    traffic.push_back(by_worker(all.back(), m, times[static_cast<size_t>(m)]));
  }
  const MappedSpans spans = mapped_spans(ctx, cfg, model);
  // A worker's last task is done when it last sends to its master; the run's last finish
  // ends everyone's wait for the last worker.
  int64_t last_finish = 0;
  for (const auto &t : traffic)
    for (const auto &[w, req] : t.requests)
      if (!req.empty()) last_finish = std::max(last_finish, req.back()->send_enter);
  std::vector<WorkerRecord> workers;
  std::map<uint64_t, int64_t> reply_sites;
  for (size_t i = 0; i < masters.size(); ++i) {
    const auto mine = decompose_workers(ctx, model, traffic[i], times, masters[i], spans, last_finish);
    workers.insert(workers.end(), mine.begin(), mine.end());
    for (const auto &[site, k] : traffic[i].reply_sites) reply_sites[site] += k;
  }
  std::sort(workers.begin(), workers.end(),
            [](const WorkerRecord &a, const WorkerRecord &b) { return a.rank < b.rank; });
  Diagnosis d;
  d.model = "master-worker";
  d.confidence = confidence;
  const std::string who = (masters.size() > 1 ? "ranks " : "rank ") + master_names(masters);
  if (workers.empty()) {
    d.symptom = "no request/reply cycles between " + who + " and the others";
    return d;
  }
  const WorkerTotals tot = tabulate_workers(workers, times, d.entities);
  d.summary = tot.mean;
  d.summary["runtime"] = ctx.program_time_s();
  d.summary["workers"] = static_cast<double>(workers.size());
  const auto inf = explain(kb, cfg, tot, masters, workers.size(), confidence);
  d.worst = "worker " + std::to_string(tot.worst);
  d.symptom =
      "low worker efficiency: worker " + std::to_string(tot.worst) + " at " + three_decimals(tot.wd.efficiency());
  d.metrics = worker_metrics(tot, workers, times, masters.front());
  if (masters.size() > 1) d.metrics.push_back({"masters", static_cast<double>(masters.size())});
  conclude(d, inf, waiting_seconds(tot.wd), ctx, cfg, "master " + who, tot.worst, master_fixes(ctx, reply_sites),
           kernels::to_ranges(masters));
  return d;
}

}  // namespace perfsift::pipeline::diagnosis
