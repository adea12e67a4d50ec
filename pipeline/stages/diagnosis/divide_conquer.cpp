// Stage `diagnosis`: the divide-and-conquer model (thesis eq. 3.1-3.7). Each process's
// waiting splits by stage: in the splitting exchanges (divide), for load moved between
// processes (solve), and for its siblings' results and idle after handing its own on
// (merge). Events Divide, Solve and Merge mapped to regions decide where they are given;
// otherwise the stage is recognised from the partners' split levels.
//
// Cost: a gather of one record per rank (twice); O(messages) work.
#include <algorithm>
#include <cstdio>

#include "kernels/wait_states.h"
#include "pipeline/engine/check.h"
#include "pipeline/stages/diagnosis/diagnosis.h"

namespace perfsift::pipeline::diagnosis {

namespace {

// A divide-and-conquer process's waiting by stage.
struct DcRank {
  int32_t rank = 0, pad = 0;
  int64_t divide = 0, solve = 0, merge = 0, comm = 0, comp = 0, elapsed = 0;
  int64_t wait() const { return divide + solve + merge; }
};

using EventRegions = std::map<std::string, std::vector<uint8_t>>;

// Whether `region` is one of those diagnosis.events maps `event` to.
bool inside(const EventRegions &mapped, const char *event, int32_t region) {
  const auto it = mapped.find(event);
  return it != mapped.end() && region >= 0 && static_cast<size_t>(region) < it->second.size() &&
         it->second[static_cast<size_t>(region)];
}

double efficiency(const DcRank &w) {
  return w.elapsed ? static_cast<double>(w.comp) / static_cast<double>(w.elapsed) : 0.0;
}

double granularity(const DcRank &w) { return w.comm ? static_cast<double>(w.comp) / static_cast<double>(w.comm) : 0.0; }

// One owned rank's waiting by stage, from its receives in receive order.
DcRank rank_waiting(int32_t r, int32_t nranks, const MatchedMessageTable &in, const kernels::replay::RankProgram &p,
                    const ReplayModel::Side &side, const RankTimes &t, const EventRegions &mapped,
                    const kernels::LogGPS &net) {
  DcRank w;
  w.rank = r;
  // A receive from a partner the rank had already handed data to (a send completed before
  // the receive was posted) is a result coming back: merging, not splitting. In a
  // tree-shaped split the rank receives its part from its parent, hands halves to its
  // children, and their results come back at falling levels too.
  std::map<int32_t, int32_t> first_send_done;  // partner -> event of the first completed send to it
  for (size_t k = 0; k < p.sends.size(); ++k) {
    if (p.sends[k].dst < 0) continue;
    const int32_t done = side.send_done[k] >= 0 ? side.send_done[k] : side.send_event[k];
    auto [it, fresh] = first_send_done.insert({p.sends[k].dst, done});
    if (!fresh) it->second = std::min(it->second, done);
  }
  auto handed_before = [&](const MatchedMessage &m) {
    const auto it = first_send_done.find(m.src);
    return it != first_send_done.end() && it->second < m.recv_event;
  };
  // Splitting: the falling run of levels from the rank's highest; the rest with a
  // one-bit partner is merging; any other partner moves load (solve).
  int32_t top = -1;
  for (const MatchedMessage &m : in) top = std::max(top, hc::split_level(m.src, m.dst, nranks));
  bool dividing = !in.empty() && hc::split_level(in[0].src, in[0].dst, nranks) == top && top >= 0;
  int32_t last = INT32_MAX;
  int64_t waited_until = INT64_MIN;  // receives completed by one call (a Waitall) wait once
  for (const MatchedMessage &m : in) {
    const int32_t l = hc::split_level(m.src, m.dst, nranks);
    const auto b = kernels::waitstates::receiver_call(m.timing);
    const int64_t wait = hc::add_uncovered(waited_until, b.enter, b.enter + kernels::waitstates::late_sender(m.timing));
    w.comm += net.flight(m.timing.bytes) + net.recv_overhead(m.timing.bytes);
    // The user's regions decide where they are given.
    const int32_t region = m.recv_done >= 0 ? side.labels.region(static_cast<size_t>(m.recv_done)) : m.recv_region;
    if (inside(mapped, "Divide", region) || inside(mapped, "Solve", region) || inside(mapped, "Merge", region)) {
      (inside(mapped, "Divide", region) ? w.divide : inside(mapped, "Solve", region) ? w.solve : w.merge) += wait;
      dividing = dividing && inside(mapped, "Divide", region);
      continue;
    }
    if (dividing && l >= 0 && l < last && !handed_before(m)) {
      w.divide += wait;
      last = l;
      continue;
    }
    dividing = false;
    (l >= 0 ? w.merge : w.solve) += wait;
  }
  w.merge += t.end - t.finalize_enter;  // idle once its part of the merge is done
  w.elapsed = t.elapsed();
  w.comp = t.computation();
  // The waits are disjoint parts of the time in MPI (the lost time); effective
  // communication is what of the rest the transfers take.
  PERFSIFT_CHECK(w.wait() <= t.mpi_ns,
                 "divide-and-conquer waits of rank " + std::to_string(r) + " exceed its time in MPI");
  w.comm = std::min(w.comm, t.mpi_ns - w.wait());
  return w;
}

// Collective (a gather): every process's waiting, in rank order.
std::vector<DcRank> divide_conquer_ranks(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                                         const MatchedMessageTable &msgs, const std::vector<RankTimes> &times) {
  const auto mapped = event_regions(ctx, cfg);
  std::vector<DcRank> mine;
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const int32_t r = model.programs[s].rank;
    mine.push_back(rank_waiting(r, ctx.nranks(), msgs.of_receiver(s), model.programs[s], model.side[s],
                                times[static_cast<size_t>(r)], mapped, model.params));
  }
  return gather_by_rank(ctx, mine);
}

// What the processes' times add up to.
struct ProcessTotals {
  const DcRank *worst = nullptr;       // the least efficient
  std::map<std::string, double> mean;  // per process, s
};

// Each process's time into the table `t` (thesis eq. 3.1-3.7).
ProcessTotals decompose_processes(const std::vector<DcRank> &all, io::Table &t) {
  t.description = "each process's time in the divide-and-conquer model (thesis eq. 3.1-3.7)";
  auto &rank = t.ints("rank", "", "process");
  auto &eff = t.floats("efficiency", "", "computation over elapsed time");
  auto &comp = t.floats("compute_s", "s", "computation");
  auto &dv = t.floats("t_w_divide_s", "s", "waiting in splitting exchanges");
  auto &sv = t.floats("t_w_solve_s", "s", "waiting for load moved between processes");
  auto &mg = t.floats("t_w_merge_s", "s", "waiting for siblings' results, and idle after handing its own on");
  auto &com = t.floats("t_comm_s", "s", "effective communication (LogGPS transfer costs)");
  auto &gran = t.floats("granularity", "", "computation over communication");
  ProcessTotals tot;
  for (const DcRank &w : all) {
    rank.push_back(w.rank);
    eff.push_back(efficiency(w));
    comp.push_back(w.comp * 1e-9);
    dv.push_back(w.divide * 1e-9);
    sv.push_back(w.solve * 1e-9);
    mg.push_back(w.merge * 1e-9);
    com.push_back(w.comm * 1e-9);
    gran.push_back(granularity(w));
    const double n = static_cast<double>(all.size());
    for (const auto &[k, v] : std::map<std::string, int64_t>{{"computation", w.comp},
                                                             {"waiting", w.wait()},
                                                             {"t_w-divide", w.divide},
                                                             {"t_w-solve", w.solve},
                                                             {"t_w-merge", w.merge},
                                                             {"communication", w.comm}})
      tot.mean[k] += static_cast<double>(v) * 1e-9 / n;
    if (!tot.worst || efficiency(w) < efficiency(*tot.worst)) tot.worst = &w;
  }
  return tot;
}

double loss_ns(const DcRank &w) { return static_cast<double>(std::max<int64_t>(1, w.elapsed - w.comp)); }

// The worst process's waiting terms, in seconds.
std::map<std::string, double> waiting_seconds(const DcRank &w) {
  return {{"t_wait", w.wait() * 1e-9},
          {"t_comm", w.comm * 1e-9},
          {"t_w-divide", w.divide * 1e-9},
          {"t_w-solve", w.solve * 1e-9},
          {"t_w-merge", w.merge * 1e-9}};
}

// The inference tree over the worst process's shares of its lost time.
Inference explain(const KnowledgeBase &kb, const config::Values &cfg, const DcRank &worst, int32_t ranks,
                  int32_t levels, double confidence) {
  const double loss = loss_ns(worst);
  auto share = [&](int64_t v) { return static_cast<double>(v) / loss; };
  const std::map<std::string, double> shares = {{"efficiency", efficiency(worst)}, {"t_wait", share(worst.wait())},
                                                {"t_comm", share(worst.comm)},     {"t_w-divide", share(worst.divide)},
                                                {"t_w-solve", share(worst.solve)}, {"t_w-merge", share(worst.merge)}};
  char g[32];
  std::snprintf(g, sizeof g, "%.3g", granularity(worst));
  const std::map<std::string, std::string> words = {{"worst", std::to_string(worst.rank)},
                                                    {"levels", std::to_string(levels)},
                                                    {"efficiency", three_decimals(efficiency(worst))},
                                                    {"granularity", g}};
  char head[160];
  std::snprintf(head, sizeof head,
                "divide-and-conquer (%d ranks, %d levels of recursive halving; recognised with confidence %.2f)", ranks,
                levels, confidence);
  return infer(kb, shares, waiting_seconds(worst), words, head, cfg.get_float("diagnosis.min_cause_share"));
}

}  // namespace

