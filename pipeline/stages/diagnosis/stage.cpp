// Stage `diagnosis` (Hercule, Li & Malony): which parallel model the program follows,
// recognised from its communication without configuration, and why it loses time, in the
// model's own terms. The knowledge — metrics, inference tree, cause texts — is data
// (pipeline/knowledge/*.toml, or diagnosis.knowledge); the metrics are computed from the
// matched trace (kernels/hercule.h). This file holds the stage: its run and set-up check,
// the relative diagnosis against a reference run, and what the models' diagnoses share;
// recognition.cpp recognises the model, and master_worker.cpp, wavefront.cpp and
// divide_conquer.cpp diagnose one model each (the report's view:
// pipeline/report/views/diagnosis.cpp).
//
// Recognition: from the sparse communication matrix (every process sees it) and each
// rank's forwarding (receive blocks followed by send blocks to other partners), a
// confidence for each model: one rank serving all others, or masters side by side each
// serving workers of their own (master-worker); a 2-D grid with
// data passed on downstream (wavefront); bisection partners at every level of a
// recursive halving, exchanged rather than forwarded (divide-and-conquer). The most
// confident above diagnosis.min_confidence is diagnosed; diagnosis.model forces one.
//
// Cost: one all-to-all (the matched messages), gathers of the distinct communicating
// pairs, of one record per rank, and of the messages to or from the master; O(messages)
// work; the inference itself is a walk over a tree of a few nodes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include "pipeline/engine/op_traits.h"
#include "pipeline/engine/check.h"
#include "pipeline/format/text.h"
#include "pipeline/stages/diagnosis/diagnosis.h"

