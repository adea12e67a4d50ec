// The distributed replay driver: the owned ranks replayed under scenarios, what crosses
// owners exchanged in rounds; several scenarios side by side or in one pass; the state of
// a finished replay to resume from, and the clean cuts of resumed replays.
#pragma once

#include <optional>
#include <vector>

#include "kernels/replay.h"
#include "kernels/replay_pass.h"
#include "pipeline/engine/context.h"
#include "pipeline/replay/replay_model.h"

namespace perfsift::pipeline {

struct ReplayOutcome {
  int64_t makespan_ns = 0;
  int64_t released = 0;                                // dependencies released at a stuck fixpoint (crashed ranks)
  std::vector<kernels::replay::TimingColumn> timings;  // when asked for
};

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

// Collective: how many exchange rounds a distributed replay of the run needs at least as
// counted from its programs, the most on any rank: its message ends whose partner another
// process owns and its collective calls on communicators spanning processes (a chain of
// them, one a round, when each waits for the one before; fewer when eager messages
// overlap). A tightly coupled run on several processes (a ring of 8 B messages: one per
// message) spends more in the rounds than in the replay itself.
int64_t crossing_calls(const Context &ctx, const ReplayModel &model);

// Collective: whether a replay of the whole run on one process is faster than distributed:
// a round of exchange costs about what replaying 100 events does, so a run whose
// crossing_calls times that outnumber the events each process owns spends more in rounds
// than in replaying (a 1.6 M-event ring at K = 2: 200,004 rounds, 8 events a round).
bool rounds_outweigh_replay(const Context &ctx, const ReplayModel &model);

// Collective: the owned ranks' clean cuts (kernels/replay_cuts.h) over every process's
// ranks, for Scenario::cuts of resumed replays from `snapshot`; empty vectors when the
// ranks disagree on their candidates.
std::vector<std::vector<int64_t>> clean_cuts(const Context &ctx, const ReplayModel &model,
                                             const kernels::replay::Snapshot &snapshot);

}  // namespace perfsift::pipeline