Diagnosis diagnose_divide_and_conquer(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                                      const MatchedMessageTable &msgs, double confidence) {
  const auto kb =
      load_knowledge("divide-and-conquer", cfg.get_string("diagnosis.knowledge"), divide_and_conquer_metrics());
  const auto times = rank_times(ctx, model);
  int32_t levels = 0;
  while ((int64_t{1} << (levels + 1)) <= ctx.nranks()) ++levels;
  const auto all = divide_conquer_ranks(ctx, cfg, model, msgs, times);
  Diagnosis d;
  d.model = "divide-and-conquer";
  d.confidence = confidence;
  const ProcessTotals tot = decompose_processes(all, d.entities);
  d.summary = tot.mean;
  d.summary["runtime"] = ctx.program_time_s();
  d.summary["depth"] = levels;
  if (!tot.worst) return d;
  const DcRank &worst = *tot.worst;
  const auto inf = explain(kb, cfg, worst, ctx.nranks(), levels, confidence);
  d.worst = "process " + std::to_string(worst.rank);
  d.symptom =
      "low process efficiency: process " + std::to_string(worst.rank) + " at " + three_decimals(efficiency(worst));
  d.metrics = {{"efficiency", efficiency(worst)},   {"loss_s", loss_ns(worst) * 1e-9},
               {"t_wait_s", worst.wait() * 1e-9},   {"t_w_divide_s", worst.divide * 1e-9},
               {"t_w_solve_s", worst.solve * 1e-9}, {"t_w_merge_s", worst.merge * 1e-9},
               {"t_comm_s", worst.comm * 1e-9},     {"levels", static_cast<double>(levels)}};
  conclude(d, inf, waiting_seconds(worst), ctx, cfg, std::to_string(levels) + "-level recursion", worst.rank, {});
  return d;
}

}  // namespace perfsift::pipeline::diagnosis
