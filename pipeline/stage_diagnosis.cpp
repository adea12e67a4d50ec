// Stage `diagnosis` (Hercule, Li & Malony): which parallel model the program follows,
// recognised from its communication without configuration, and why it loses time, in the
// model's own terms. The knowledge — metrics, inference tree, cause texts — is data
// (pipeline/models/*.toml, or diagnosis.knowledge); the metrics are computed here from the
// matched trace (kernels/hercule.h).
//
// Recognition: the sparse communication matrix (every process sees it), the grid layout
// that puts most messages between neighbours, and each rank's forwarding (receive blocks
// followed by send blocks to other partners) decide between master-worker and wavefront,
// with a confidence; diagnosis.model forces one.
//
// Cost: one all-to-all (the matched messages), gathers of the distinct communicating
// pairs, of one record per rank, and of the messages to or from the master; O(messages)
// work; the inference itself is a walk over a tree of a few nodes.
#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <set>

#include "kernels/hercule.h"
#include "pipeline/format.h"
#include "pipeline/knowledge_base.h"
#include "pipeline/message_table.h"
#include "pipeline/op_traits.h"
#include "pipeline/replay_model.h"
#include "pipeline/results_view.h"
#include "pipeline/stage.h"

namespace perfsift::pipeline {

namespace hc = kernels::hercule;

namespace {

// What the diagnosis needs of each rank, gathered everywhere.
struct RankTimes {
  int32_t rank = 0, pad = 0;
  int64_t start = 0, finalize_enter = 0, end = 0, mpi_ns = 0;
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
  double forwarding = 0;  // receive blocks followed by sends to other partners, of all followed by sends
  double wavefront() const { return grid.neighbour_share * forwarding; }
};

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
  auto all = ctx.allgatherv(mine);
  std::sort(all.begin(), all.end(), [](const RankTimes &a, const RankTimes &b) { return a.rank < b.rank; });
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
};

Diagnosis diagnose_master_worker(Context &ctx, const config::Values &cfg, const ReplayModel &model, const std::vector<MatchedMessage> &msgs,
                                 int32_t master, double confidence, StageOutput &out) {
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
  io::Table t;
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
  for (const auto &[w, wk] : workers) {
    const auto x = hc::decompose(wk, m, last_finish);
    for (size_t k = 0; k + 1 < wk.cycles.size(); ++k) setup_total += std::max<int64_t>(0, wk.cycles[k].replied - wk.cycles[k].received);
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
    if (worst < 0 || x.efficiency() < wd.efficiency()) {
      worst = w;
      wd = x;
    }
  }
  out.table("workers", t);
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
  d.narrative = inf.narrative;
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
  // The master's reply call site: where a cheaper setup would show (the computation before it).
  uint64_t reply_site = 0;
  int64_t most = -1;
  for (const auto &[site, n] : reply_sites)
    if (n > most) most = n, reply_site = site;
  const double wall = ctx.wall_time_s(), min_share = cfg.get_float("diagnosis.min_share");
  for (const auto &f : inf.fired) {
    if (!f.node->cause) continue;
    const auto sec = seconds.count(f.node->metric) ? seconds.at(f.node->metric) : 0.0;
    d.causes.push_back({f.node->id, f.text, f.share, sec});
    if (wall <= 0 || sec < min_share * wall) continue;
    Finding fd;
    fd.kind = "master-worker";
    fd.where = f.node->id + " (master rank " + std::to_string(master) + ")";
    fd.ranks = std::to_string(worst);
    fd.cause = f.text;
    fd.lost_s = sec;
    fd.stage = "diagnosis";
    if ((f.node->id == "master_setup" || f.node->id == "master_bottleneck") && reply_site < ctx.store().callsites().size())
      fd.question = "scale 0.5 callsite " + std::to_string(reply_site);  // a master twice as fast at setting tasks up
    ctx.findings.push_back(fd);
  }
  return d;
}

void run_diagnosis(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const ReplayModel &model = matched_model(ctx);
  ctx.progress().begin("diagnosis: recognising the model");
  const auto msgs = match_messages(ctx, model);
  const Recognition r = recognise(ctx, model, msgs);
  ctx.progress().end();
  io::Table rec;
  rec.description = "how well each model's communication structure fits the run";
  auto &rm = rec.strings("model", "master-worker or wavefront");
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
  out.table("recognition", rec);

  std::string chosen = cfg.get_string("diagnosis.model");
  const double min_conf = cfg.get_float("diagnosis.min_confidence");
  if (chosen == "auto") {
    chosen = "none";
    double best = min_conf;
    if (r.mw.confidence >= best) chosen = "master-worker", best = r.mw.confidence;
    if (r.wavefront() > best) chosen = "wavefront";
    if (chosen == "wavefront") {
      // The wavefront evaluator is not part of this build: say so instead of guessing.
      ctx.warnings.push_back("diagnosis: the run looks like a wavefront (confidence " + std::to_string(r.wavefront()) +
                             "), a model this version recognises but cannot yet diagnose");
      chosen = "none";
    }
  }
  out.attribute("model", chosen);
  if (chosen == "none") return;
  if (chosen != "master-worker") throw std::runtime_error("diagnosis.model = " + chosen + ": only master-worker is diagnosed in this version");
  const int32_t master = r.mw.master >= 0 ? r.mw.master : 0;
  const Diagnosis d = diagnose_master_worker(ctx, cfg, model, msgs, master, r.mw.confidence, out);
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
    os << "\nModel diagnosis (Hercule): no master-worker or wavefront structure recognised\n";
    return;
  }
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
    j.key("narrative").value(attr_or<std::string>(a, "narrative", "")).end_object();
  }
  j.end_array();
}

}  // namespace

StageInfo diagnosis_stage() {
  StageInfo s{"diagnosis",
              "Hercule's model-based diagnosis: recognises master-worker or wavefront structure from the communication and "
              "explains the lost time in the model's terms (knowledge base in TOML), with a narrative",
              {{"model", config::Type::String, std::string("auto"), "", "auto (recognise), master-worker, or none", 0, 0},
               {"min_confidence", config::Type::Float, 0.6, "", "recognition below this confidence diagnoses nothing", 0, 1},
               {"knowledge", config::Type::String, std::string(""), "", "directory of model files (<model>.toml) replacing the built-in ones", 0, 0},
               {"min_cause_share", config::Type::Float, 0.02, "", "tree nodes below this share of the lost time are evaluated but not reported (a node's own threshold can be higher)", 0, 1},
               {"min_share", config::Type::Float, 0.01, "", "a fired cause becomes a finding when it accounts for this share of the run", 0, 1}},
              run_diagnosis, diagnosis_text, nullptr};
  s.json_value = diagnosis_json;
  return s;
}

}  // namespace perfsift::pipeline
