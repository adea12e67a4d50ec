// Stage `diagnosis`: the wavefront model (thesis eq. 5.5-5.6). Each process of the 2-D
// grid waits for the pipeline to fill up (its first receive block), for its predecessors
// within a sweep (handshake), after a change of the sweep's direction, and for the
// pipeline to empty (until the last process enters MPI_Finalize); the rest is computation
// and effective communication.
//
// Cost: a gather of one record per rank (twice); O(messages) work.
#include <algorithm>
#include <cstdio>

#include "kernels/wait_states.h"
#include "pipeline/engine/check.h"
#include "pipeline/stages/diagnosis/diagnosis.h"

namespace perfsift::pipeline::diagnosis {

namespace {

// A wavefront process's time, split by eq. 5.6, plus what the summary needs.
struct WfRank {
  int32_t rank = 0, pad = 0;
  int64_t fill = 0, empty = 0, handshake = 0, direction = 0, comm = 0, comp = 0, elapsed = 0;
  int64_t wait() const { return fill + empty + handshake + direction; }
};

int sign(int v) { return (v > 0) - (v < 0); }

// A rank's place in the grid, px ranks wide.
std::pair<int, int> grid_xy(int32_t rank, int32_t px) { return {rank % px, rank / px}; }

double efficiency(const WfRank &w) {
  return w.elapsed ? static_cast<double>(w.comp) / static_cast<double>(w.elapsed) : 0;
}

// One of a rank's receives (with their wait) or sends.
struct Step {
  int32_t event;
  bool send;
  int32_t partner;
  int fx, fy;                    // flow direction of the data
  int64_t wait_begin, wait_end;  // a receive's wait for a late sender (its blocking call, until the send)
};

// The rank's activity in program order.
std::vector<Step> wavefront_steps(const kernels::replay::RankProgram &p, const ReplayModel::Side &side,
                                  const MatchedMessageTable &received, int32_t px) {
  const auto [x, y] = grid_xy(p.rank, px);
  std::vector<Step> steps;
  for (size_t k = 0; k < p.sends.size(); ++k)
    if (p.sends[k].dst >= 0) {
      const auto [qx, qy] = grid_xy(p.sends[k].dst, px);
      steps.push_back({side.send_done[k] >= 0 ? side.send_done[k] : side.send_event[k], true, p.sends[k].dst,
                       sign(qx - x), sign(qy - y), 0, 0});
    }
  for (const MatchedMessage &m : received) {
    const auto [qx, qy] = grid_xy(m.src, px);
    const auto b = kernels::waitstates::receiver_call(m.timing);
    const int64_t late = kernels::waitstates::late_sender(m.timing);
    steps.push_back({m.recv_done >= 0 ? m.recv_done : m.recv_event, false, m.src, sign(x - qx), sign(y - qy), b.enter,
                     b.enter + late});
  }
  std::stable_sort(steps.begin(), steps.end(), [](const Step &a, const Step &b) { return a.event < b.event; });
  return steps;
}

// A run of receives or of sends, and the direction its data flows in.
struct Block {
  bool send;
  size_t begin, end;
  int fx = 0, fy = 0;
};

// The steps in blocks. A receive from a partner already in the block starts a new one: the
// next wave from the same upstream neighbour (the last stage of a sweep receives and never
// sends, wave after wave).
std::vector<Block> blocks_of(const std::vector<Step> &steps) {
  std::vector<Block> blocks;
  for (size_t i = 0; i < steps.size();) {
    Block bl{steps[i].send, i, i};
    std::vector<int32_t> partners;
    size_t k = i;
    for (; k < steps.size() && steps[k].send == bl.send; ++k) {
      if (!bl.send) {
        if (std::find(partners.begin(), partners.end(), steps[k].partner) != partners.end()) break;
        partners.push_back(steps[k].partner);
      }
      bl.fx = bl.fx ? bl.fx : steps[k].fx;
      bl.fy = bl.fy ? bl.fy : steps[k].fy;
    }
    bl.end = k;
    blocks.push_back(bl);
    i = k;
  }
  return blocks;
}

// Each receive block's wait: filling up (the first block), after a change of direction, or a
// handshake. Receives completed by one call (a Waitall of Irecvs) wait once: each wait
// counts only where it reaches beyond the earlier ones. A receive block's direction is the
// sweep's: the receives' flow completed by the sends that follow (a rank on the grid's edge
// receives along one axis only, and shows the other by where it sends).
void split_waiting(const std::vector<Step> &steps, WfRank &w) {
  const auto blocks = blocks_of(steps);
  int lx = 0, ly = 0;  // the last flow direction seen
  bool first_block = true;
  int64_t waited_until = INT64_MIN;
  for (size_t j = 0; j < blocks.size(); ++j) {
    const Block &bl = blocks[j];
    int bx = bl.fx, by = bl.fy;
    if (!bl.send) {
      if (j + 1 < blocks.size() && blocks[j + 1].send) {
        bx = bx ? bx : blocks[j + 1].fx;
        by = by ? by : blocks[j + 1].fy;
      }
      int64_t wait = 0;
      for (size_t k = bl.begin; k < bl.end; ++k)
        wait += hc::add_uncovered(waited_until, steps[k].wait_begin, steps[k].wait_end);
      const bool reversed = (bx && lx && bx != lx) || (by && ly && by != ly);
      if (first_block)
        w.fill += wait;
      else if (reversed)
        w.direction += wait;
      else
        w.handshake += wait;
    }
    first_block = false;
    lx = bx ? bx : lx;
    ly = by ? by : ly;
  }
}

// Collective (a gather): every process's time, in rank order.
std::vector<WfRank> wavefront_ranks(const Context &ctx, const ReplayModel &model, const MatchedMessageTable &msgs,
                                    const std::vector<RankTimes> &times, int32_t px) {
  int64_t last_finalize = INT64_MIN;
  for (const auto &t : times) last_finalize = std::max(last_finalize, t.finalize_enter);
  const kernels::LogGPS &net = model.params;
  std::vector<WfRank> mine;
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const int32_t r = model.programs[s].rank;
    WfRank w;
    w.rank = r;
    const MatchedMessageTable received = msgs.of_receiver(s);  // by receive event
    for (const MatchedMessage &m : received) w.comm += net.flight(m.timing.bytes) + net.recv_overhead(m.timing.bytes);
    split_waiting(wavefront_steps(model.programs[s], model.side[s], received, px), w);
    const auto &t = times[static_cast<size_t>(r)];
    w.empty = std::clamp<int64_t>(last_finalize - t.finalize_enter, 0, t.end - t.finalize_enter);
    w.elapsed = t.elapsed();
    w.comp = t.computation();
    // The waits are disjoint parts of the time in MPI (the lost time); effective
    // communication is what of the rest the transfers take.
    PERFSIFT_CHECK(w.wait() <= t.mpi_ns, "wavefront waits of rank " + std::to_string(r) + " exceed its time in MPI");
    w.comm = std::min(w.comm, t.mpi_ns - w.wait());
    mine.push_back(w);
  }
  return gather_by_rank(ctx, mine);
}

// What the processes' times add up to.
struct ProcessTotals {
  const WfRank *worst = nullptr;       // the one that waited longest
  std::map<std::string, double> mean;  // per process, s
};

// Each process's time into the table `t` (thesis eq. 5.5-5.6).
ProcessTotals decompose_processes(const std::vector<WfRank> &all, int32_t px, io::Table &t) {
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
  ProcessTotals tot;
  for (const WfRank &w : all) {
    const auto [x, y] = grid_xy(w.rank, px);
    rank.push_back(w.rank);
    stage.push_back(x + y + 1);
    eff.push_back(efficiency(w));
    comp.push_back(w.comp * 1e-9);
    fill.push_back(w.fill * 1e-9);
    empty.push_back(w.empty * 1e-9);
    hs.push_back(w.handshake * 1e-9);
    dc.push_back(w.direction * 1e-9);
    com.push_back(w.comm * 1e-9);
    const double n = static_cast<double>(all.size());
    for (const auto &[k, v] : std::map<std::string, int64_t>{{"computation", w.comp},
                                                             {"waiting", w.wait()},
                                                             {"t_pl_fill", w.fill},
                                                             {"t_pl_empty", w.empty},
                                                             {"t_pl_handshake", w.handshake},
                                                             {"t_pl_directionchange", w.direction},
                                                             {"communication", w.comm}})
      tot.mean[k] += static_cast<double>(v) * 1e-9 / n;
    if (!tot.worst || w.wait() > tot.worst->wait()) tot.worst = &w;
  }
  return tot;
}

double loss_ns(const WfRank &w) { return static_cast<double>(std::max<int64_t>(1, w.elapsed - w.comp)); }

// The worst process's waiting terms, in seconds.
std::map<std::string, double> waiting_seconds(const WfRank &w) {
  return {{"t_wait", w.wait() * 1e-9},
          {"t_comm", w.comm * 1e-9},
          {"t_pl_fill", w.fill * 1e-9},
          {"t_pl_empty", w.empty * 1e-9},
          {"t_pl_handshake", w.handshake * 1e-9},
          {"t_pl_directionchange", w.direction * 1e-9}};
}

// The inference tree over the worst process's shares of its lost time.
Inference explain(const KnowledgeBase &kb, const config::Values &cfg, const WfRank &worst, const hc::GridScore &grid,
                  int64_t depth, double confidence) {
  const double loss = loss_ns(worst);
  auto share = [&](int64_t v) { return static_cast<double>(v) / loss; };
  const std::map<std::string, double> shares = {{"efficiency", efficiency(worst)},
                                                {"t_wait", share(worst.wait())},
                                                {"t_comm", share(worst.comm)},
                                                {"t_pl_fill", share(worst.fill)},
                                                {"t_pl_empty", share(worst.empty)},
                                                {"t_pl_handshake", share(worst.handshake)},
                                                {"t_pl_directionchange", share(worst.direction)}};
  const auto [wx, wy] = grid_xy(worst.rank, grid.px);
  const std::map<std::string, std::string> words = {
      {"worst", std::to_string(worst.rank)}, {"stage", std::to_string(wx + wy + 1)},
      {"depth", std::to_string(depth)},      {"px", std::to_string(grid.px)},
      {"py", std::to_string(grid.py)},       {"efficiency", three_decimals(efficiency(worst))}};
  char head[160];
  std::snprintf(head, sizeof head, "wavefront (a %d x %d grid, %lld pipeline stages; recognised with confidence %.2f)",
                grid.px, grid.py, static_cast<long long>(depth), confidence);
  return infer(kb, shares, waiting_seconds(worst), words, head, cfg.get_float("diagnosis.min_cause_share"));
}

}  // namespace