namespace perfsift::pipeline {

namespace diagnosis {

// ---- shared by the models' diagnoses (declared in diagnosis.h)

std::vector<RankTimes> rank_times(const Context &ctx, const ReplayModel &model) {
  const auto &ops = ctx.store().ops();
  std::vector<uint8_t> is_init(ops.size()), is_final(ops.size());
  for (size_t o = 0; o < ops.size(); ++o) {
    is_init[o] = is_init_op(ops[o]);
    is_final[o] = ops[o] == "MPI_Finalize";
  }
  std::vector<RankTimes> mine;
  for (size_t s = 0; s < model.side.size(); ++s) {
    const auto &side = model.side[s];
    RankTimes r;
    r.rank = model.programs[s].rank;
    r.finalize_enter = r.end = side.enter.empty() ? 0 : model.measured_exit(s, side.enter.size() - 1);
    for (size_t e = 0; e < side.labels.size(); ++e) {
      const int64_t exit = model.measured_exit(s, e);
      if (is_init[side.labels.op(e)])
        r.start = exit;
      else
        r.mpi_ns += exit - side.enter[e];
      if (is_final[side.labels.op(e)]) {
        r.finalize_enter = side.enter[e];
        r.end = exit;
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

std::map<std::string, std::vector<uint8_t>> event_regions(const Context &ctx, const config::Values &cfg) {
  return map_events(cfg.get_list("diagnosis.events"), ctx.store().regions());
}

std::string three_decimals(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

void conclude(Diagnosis &d, const Inference &inf, const std::map<std::string, double> &seconds, const Context &ctx,
              const config::Values &cfg, const std::string &where, int32_t worst_rank,
              const std::map<std::string, Fix> &fixes, const kernels::RankRanges &model_ranks) {
  const auto kind = find_problem_kind(d.model);
  PERFSIFT_CHECK(kind && is_model_kind(*kind),
                 "the diagnosis concludes on model " + d.model + ", not in the catalogue");
  d.narrative = inf.narrative;
  const double wall = ctx.program_time_s(), min_share = cfg.get_float("diagnosis.min_share");
  for (const auto &f : inf.fired) {
    if (!f.node->cause) continue;
    const double sec = seconds.count(f.node->metric) ? seconds.at(f.node->metric) : 0.0;
    d.causes.push_back({f.node->id, f.text, f.share, sec});
    if (wall <= 0 || sec < min_share * wall) continue;
    Finding fd;
    fd.kind = *kind;
    fd.place.type = Place::Type::ModelCause;
    fd.place.label = f.node->id + " (" + where + ")";
    fd.place.model_cause = f.node->id;
    fd.place.model_ranks = model_ranks;
    fd.culprits.ranks = {{worst_rank, worst_rank}};
    fd.cause = f.text;
    // A cause in the model's named ranks (the master's set-up, its bottleneck) is theirs: they
    // carry it, and the time at stake is what the worst entity lost to it, while every worker waits.
    if (!model_ranks.empty() && f.node->id.rfind("master", 0) == 0) {
      fd.culprits.ranks = model_ranks;
      fd.cause += "; time at stake: what the worst worker (rank " + std::to_string(worst_rank) +
                  ") lost to it; every worker waits for the master, so its fix can buy more";
    }
    fd.lost_s = sec;
    if (const auto q = fixes.find(f.node->id); q != fixes.end()) fd.fix = q->second;
    d.findings.push_back(fd);
  }
  // Each model's terms are disjoint parts of the worst entity's lost time (its time in MPI),
  // communication included: every share lies in [0, 1] and they add up to at most 1.
  double sum = 0;
  for (const auto &c : d.causes) {
    PERFSIFT_CHECK(c.share >= 0 && c.share <= 1 + 1e-9, d.model + " cause " + c.id + " of " + d.worst + " at share " +
                                                            std::to_string(c.share) + " of the lost time");
    sum += c.share;
  }
  PERFSIFT_CHECK(sum <= 1 + 1e-6,
                 d.model + " causes of " + d.worst + " add up to " + std::to_string(sum) + " of the lost time");
}

namespace {

struct Evaluated {
  std::string model;  // "none" when nothing was recognised
  Diagnosis d;
  Recognition r;
};

// The model recognised with the most confidence, at least `least` (none: below it).
std::optional<ProblemKind> most_confident(const Recognition &r, double least) {
  ProblemKind kind = ProblemKind::MasterWorker;
  double best = least;
  bool any = false;
  if (r.mw.confidence >= best) kind = ProblemKind::MasterWorker, best = r.mw.confidence, any = true;
  if (r.wavefront() > best) kind = ProblemKind::Wavefront, best = r.wavefront(), any = true;
  if (r.divide_and_conquer() > best) kind = ProblemKind::DivideAndConquer, any = true;
  return any ? std::optional<ProblemKind>(kind) : std::nullopt;
}

// Recognises (or takes diagnosis.model) and diagnoses one run.
Evaluated evaluate(Context &ctx, const config::Values &cfg, const ReplayModel &model, const MatchedMessageTable &msgs,
                   const std::string &forced) {
  ctx.progress().begin("diagnosis: recognising the model");
  Evaluated ev;
  ev.r = recognise(ctx, model, msgs);
  ctx.progress().end();
  // The models are problem kinds (problem_kinds.h); diagnosis.model names one by its identifier.
  // Built in one expression: GCC's -Wmaybe-uninitialized misreads an optional reset and assigned.
  const std::optional<ProblemKind> recognised =
      forced == "auto" ? most_confident(ev.r, cfg.get_float("diagnosis.min_confidence")) : find_problem_kind(forced);
  ev.model = recognised ? std::string(kind_id(*recognised)) : forced == "auto" ? "none" : forced;
  if (recognised == ProblemKind::MasterWorker)
    ev.d = diagnose_master_worker(ctx, cfg, model, msgs, ev.r.masters.empty() ? std::vector<int32_t>{0} : ev.r.masters,
                                  ev.r.mw.confidence);
  if (recognised == ProblemKind::Wavefront) {
    if (ev.r.grid.px == 0)
      throw std::runtime_error("diagnosis.model = wavefront: " + std::to_string(ctx.nranks()) +
                               " ranks form no 2-D grid");
    ev.d = diagnose_wavefront(ctx, cfg, model, msgs, ev.r.grid, ev.r.wavefront());
  }
  if (recognised == ProblemKind::DivideAndConquer)
    ev.d = diagnose_divide_and_conquer(ctx, cfg, model, msgs, ev.r.divide_and_conquer());
  return ev;
}

// Thesis 5.3.2: the reference run sets the expectations. Weak scaling (the same work per
// rank) expects the same times and reports differences in percent; strong scaling (the
// same total work) expects per-rank times to shrink with the rank count.
void relative(Diagnosis &d, const Diagnosis &ref, int64_t ranks, int64_t ref_ranks, const std::string &scaling,
              const std::string &path, StageOutput &out) {
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
    const double expected =
        strong && per_rank_time
            ? hc::expected_strong_scaling(it->second, ref_ranks, ranks)  // time shrinks with 1/P
            : (strong && k == "runtime" ? it->second * static_cast<double>(ref_ranks) / static_cast<double>(ranks)
                                        : it->second);
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
  } else if ((grew == "t_pl_fill" || grew == "t_pl_empty" || grew == "t_pl_directionchange") &&
             d.summary.count("depth") && d.summary.at("depth") > ref.summary.at("depth")) {
    // Fill-up, empty-up and the refill after a direction change all grow with the depth.
    char b[400];
    std::snprintf(b, sizeof b,
                  "the increase of pipeline depth from %.0f to %.0f stages is the main cause of the overhead increase: "
                  "fill-up %+.0f%%, "
                  "empty-up %+.0f%%, direction changes %+.0f%% per process against the reference",
                  ref.summary.at("depth"), d.summary.at("depth"),
                  hc::difference_percent(d.summary.at("t_pl_fill"), ref.summary.at("t_pl_fill")),
                  hc::difference_percent(d.summary.at("t_pl_empty"), ref.summary.at("t_pl_empty")),
                  hc::difference_percent(d.summary.at("t_pl_directionchange"), ref.summary.at("t_pl_directionchange")));
    cause = b;
  } else {
    cause = grew + " grew most against the reference run (" + format_seconds(grew_by) + " more per " +
            (d.model == "master-worker" ? "worker" : "process") + ")";
  }
  out.attribute("relative_cause", cause);
  d.narrative += "Relative to " + path + " (" + scaling + " scaling): " + cause + ".\n";
}

// The recognition table: how well each model fits, and the evidence.
void write_recognition(const Context &ctx, const Recognition &r, StageOutput &out) {
  io::Table rec;
  rec.description = "how well each model's communication structure fits the run";
  auto &rm = rec.strings("model", "master-worker, wavefront or divide-and-conquer");
  auto &rc = rec.floats("confidence", "", "0..1");
  auto &rd = rec.strings("evidence", "what was measured");
  char buf[256];
  rm.push_back("master-worker");
  rc.push_back(r.mw.confidence);
  std::string masters;
  for (const int32_t m : r.masters) masters += (masters.empty() ? "" : ", ") + std::to_string(m);
  std::snprintf(buf, sizeof buf,
                "%s %s: %.0f%% of messages go to or from %s; %s to %.0f%% of the other ranks; requests and "
                "replies %.0f%% balanced",
                r.masters.size() > 1 ? "ranks" : "rank", masters.c_str(), 100 * r.mw.touching,
                r.masters.size() > 1 ? "them" : "it", r.masters.size() > 1 ? "they talk" : "it talks",
                100 * r.mw.served, 100 * r.mw.balance);
  rd.push_back(r.mw.master >= 0 ? buf : "fewer than 3 ranks or no messages");
  rm.push_back("wavefront");
  rc.push_back(r.wavefront());
  std::snprintf(
      buf, sizeof buf,
      "%.0f%% of messages between neighbours of a %d x %d grid; %.0f%% of receive blocks forwarded to other partners",
      100 * r.grid.neighbour_share, r.grid.px, r.grid.py, 100 * r.forwarding);
  rd.push_back(r.grid.px ? buf : "no 2-D grid layout (the rank count is prime or below 4)");
  rm.push_back("divide-and-conquer");
  rc.push_back(r.divide_and_conquer());
  std::snprintf(buf, sizeof buf,
                "%.0f%% of messages between bisection partners; ranks meet partners on %.0f%% of the levels; %.0f%% "
                "of ranks meet at most one partner per level; %.0f%% forwarded; tree of the splits %.0f%%",
                100 * r.dc.pow2, 100 * r.dc.levels, 100 * r.dc.few_partners, 100 * r.forwarding, 100 * r.tree);
  std::string dc_text = buf;
  if (r.halo_like)
    dc_text += "; halved: the partners are also neighbours of a " + std::to_string(r.grid.px) + " x " +
               std::to_string(r.grid.py) + " grid meeting " + std::to_string(r.dc.median_pair_messages) +
               " times per pair (a halo exchange every step, not a recursion; diagnosis.model = "
               "\"divide-and-conquer\" diagnoses it as one)";
  rd.push_back(ctx.nranks() >= 4 ? dc_text : "fewer than 4 ranks");
  out.table("recognition", rec);
}

// Collective: the reference run at `path` diagnosed as the same model, and this run's
// diagnosis `d` relative to it.
void compare_with_reference(Context &ctx, const config::Values &cfg, const ReplayModel &model,
                            const std::string &model_name, const std::string &path, Diagnosis &d, StageOutput &out) {
  io::TraceStore ref_store(path, ctx.comm());
  Context rctx(ctx.comm(), ref_store, ctx.config(), ctx.progress());
  const auto rmodel = build_replay_model(rctx, model.params);
  const Evaluated rev = evaluate(rctx, cfg, *rmodel, match_messages(rctx, rmodel), model_name);
  std::string scaling = cfg.get_string("diagnosis.scaling");
  if (scaling == "auto") {
    const double per_rank =
        d.summary.count("computation") && rev.d.summary.count("computation") && rev.d.summary.at("computation") > 0
            ? d.summary.at("computation") / rev.d.summary.at("computation")
            : 1;
    scaling = hc::scaling_kind(per_rank, ctx.nranks(), rctx.nranks());
  }
  relative(d, rev.d, ctx.nranks(), rctx.nranks(), scaling, path, out);
}

// The diagnosis's per-entity table, attributes and fired causes.
void write_diagnosis(const Diagnosis &d, StageOutput &out) {
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

void run_diagnosis(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const ReplayModel &model = *ctx.products().get<MatchedRun>().model;
  const Evaluated ev =
      evaluate(ctx, cfg, model, ctx.products().get<MatchedMessages>().items, cfg.get_string("diagnosis.model"));
  write_recognition(ctx, ev.r, out);
  out.attribute("model", ev.model);
  if (ev.model == "none") return;
  Diagnosis d = ev.d;
  if (const std::string path = cfg.get_string("diagnosis.reference"); !path.empty())
    compare_with_reference(ctx, cfg, model, ev.model, path, d, out);
  for (const auto &f : d.findings) ctx.findings.push_back(f);
  write_diagnosis(d, out);
}

// Set-up: the model's name, the scaling, the reference store, the knowledge base and
// the event mapping.
void check_diagnosis(const config::Values &cfg, const io::TraceStore &store) {
  const std::string m = cfg.get_string("diagnosis.model");
  const std::vector<std::string> models = {"auto", "master-worker", "wavefront", "divide-and-conquer", "none"};
  if (std::find(models.begin(), models.end(), m) == models.end())
    throw std::runtime_error(
        cfg.where("diagnosis.model") + ": unknown model '" + m +
        "' (this version diagnoses: auto, master-worker, wavefront, divide-and-conquer, none; did you mean '" +
        config::nearest(m, models) + "'?)");
  const std::string sc = cfg.get_string("diagnosis.scaling");
  if (sc != "auto" && sc != "weak" && sc != "strong")
    throw std::runtime_error(cfg.where("diagnosis.scaling") + ": '" + sc + "' is not auto, weak or strong");
  if (const std::string ref = cfg.get_string("diagnosis.reference"); !ref.empty() && !std::filesystem::exists(ref))
    throw std::runtime_error(ref + ": the reference trace store does not exist (" + cfg.where("diagnosis.reference") +
                             ")");
  check_knowledge(cfg.get_string("diagnosis.knowledge"));
  map_events(cfg.get_list("diagnosis.events"), store.regions());
}

}  // namespace

}  // namespace diagnosis

StageInfo diagnosis_stage() {
  using namespace diagnosis;
  StageInfo s{
      "diagnosis",
      "Hercule's model-based diagnosis: recognises master-worker, wavefront or divide-and-conquer structure from the "
      "communication and "
      "explains the lost time in the model's terms (knowledge base in TOML), with a narrative",
      {{"model", config::Type::String, std::string("auto"), "",
        "auto (recognise), master-worker, wavefront, divide-and-conquer, or none", 0, 0},
       {"reference", config::Type::String, std::string(""), "",
        "a reference run's trace store: relative diagnosis against it (analyze --reference)", 0, 0},
       {"scaling", config::Type::String, std::string("auto"), "",
        "how the run relates to the reference: weak, strong, or auto (from the work per rank)", 0, 0},
       {"events", config::Type::StringList, std::vector<std::string>{}, "",
        "abstract events mapped to regions, e.g. [\"Setup=master_setup\", \"Compute=worker_compute\"] (master-worker) "
        "or Divide=, Solve=, Merge= (divide-and-conquer); unmapped events are recognised from the communication",
        0, 0},
       {"min_confidence", config::Type::Float, 0.6, "", "recognition below this confidence diagnoses nothing", 0, 1},
       {"knowledge", config::Type::String, std::string(""), "",
        "directory of model files (<model>.toml) replacing the built-in ones", 0, 0},
       {"min_cause_share", config::Type::Float, 0.02, "",
        "tree nodes below this share of the lost time are evaluated but not reported (a node's own threshold can be "
        "higher)",
        0, 1},
       {"min_share", config::Type::Float, 0.01, "",
        "a fired cause becomes a finding when it accounts for this share of the run", 0, 1}},
      run_diagnosis};
  s.requires_products = {product_name<MatchedRun>(), product_name<MatchedMessages>(), product_name<RegionExecutions>()};
  s.check = check_diagnosis;
  return s;
}

}  // namespace perfsift::pipeline
