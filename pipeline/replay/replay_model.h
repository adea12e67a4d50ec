// The replayable form of a trace store: each owned rank's events turned into a
// kernels::replay program (messages matched across analysis processes) and what locates
// computation (region executions, steps). Replaying it: pipeline/replay/distributed_replay.h.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "kernels/replay.h"
#include "pipeline/engine/context.h"
#include "pipeline/engine/operation_totals.h"
#include "pipeline/replay/call_labels.h"
#include "pipeline/replay/execution_log.h"

namespace perfsift::pipeline {

struct MatchedMessage;  // pipeline/replay/matched_messages.h

struct ReplayModel {
  kernels::LogGPS params;  // what it was built with (the matched run: defaults; matching needs none)
  std::vector<kernels::replay::RankProgram> programs;  // owned ranks, in order
  // Per owned rank, per event: measured enter time and its innermost region, call site and
  // operation (labels); steps are known from the region executions. The measured exit is
  // measured_exit(): one call sequence per rank needs no exit per event (8 B), the next
  // event's enter less its gap gives it.
  struct Side {
    kernels::replay::BlockDeltaColumn enter;  // 4.5 B per event (measured enters rarely leap 2 s in 16 calls)
    std::vector<int64_t> exit;                // laned ranks only (several threads call MPI): every event's exit
    int64_t last_exit = 0;                    // the rank's last event's exit
    CallLabels labels;
    std::vector<int32_t> send_event;       // per send: its event
    std::vector<int32_t> recv_event;       // per receive: the event that posted it
    std::vector<int32_t> recv_send_event;  // per receive: the matched send's event in its sender, -1 unmatched
    // Per send / receive: the event that completed its request (Wait*, Test*), -1 when
    // the call itself was blocking or nothing completed it.
    std::vector<int32_t> send_done, recv_done;
    std::vector<int32_t> coll_event;  // per collective: its event
    ExecutionLog executions;          // region executions (/steps), by end time
  };
  std::vector<Side> side;
  // Event i of owned slot s: its measured exit.
  int64_t measured_exit(size_t s, size_t i) const {
    const Side &d = side[s];
    if (!d.exit.empty()) return d.exit[i];
    const auto &ev = programs[s].events;
    return i + 1 < ev.size() ? d.enter[i + 1] - ev[i + 1].gap : d.last_exit;
  }
  // Run-wide figures (identical on every process).
  int64_t measured_ns = 0;  // the last rank's last exit
  int64_t events = 0, sends = 0, receives = 0, unmatched_sends = 0, unmatched_receives = 0;
  int64_t collectives = 0, local_events = 0;
  int64_t cancelled_receives = 0;  // receives cancelled with MPI_Cancel: not in unmatched_receives
  // Ranks calling MPI from several threads, and the most threads one rank has: their
  // programs are laned (kernels::replay::RankProgram::lane), one clock per thread.
  int64_t threaded_ranks = 0, max_threads = 1;
  // Per communicator index: the analysis processes owning a member (arrival routing).
  std::vector<std::vector<int>> comm_owners;
};

// Product: the run as replay programs with every message matched, built once at the
// first stage boundary that needs it (waitstates, classify, diagnosis, whatif) with
// default network parameters: matching does not depend on them.
struct MatchedRun {
  static constexpr std::string_view kProduct = "matched run";
  std::shared_ptr<ReplayModel> model;
};

// Product: the matched run's region executions (ReplayModel::Side::executions), for the
// stages that read them (diagnosis, whatif, bounds). They stay in the model, and go when
// this product is released after its last user: the domino search, the largest stage,
// runs without them (about 5 B per event).
class RegionExecutions {
 public:
  static constexpr std::string_view kProduct = "region executions";
  explicit RegionExecutions(std::shared_ptr<ReplayModel> model) : m_model(std::move(model)) {}
  RegionExecutions(RegionExecutions &&) noexcept = default;
  RegionExecutions &operator=(RegionExecutions &&) noexcept = default;
  RegionExecutions(const RegionExecutions &) = delete;
  RegionExecutions &operator=(const RegionExecutions &) = delete;
  ~RegionExecutions() {
    if (m_model)
      for (auto &side : m_model->side) side.executions.release();
  }

 private:
  std::shared_ptr<ReplayModel> m_model;
};

// Collective: reads the owned ranks' events, requests, completions and region executions
// and matches messages across processes; `tally`, when given, sums the events it reads.
std::shared_ptr<ReplayModel> build_replay_model(const Context &ctx, const kernels::LogGPS &params,
                                                OperationTally *tally = nullptr);

// The matched receives of owned program `s` in the messages' order: by receive (event
// order), one call's several receives (MPI_Waitall, MPI_Sendrecv) by sender.
std::vector<int32_t> matched_receives(const ReplayModel &model, size_t s);

// Collective: a copy of the model holding every rank (programs, side data) on every
// process, for work that replays the whole run many times (domino candidates, questions
// spread over processes). Memory: O(all events) per process. `timings`, when given, are
// the owned ranks' replayed timings (one column per owned rank): every rank's come in
// `gathered_timings`.
std::shared_ptr<ReplayModel> gather_whole(const Context &ctx, const ReplayModel &model,
                                          const std::vector<kernels::replay::TimingColumn> &timings = {},
                                          std::vector<kernels::replay::TimingColumn> *gathered_timings = nullptr);

}  // namespace perfsift::pipeline