Diagnosis diagnose_wavefront(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                             const MatchedMessageTable &msgs, const hc::GridScore &grid, double confidence) {
  const auto kb = load_knowledge("wavefront", cfg.get_string("diagnosis.knowledge"), wavefront_metrics());
  const auto times = rank_times(ctx, model);
  const auto all = wavefront_ranks(ctx, model, msgs, times, grid.px);
  Diagnosis d;
  d.model = "wavefront";
  d.confidence = confidence;
  const ProcessTotals tot = decompose_processes(all, grid.px, d.entities);
  const int64_t depth = hc::pipeline_depth(grid.px, grid.py);
  d.summary = tot.mean;
  d.summary["runtime"] = ctx.program_time_s();
  d.summary["depth"] = static_cast<double>(depth);
  if (!tot.worst) return d;
  const WfRank &worst = *tot.worst;
  const auto inf = explain(kb, cfg, worst, grid, depth, confidence);
  d.worst = "process " + std::to_string(worst.rank);
  d.symptom =
      "low process efficiency: process " + std::to_string(worst.rank) + " at " + three_decimals(efficiency(worst));
  d.metrics = {{"efficiency", efficiency(worst)},
               {"loss_s", loss_ns(worst) * 1e-9},
               {"t_wait_s", worst.wait() * 1e-9},
               {"t_pl_fill_s", worst.fill * 1e-9},
               {"t_pl_empty_s", worst.empty * 1e-9},
               {"t_pl_handshake_s", worst.handshake * 1e-9},
               {"t_pl_directionchange_s", worst.direction * 1e-9},
               {"t_comm_s", worst.comm * 1e-9},
               {"px", static_cast<double>(grid.px)},
               {"py", static_cast<double>(grid.py)},
               {"depth", static_cast<double>(depth)}};
  conclude(d, inf, waiting_seconds(worst), ctx, cfg,
           std::to_string(grid.px) + " x " + std::to_string(grid.py) + " pipeline", worst.rank, {});
  return d;
}

}  // namespace perfsift::pipeline::diagnosis
