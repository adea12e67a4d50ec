// Stage `diagnosis`, private: what its files share — the recognition of the model
// (recognition.cpp), the diagnosis each model's file produces (master_worker.cpp,
// wavefront.cpp, divide_conquer.cpp), and the per-rank times, event mapping and the turn of
// the inference into causes and findings they all use (stage.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/hercule.h"
#include "pipeline/engine/stage_info.h"
#include "pipeline/knowledge/knowledge_base.h"
#include "pipeline/replay/matched_messages.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline::diagnosis {

namespace hc = kernels::hercule;

// What the diagnosis needs of each rank, gathered everywhere.
struct RankTimes {
  int32_t rank = 0, pad = 0;
  int64_t start = 0, finalize_enter = 0;
  int64_t end = 0;     // leaves MPI_Finalize, at the earliest when the last rank entered it
  int64_t mpi_ns = 0;  // in MPI calls after MPI_Init, the wait in MPI_Finalize included
  int64_t elapsed() const { return end - start; }
  int64_t computation() const { return elapsed() - mpi_ns; }
};

struct Recognition {
  hc::MasterWorkerScore mw;      // of the masters together when several serve workers of their own
  std::vector<int32_t> masters;  // mw.master, or the farms' masters
  hc::GridScore grid;
  hc::DivideConquerScore dc;
  double forwarding = 0;  // receive blocks followed by sends to other partners, of all followed by sends
  // A tree-shaped divide-and-conquer: the ranks that communicate form a tree (connected, no
  // cycle), made of the recursive bisection's splits (lo hands mid its half): the splits
  // used of all splits, times the pairs that are splits of all pairs. 0 below 4 ranks.
  double tree = 0;
  // The splitting partners are also the neighbours of a 2-D grid (2 x 2 ranks: a 2-level
  // butterfly is a 2-D halo) and meet every step (kHaloPairMessages or more messages per
  // pair): a halo exchange repeated each time step, not a recursion. Halves dc.confidence.
  bool halo_like = false;
  static constexpr int64_t kHaloPairMessages = 32;
  double wavefront() const { return grid.neighbour_share * forwarding; }
  // Splitting partners exchange (or hand results up); they do not forward data on, unless
  // the splitting is tree-shaped: a parent hands a child its half, which hands a half on
  // (forwarding without a cycle, which a wavefront's grid always has).
  double divide_and_conquer() const { return std::max(dc.confidence * (1 - forwarding), tree); }
};

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
  io::Table entities;  // per worker or process
  std::vector<Finding> findings;
  std::map<std::string, double> summary;  // run-level figures a relative diagnosis compares
};

// Every process's per-rank records, in rank order.
template <class Record>
std::vector<Record> gather_by_rank(const Context &ctx, const std::vector<Record> &mine) {
  auto all = ctx.allgatherv(mine);
  std::sort(all.begin(), all.end(), [](const Record &a, const Record &b) { return a.rank < b.rank; });
  return all;
}

// recognition.cpp. Collective: a gather of the communicating pairs, one sum.
Recognition recognise(const Context &ctx, const ReplayModel &model, const MatchedMessageTable &msgs);

// stage.cpp, for the model diagnoses.
// Collective (a gather): every rank's times, in rank order.
std::vector<RankTimes> rank_times(const Context &ctx, const ReplayModel &model);
// diagnosis.events: each abstract event's regions.
std::map<std::string, std::vector<uint8_t>> event_regions(const Context &ctx, const config::Values &cfg);
// An efficiency as the reports print it: "%.3f".
std::string three_decimals(double v);
// The tree's fired causes become the diagnosis's causes, and findings when they matter for
// the run: at the model's cause (`where` describes the model's shape), culprit the worst
// rank, priced by the cause's fix when `fixes` has one; `model_ranks`: the ranks the model
// centres on (master-worker's masters), whose own excess is the cause's symptom.
void conclude(Diagnosis &d, const Inference &inf, const std::map<std::string, double> &seconds, const Context &ctx,
              const config::Values &cfg, const std::string &where, int32_t worst_rank,
              const std::map<std::string, Fix> &fixes, const kernels::RankRanges &model_ranks = {});

// One per model's file; each is collective (the same calls in the same order everywhere).
Diagnosis diagnose_master_worker(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                                 const MatchedMessageTable &msgs, const std::vector<int32_t> &masters,
                                 double confidence);
Diagnosis diagnose_wavefront(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                             const MatchedMessageTable &msgs, const hc::GridScore &grid, double confidence);
Diagnosis diagnose_divide_and_conquer(const Context &ctx, const config::Values &cfg, const ReplayModel &model,
                                      const MatchedMessageTable &msgs, double confidence);

}  // namespace perfsift::pipeline::diagnosis
