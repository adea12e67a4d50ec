// The replayable form of a trace store: each owned rank's events turned into a
// kernels::replay program (messages matched across analysis processes), what locates
// computation (region executions, steps), and the distributed replay driver.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/results_store.h"
#include "kernels/replay.h"
#include "kernels/replay_pass.h"
#include "pipeline/engine/context.h"
#include "pipeline/engine/operation_totals.h"
#include "pipeline/replay/call_labels.h"
#include "pipeline/replay/execution_log.h"

namespace perfsift::pipeline {

struct MatchedMessage;  // pipeline/replay/matched_messages.h

struct ReplayModel {
  kernels::LogGPS params;
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
  // Baseline replay of the owned ranks (filled by the whatif stage; `replayed` says it ran,
  // also on processes owning no rank).
  std::vector<kernels::replay::TimingColumn> baseline;
  bool replayed = false;
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

// Product of the whatif stage: the matched run under the configured LogGPS parameters,
// with its baseline replay (bounds and domino start from it), and that replay's state
// when the domino stage will resume candidates from it (domino_resumes_from_baseline):
// kept from the whatif stage's own baseline replay rather than replayed again; it borrows
// the model's baseline timings, and the domino stage takes it (its memory goes there).
struct ReplayBaseline {
  static constexpr std::string_view kProduct = "replay baseline";
  std::shared_ptr<const ReplayModel> model;
  std::shared_ptr<kernels::replay::Snapshot> snapshot;
};
// Whether the domino stage of pipeline `cfg` will resume its candidates' replays from the
// baseline's state on this run (pipeline/stages/domino.cpp: it is in pipeline.stages, and
// the run is neither past domino.max_events, nor small enough to gather, nor threaded).
bool domino_resumes_from_baseline(const config::Values &cfg, const ReplayModel &model);

// Collective: reads the owned ranks' events, requests, completions and region executions
// and matches messages across processes; `tally`, when given, sums the events it reads.
std::shared_ptr<ReplayModel> build_replay_model(const Context &ctx, const kernels::LogGPS &params,
                                                OperationTally *tally = nullptr);

struct ReplayOutcome {
  int64_t makespan_ns = 0;
  int64_t released = 0;                                // dependencies released at a stuck fixpoint (crashed ranks)
  std::vector<kernels::replay::TimingColumn> timings;  // when asked for
};
// The matched receives of owned program `s` in the messages' order: by receive (event
// order), one call's several receives (MPI_Waitall, MPI_Sendrecv) by sender.
std::vector<int32_t> matched_receives(const ReplayModel &model, size_t s);

// Collective: a copy of the model holding every rank (programs, side data, baseline) on
// every process, for work that replays the whole run many times (domino candidates,
// questions spread over processes). Memory: O(all events) per process.
std::shared_ptr<ReplayModel> gather_whole(const Context &ctx, const ReplayModel &model);

// Collective: replays the owned ranks under a scenario, exchanging cross-owner message
// times, collective arrivals and (resumed replays) the ranks they need in rounds. A
// resumed replay's scenario holds this process's part of the snapshot; it stops when
// every process is back on it. `sink`, when given, sees every replayed event of the
// owned ranks that waited (SinkEvents::Waited, as every sink here: sums of waiting);
// `snapshot`, when given, receives the owned ranks' state to resume from.
// With a snapshot the replay records its timings (`record_timings`): they come in the
// outcome, and whoever keeps them lends them back with Snapshot::borrowed_timings.
ReplayOutcome replay_distributed(const Context &ctx, const ReplayModel &model, const kernels::replay::Scenario &sc,
                                 bool record_timings, const kernels::replay::EventSink &sink = nullptr,
                                 kernels::replay::Snapshot *snapshot = nullptr);

// Collective: several scenarios replayed side by side in shared exchange rounds, the
// engines advanced by threads in turn (the domino search's batches of resumed replays,
// the whatif questions on several cores); each one's run time, INT64_MAX when its
// abort_at stopped it. `sinks`, when given, one per scenario (empty: none), each seeing
// its own replay's events of the owned ranks that waited; `released`, when given, receives each
// scenario's dependencies released at a stuck fixpoint (over every process).
std::vector<int64_t> replay_distributed(const Context &ctx, const ReplayModel &model,
                                        const std::vector<kernels::replay::Scenario> &scenarios,
                                        const std::vector<kernels::replay::EventSink> &sinks = {},
                                        std::vector<int64_t> *released = nullptr);

// Collective: scenarios replayed in one pass over the owned ranks
// (kernels/replay_pass.h), at most kQuestionsPerPass questions and the baseline: each one's
// run time. Empty when the replay met ranks blocked for good (a crashed rank): each
// scenario's own replay releases them in its own way, so replay them one by one then
// (their sinks saw part of the run). `first_timings`, when given, receives the first
// scenario's replayed timings of the owned ranks.
inline constexpr size_t kQuestionsPerPass = kernels::replay::kPassWidth - 1;
std::optional<std::vector<int64_t>> replay_one_pass(
    const Context &ctx, const ReplayModel &model, const std::vector<kernels::replay::Scenario> &scenarios,
    const std::vector<kernels::replay::EventSink> &sinks = {},
    std::vector<kernels::replay::TimingColumn> *first_timings = nullptr);
// Collective: the owned ranks' state after the model's finished replay of `sc`, rebuilt
// from its timings (a pass keeps no engine state: kernels::replay::snapshot_from_timings),
// as replay_distributed's `snapshot` gives it; the timings move into it. Nothing, on every
// process, when it cannot be rebuilt (several lanes, a message end named twice, a
// collective naming two roots): replay with an engine then.
std::optional<kernels::replay::Snapshot> snapshot_of_replay(const Context &ctx, const ReplayModel &model,
                                                            const kernels::replay::Scenario &sc,
                                                            std::vector<kernels::replay::TimingColumn> timings);
// Collective: how many of `scenarios`, from the first, can replay in one pass
// (0 or 1: none), the same answer on every process.
size_t questions_sharing_a_pass(const Context &ctx, const ReplayModel &model,
                                const std::vector<kernels::replay::Scenario> &scenarios);

// Collective: the owned ranks' clean cuts (kernels/replay_cuts.h) over every process's
// ranks, for Scenario::cuts of resumed replays from `snapshot`; empty vectors when the
// ranks disagree on their candidates.
std::vector<std::vector<int64_t>> clean_cuts(const Context &ctx, const ReplayModel &model,
                                             const kernels::replay::Snapshot &snapshot);

// Reads a LogGPS parameter file (`perfsift calibrate` writes it). Throws config::ConfigError.
kernels::LogGPS read_loggps(const std::string &path);
void write_loggps(const std::string &path, const kernels::LogGPS &p, const std::string &comment);
// The parameters as /whatif attributes: loggps_source, loggps_L_ns, ...
std::vector<std::pair<std::string, io::AttrValue>> loggps_attributes(const kernels::LogGPS &p);

}  // namespace perfsift::pipeline
