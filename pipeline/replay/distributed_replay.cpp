// The distributed replay driver: engines over the owned ranks advanced in exchange
// rounds (what crossed owners routed in one all-to-all per round for every engine), the
// one-pass replay of several scenarios, snapshots rebuilt from a finished replay's
// timings, and the clean cuts of resumed replays.
#include "pipeline/replay/distributed_replay.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#include "kernels/replay_cuts.h"
#include "kernels/replay_pass.h"
#include "pipeline/engine/check.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {
// A round's blob for one destination: the three counts, then the records of each kind.
template <class T>
void put_records(std::vector<char> &blob, const std::vector<T> &v) {
  static_assert(std::is_trivially_copyable_v<T>);
  blob.insert(blob.end(), reinterpret_cast<const char *>(v.data()),
              reinterpret_cast<const char *>(v.data() + v.size()));
}
// What crosses owners in one round, per destination.
struct RoundTraffic {
  std::vector<rp::Engine::SendPost> sends;
  std::vector<rp::Engine::RecvPost> recvs;
  std::vector<rp::Engine::Arrival> arrivals;
  std::vector<rp::Engine::Pull> pulls;
  bool empty() const { return sends.empty() && recvs.empty() && arrivals.empty() && pulls.empty(); }
};
// One engine's posts and collective arrivals, per destination process: posts to their
// rank's owner, arrivals to every other owner of the communicator (every other process for
// MPI_Finalize's). Engine and PassEngine outboxes alike.
template <class Box, class Traffic>
void route_outbox(const Context &ctx, const ReplayModel &model, const Box &box, std::vector<Traffic> &to) {
  for (const auto &p : box.sends) to[static_cast<size_t>(ctx.owner_of(p.dst))].sends.push_back(p);
  for (const auto &p : box.recvs) to[static_cast<size_t>(ctx.owner_of(p.src))].recvs.push_back(p);
  for (const auto &a : box.arrivals) {
    const int32_t comm = rp::instance_comm(a.instance);
    if (comm >= 0 && comm < static_cast<int32_t>(model.comm_owners.size())) {
      for (int k : model.comm_owners[static_cast<size_t>(comm)])
        if (k != ctx.me()) to[static_cast<size_t>(k)].arrivals.push_back(a);
    } else {
      for (int k = 0; k < ctx.nprocs(); ++k)
        if (k != ctx.me()) to[static_cast<size_t>(k)].arrivals.push_back(a);
    }
  }
}
// One engine's traffic for one destination: its index and four counts, then the posts,
// arrivals and pulls.
void pack_round(std::vector<char> &blob, int64_t engine, const RoundTraffic &t) {
  if (t.empty()) return;  // nothing: no record at all
  const int64_t head[5] = {engine, static_cast<int64_t>(t.sends.size()), static_cast<int64_t>(t.recvs.size()),
                           static_cast<int64_t>(t.arrivals.size()), static_cast<int64_t>(t.pulls.size())};
  blob.insert(blob.end(), reinterpret_cast<const char *>(head), reinterpret_cast<const char *>(head + 5));
  put_records(blob, t.sends);
  put_records(blob, t.recvs);
  put_records(blob, t.arrivals);
  put_records(blob, t.pulls);
}
template <class T>
const char *take_records(const char *at, int64_t n, std::vector<T> &out) {
  if (n == 0) return at;  // (memcpy must not see the null data of an empty vector)
  const size_t old = out.size();
  out.resize(old + static_cast<size_t>(n));
  std::memcpy(static_cast<void *>(out.data() + old), at, static_cast<size_t>(n) * sizeof(T));
  return at + static_cast<size_t>(n) * sizeof(T);
}
// One engine's traffic from one source; returns where the next begins.
const char *unpack_round(const char *at, const char *end, int64_t engines, int64_t &engine, RoundTraffic &t) {
  int64_t head[5];
  PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(sizeof head), "a replay round's blob is cut short");
  std::memcpy(head, at, sizeof head);
  at += sizeof head;
  engine = head[0];
  PERFSIFT_CHECK(engine >= 0 && engine < engines, "a replay round names a replay that does not exist");
  PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(
                                 head[1] * sizeof(rp::Engine::SendPost) + head[2] * sizeof(rp::Engine::RecvPost) +
                                 head[3] * sizeof(rp::Engine::Arrival) + head[4] * sizeof(rp::Engine::Pull)),
                 "a replay round's blob is cut short");
  at = take_records(at, head[1], t.sends);
  at = take_records(at, head[2], t.recvs);
  at = take_records(at, head[3], t.arrivals);
  return take_records(at, head[4], t.pulls);
}

// The other ends' exit_max for messages whose partner another process owns: each side
// tells the partner's owner its own exit_max at the event posting its side.
void exchange_partner_exit_max(const Context &ctx, const ReplayModel &model, rp::Snapshot &snap) {
  struct Record {
    int32_t rank, to_send;  // the partner rank; 1: set its send's, 0: its receive's
    int64_t index, exit_max;
  };
  std::vector<std::vector<Record>> out(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    auto exit_max_at = [&](int32_t e) {
      return e == rp::Snapshot::kNever ? INT64_MAX : snap.exit_max_at(s, static_cast<size_t>(e));
    };
    for (size_t k = 0; k < p.recvs.size(); ++k)
      if (const auto &m = p.recvs[k]; m.src >= 0 && ctx.owner_of(m.src) != ctx.me())
        out[static_cast<size_t>(ctx.owner_of(m.src))].push_back(
            {m.src, 1, m.send_index, exit_max_at(snap.recv_event[s][k])});
    for (size_t k = 0; k < p.sends.size(); ++k)
      if (const auto &m = p.sends[k]; m.dst >= 0 && ctx.owner_of(m.dst) != ctx.me())
        out[static_cast<size_t>(ctx.owner_of(m.dst))].push_back(
            {m.dst, 0, m.recv_index, exit_max_at(snap.send_event[s][k])});
  }
  const auto in = ctx.alltoallv(out);
  std::vector<int32_t> slot(static_cast<size_t>(ctx.nranks()), -1);
  for (size_t s = 0; s < model.programs.size(); ++s)
    slot[static_cast<size_t>(model.programs[s].rank)] = static_cast<int32_t>(s);
  for (const Record &r : in) {
    const int32_t s = slot[static_cast<size_t>(r.rank)];
    PERFSIFT_CHECK(s >= 0, "a message's partner is not owned by the process it was sent to");
    auto &v = r.to_send ? snap.send_partner_exit_max[static_cast<size_t>(s)]
                        : snap.recv_partner_exit_max[static_cast<size_t>(s)];
    v[static_cast<size_t>(r.index)] = r.exit_max;
  }
}
}  // namespace

namespace {
// Collective: advances `engines` (each a scenario over the owned ranks) in shared exchange
// rounds, one all-to-all and one reduction per round for all of them, until each has
// finished, aborted or (resumed ones) is back on its snapshot. Returns which converged.
std::vector<uint8_t> run_rounds(const Context &ctx, const ReplayModel &model, const std::vector<rp::Engine *> &engines,
                                const std::vector<uint8_t> &converge) {
  const int np = ctx.nprocs();
  const size_t n = engines.size();
  std::vector<uint8_t> done(n, 0), converged(n, 0), moved(n, 0);
  size_t active = n;
  while (active > 0) {
    // Engines are independent: threads take them in turn (results do not depend on it).
#pragma omp parallel for schedule(dynamic, 1) if (active > 1)
    for (size_t e = 0; e < n; ++e) moved[e] = !done[e] && engines[e]->advance();
    if (np > 1) {
      // Route what crossed owners; arrivals go to every other owner of the communicator.
      std::vector<std::vector<char>> blobs(static_cast<size_t>(np));
      for (size_t e = 0; e < n; ++e) {
        if (done[e]) continue;
        const auto box = engines[e]->take_outbox();
        std::vector<RoundTraffic> to(static_cast<size_t>(np));
        route_outbox(ctx, model, box, to);
        for (const auto &p : box.pulls) to[static_cast<size_t>(ctx.owner_of(p.rank))].pulls.push_back(p);
        for (size_t k = 0; k < blobs.size(); ++k)
          if (static_cast<int>(k) != ctx.me()) pack_round(blobs[k], static_cast<int64_t>(e), to[k]);
      }
      // One exchange per round for every engine and kind, applied in the order sent.
      const std::vector<char> in = ctx.alltoallv(blobs);
      for (const char *at = in.data(), *end = in.data() + in.size(); at < end;) {
        RoundTraffic got;
        int64_t e = 0;
        at = unpack_round(at, end, static_cast<int64_t>(n), e, got);
        rp::Engine &engine = *engines[static_cast<size_t>(e)];
        for (const auto &p : got.sends) engine.apply(p);
        for (const auto &p : got.recvs) engine.apply(p);
        for (const auto &a : got.arrivals) engine.apply(a);
        for (const auto &p : got.pulls) engine.apply(p);
        moved[static_cast<size_t>(e)] |= !got.empty();
      }
    }
    // Every engine's report combined over processes (Engine::combine as two reductions);
    // all decide alike.
    using Report = rp::Engine::RoundReport;
    std::vector<int64_t> sums(Report::kSums * n, 0), maxima(Report::kMaxima * n, INT64_MIN);
    std::vector<Report> report(n);
    for (size_t e = 0; e < n; ++e)
      if (!done[e]) engines[e]->round_report(moved[e]).encode(&sums[Report::kSums * e], &maxima[Report::kMaxima * e]);
    MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_INT64_T, MPI_SUM, ctx.comm());
    MPI_Allreduce(MPI_IN_PLACE, maxima.data(), static_cast<int>(maxima.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
    for (size_t e = 0; e < n; ++e)
      if (!done[e]) report[e] = Report::decode(&sums[Report::kSums * e], &maxima[Report::kMaxima * e]);
    std::vector<int64_t> released(n, 0);
    std::vector<uint8_t> stuck_here(n, 0);
    bool stuck = false;
    for (size_t e = 0; e < n; ++e) {
      if (done[e]) continue;
      switch (engines[e]->round_end(report[e])) {
        case rp::Engine::RoundEnd::Continue:
          continue;
        case rp::Engine::RoundEnd::Stuck:
          // Stuck everywhere at once: release every blocked rank together (a crashed rank or
          // a message the trace lacks), so the answer does not depend on the split.
          released[e] = engines[e]->release_stuck();
          stuck_here[e] = 1;
          stuck |= converge[e] != 0;
          continue;
        case rp::Engine::RoundEnd::Abort:
          engines[e]->abort();
          break;
        case rp::Engine::RoundEnd::Converged:
          converged[e] = 1;
          break;
        case rp::Engine::RoundEnd::Shifted:
          engines[e]->stop_shifted(report[e].shift_low);
          break;
        case rp::Engine::RoundEnd::Finished:
          break;
      }
      done[e] = 1;
      --active;
    }
    if (stuck) {
      MPI_Allreduce(MPI_IN_PLACE, released.data(), static_cast<int>(n), MPI_INT64_T, MPI_SUM, ctx.comm());
      for (size_t e = 0; e < n; ++e)
        if (stuck_here[e] && converge[e] && released[e] == 0) {
          converged[e] = 1;  // every rank rests where the snapshot holds
          done[e] = 1;
          --active;
        }
    }
  }
  return converged;
}

constexpr int64_t kReplayAgain = std::numeric_limits<int64_t>::min();

// Collective: the run's end for an engine `run_rounds` finished (INT64_MAX: aborted;
// kReplayAgain: an assumed arrival came otherwise).
std::vector<int64_t> makespans(const Context &ctx, const std::vector<rp::Engine *> &engines,
                               const std::vector<uint8_t> &converged) {
  const size_t n = engines.size();
  std::vector<int64_t> end(3 * n, 0);
  for (size_t e = 0; e < n; ++e) {
    if (engines[e]->shifted()) {
      end[e] = engines[e]->shifted_makespan();  // the same on every process
    } else if (converged[e] || engines[e]->converged()) {
      end[e] = engines[e]->converged_makespan();
    } else {
      for (int64_t t : engines[e]->end_times()) end[e] = std::max(end[e], t);
    }
    end[n + e] = engines[e]->aborted() ? 1 : 0;
    end[2 * n + e] = engines[e]->conflict() ? 1 : 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, end.data(), static_cast<int>(end.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  for (size_t e = 0; e < n; ++e) {
    if (end[n + e]) end[e] = std::numeric_limits<int64_t>::max();
    if (end[2 * n + e]) end[e] = kReplayAgain;
  }
  end.resize(n);
  return end;
}
}  // namespace

std::vector<int64_t> replay_distributed(const Context &ctx, const ReplayModel &model,
                                        const std::vector<rp::Scenario> &scenarios,
                                        const std::vector<rp::EventSink> &sinks, std::vector<int64_t> *released) {
  PERFSIFT_CHECK(sinks.empty() || sinks.size() == scenarios.size(), "one event sink per scenario, or none");
  std::vector<std::unique_ptr<rp::Engine>> owned;
  std::vector<rp::Engine *> engines;
  std::vector<uint8_t> converge;
  for (size_t e = 0; e < scenarios.size(); ++e) {
    const rp::Scenario &sc = scenarios[e];
    owned.push_back(std::make_unique<rp::Engine>(model.programs, sc, ctx.nranks(), false, ctx.nprocs() > 1));
    if (!sinks.empty() && sinks[e]) owned.back()->set_event_sink(sinks[e], rp::SinkEvents::Waited);
    engines.push_back(owned.back().get());
    converge.push_back(sc.resume && sc.stop_when_converged);
  }
  auto out = makespans(ctx, engines, run_rounds(ctx, model, engines, converge));
  if (released) {
    released->assign(engines.size(), 0);
    for (size_t e = 0; e < engines.size(); ++e) (*released)[e] = engines[e]->released();
    MPI_Allreduce(MPI_IN_PLACE, released->data(), static_cast<int>(released->size()), MPI_INT64_T, MPI_SUM, ctx.comm());
  }
  // A rested member's assumed arrival came otherwise: those again, every member replayed.
  std::vector<rp::Scenario> again;
  std::vector<rp::EventSink> again_sinks;
  for (size_t e = 0; e < out.size(); ++e)
    if (out[e] == kReplayAgain) {
      again.push_back(scenarios[e]);
      again.back().assume_resting_arrivals = false;
      if (!sinks.empty()) again_sinks.push_back(sinks[e]);
    }
  if (!again.empty()) {
    std::vector<int64_t> again_released;
    const auto redone = replay_distributed(ctx, model, again, again_sinks, released ? &again_released : nullptr);
    for (size_t e = 0, k = 0; e < out.size(); ++e)
      if (out[e] == kReplayAgain) {
        if (released) (*released)[e] = again_released[k];
        out[e] = redone[k++];
      }
  }
  return out;
}

namespace {
// A snapshot of the model's replay borrows the model's posting events (4 B per message end
// and collective call not held twice); a whole-run copy (gather_whole) keeps only the
// sends', and its snapshots hold their own.
std::array<rp::PostingEvents::Borrowed, 3> posting_events_of(const ReplayModel &model) {
  std::array<rp::PostingEvents::Borrowed, 3> lent;  // sends, receives, collective calls
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    const auto &d = model.side[s];
    if (d.send_event.size() != p.sends.size() || d.recv_event.size() != p.recvs.size() ||
        d.coll_event.size() != p.colls.size())
      return {};
    lent[0].push_back(&d.send_event);
    lent[1].push_back(&d.recv_event);
    lent[2].push_back(&d.coll_event);
  }
  return lent;
}

void lend_posting_events(const ReplayModel &model, rp::Engine &engine) {
  auto lent = posting_events_of(model);
  if (!lent[0].empty()) engine.lend_posting_events(std::move(lent[0]), std::move(lent[1]), std::move(lent[2]));
}
}  // namespace

ReplayOutcome replay_distributed(const Context &ctx, const ReplayModel &model, const rp::Scenario &sc,
                                 bool record_timings, const rp::EventSink &sink, rp::Snapshot *snapshot) {
  rp::Engine engine(model.programs, sc, ctx.nranks(), record_timings, ctx.nprocs() > 1);
  if (sink) engine.set_event_sink(sink, rp::SinkEvents::Waited);
  if (snapshot) lend_posting_events(model, engine);
  const std::vector<rp::Engine *> one = {&engine};
  const auto converged = run_rounds(ctx, model, one, {static_cast<uint8_t>(sc.resume && sc.stop_when_converged)});
  ReplayOutcome out;
  out.makespan_ns = makespans(ctx, one, converged)[0];
  if (out.makespan_ns == kReplayAgain) {
    rp::Scenario careful = sc;
    careful.assume_resting_arrivals = false;
    return replay_distributed(ctx, model, careful, record_timings, sink, snapshot);
  }
  int64_t released = engine.released();
  MPI_Allreduce(&released, &out.released, 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  if (snapshot) {
    // The timings go to the caller, who keeps them and lends them back to the snapshot
    // (12.5 B per event held once).
    *snapshot = engine.take_snapshot();
    exchange_partner_exit_max(ctx, model, *snapshot);
    MPI_Allreduce(MPI_IN_PLACE, &snapshot->run_end, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
    out.timings = std::exchange(snapshot->own_timings, {});
    return out;
  }
  if (record_timings) out.timings = engine.take_timings();
  return out;
}

size_t questions_sharing_a_pass(const Context &ctx, const ReplayModel &model,
                                const std::vector<rp::Scenario> &scenarios) {
  // Every process must decide alike: a scenario's changed sizes may touch another's ranks only.
  std::vector<const rp::Scenario *> pass;
  for (const auto &sc : scenarios) pass.push_back(&sc);
  auto fit = static_cast<int64_t>(rp::sharing_a_pass(model.programs, pass));
  MPI_Allreduce(MPI_IN_PLACE, &fit, 1, MPI_INT64_T, MPI_MIN, ctx.comm());
  return static_cast<size_t>(fit);
}

namespace {
// replay_one_pass of W scenarios (as many slots as scenarios: none replays for nothing).
template <int W>
std::optional<std::vector<int64_t>> replay_one_pass_of(const Context &ctx, const ReplayModel &model,
                                                       const std::vector<rp::Scenario> &scenarios,
                                                       const std::vector<rp::EventSink> &sinks,
                                                       std::vector<rp::TimingColumn> *first_timings) {
  using Pass = rp::PassEngine<W>;
  std::vector<const rp::Scenario *> pass;
  for (const auto &sc : scenarios) pass.push_back(&sc);
  const int np = ctx.nprocs();
  Pass engine(model.programs, pass, ctx.nranks(), np > 1);
  if (first_timings) engine.record_first_timings();
  for (size_t l = 0; l < sinks.size(); ++l)
    if (sinks[l]) engine.set_event_sink(l, sinks[l], rp::SinkEvents::Waited);
  // Rounds as run_rounds: advance, route what crossed owners (arrivals to the other owners
  // of the communicator), one all-to-all, then one reduction of (moved, unfinished).
  while (true) {
    int64_t state[2] = {engine.advance() ? 1 : 0, 0};
    if (np > 1) {
      const auto box = engine.take_outbox();
      std::vector<std::vector<char>> blobs(static_cast<size_t>(np));
      std::vector<typename Pass::Outbox> to(static_cast<size_t>(np));
      route_outbox(ctx, model, box, to);
      for (size_t k = 0; k < blobs.size(); ++k) {
        const int64_t head[3] = {static_cast<int64_t>(to[k].sends.size()), static_cast<int64_t>(to[k].recvs.size()),
                                 static_cast<int64_t>(to[k].arrivals.size())};
        if (static_cast<int>(k) == ctx.me() || (head[0] | head[1] | head[2]) == 0) continue;
        blobs[k].insert(blobs[k].end(), reinterpret_cast<const char *>(head), reinterpret_cast<const char *>(head + 3));
        put_records(blobs[k], to[k].sends);
        put_records(blobs[k], to[k].recvs);
        put_records(blobs[k], to[k].arrivals);
      }
      const std::vector<char> in = ctx.alltoallv(blobs);
      for (const char *at = in.data(), *end = in.data() + in.size(); at < end;) {
        int64_t head[3];
        PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(sizeof head),
                       "a one-pass replay round's blob is cut short");
        std::memcpy(head, at, sizeof head);
        at += sizeof head;
        PERFSIFT_CHECK(end - at >= static_cast<std::ptrdiff_t>(head[0] * sizeof(typename Pass::SendPost) +
                                                               head[1] * sizeof(typename Pass::RecvPost) +
                                                               head[2] * sizeof(typename Pass::Arrival)),
                       "a one-pass replay round's blob is cut short");
        typename Pass::Outbox got;
        at = take_records(at, head[0], got.sends);
        at = take_records(at, head[1], got.recvs);
        at = take_records(at, head[2], got.arrivals);
        for (const auto &p : got.sends) engine.apply(p);
        for (const auto &p : got.recvs) engine.apply(p);
        for (const auto &a : got.arrivals) engine.apply(a);
        state[0] = 1;
      }
    }
    state[1] = engine.unfinished();
    MPI_Allreduce(MPI_IN_PLACE, state, 2, MPI_INT64_T, MPI_SUM, ctx.comm());
    if (state[1] == 0) break;
    if (state[0] == 0) return std::nullopt;  // blocked for good somewhere: one by one
  }
  std::vector<int64_t> end = engine.latest_ends(scenarios.size());
  MPI_Allreduce(MPI_IN_PLACE, end.data(), static_cast<int>(end.size()), MPI_INT64_T, MPI_MAX, ctx.comm());
  if (first_timings) *first_timings = engine.take_first_timings();
  return end;
}
}  // namespace

std::optional<std::vector<int64_t>> replay_one_pass(const Context &ctx, const ReplayModel &model,
                                                    const std::vector<rp::Scenario> &scenarios,
                                                    const std::vector<rp::EventSink> &sinks,
                                                    std::vector<rp::TimingColumn> *first_timings) {
  PERFSIFT_CHECK(scenarios.size() >= 2, "one pass replays 2 scenarios or more");
  return rp::with_pass_width(
      scenarios.size(), [&]<int W>() { return replay_one_pass_of<W>(ctx, model, scenarios, sinks, first_timings); });
}

std::optional<rp::Snapshot> snapshot_of_replay(const Context &ctx, const ReplayModel &model, const rp::Scenario &sc,
                                               std::vector<rp::TimingColumn> timings) {
  auto starts = rp::replayed_send_starts(model.programs, timings, sc);
  // What crossed owners during the replay, routed as its rounds routed it.
  rp::Engine::Outbox in;
  if (const int np = ctx.nprocs(); np > 1) {
    std::vector<rp::Engine::Outbox> to(static_cast<size_t>(np));
    route_outbox(ctx, model, rp::delivered_elsewhere(model.programs, timings, starts, ctx.nranks(), sc), to);
    std::vector<std::vector<rp::Engine::SendPost>> sends(static_cast<size_t>(np));
    std::vector<std::vector<rp::Engine::RecvPost>> recvs(static_cast<size_t>(np));
    std::vector<std::vector<rp::Engine::Arrival>> arrivals(static_cast<size_t>(np));
    for (size_t k = 0; k < to.size(); ++k) {
      sends[k] = std::move(to[k].sends);
      recvs[k] = std::move(to[k].recvs);
      arrivals[k] = std::move(to[k].arrivals);
    }
    in.sends = ctx.alltoallv(sends);
    in.recvs = ctx.alltoallv(recvs);
    in.arrivals = ctx.alltoallv(arrivals);
  }
  auto snap = rp::snapshot_from_timings(model.programs, std::move(timings), std::move(starts), ctx.nranks(), in,
                                        posting_events_of(model));
  int rebuilt = snap.has_value() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &rebuilt, 1, MPI_INT, MPI_MIN, ctx.comm());
  if (!rebuilt) return std::nullopt;
  exchange_partner_exit_max(ctx, model, *snap);
  MPI_Allreduce(MPI_IN_PLACE, &snap->run_end, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  return snap;
}

int64_t crossing_calls(const Context &ctx, const ReplayModel &model) {
  const auto elsewhere = [&](int32_t rank) { return rank >= 0 && ctx.owner_of(rank) != ctx.me(); };
  int64_t most = 0;
  for (const auto &p : model.programs) {
    int64_t n = 0;
    for (const auto &m : p.sends) n += elsewhere(m.dst);
    for (const auto &m : p.recvs) n += elsewhere(m.src);
    for (const auto &c : p.colls) {
      const int32_t comm = rp::instance_comm(c.instance);
      n += comm < 0 || static_cast<size_t>(comm) >= model.comm_owners.size() ||
           model.comm_owners[static_cast<size_t>(comm)].size() > 1;
    }
    most = std::max(most, n);
  }
  MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  return ctx.nprocs() > 1 ? most : 0;
}

bool rounds_outweigh_replay(const Context &ctx, const ReplayModel &model) {
  constexpr int64_t kEventsPerRound = 100;
  return ctx.nprocs() > 1 && crossing_calls(ctx, model) * kEventsPerRound * ctx.nprocs() > model.events;
}

std::vector<std::vector<int64_t>> clean_cuts(const Context &ctx, const ReplayModel &model,
                                             const rp::Snapshot &snapshot) {
  rp::CutPlan plan(model.programs, snapshot, ctx.nranks());
  // Every rank held somewhere, each with the same number of candidates.
  std::array<int64_t, 3> agree = {plan.candidates() == rp::CutPlan::kNone ? INT64_MIN : plan.candidates(),
                                  plan.candidates() == rp::CutPlan::kNone ? INT64_MIN : -plan.candidates(),
                                  static_cast<int64_t>(model.programs.size())};
  MPI_Allreduce(MPI_IN_PLACE, agree.data(), 2, MPI_INT64_T, MPI_MAX, ctx.comm());
  MPI_Allreduce(MPI_IN_PLACE, &agree[2], 1, MPI_INT64_T, MPI_SUM, ctx.comm());
  const int64_t count = agree[0];
  if (count <= 0 || -agree[1] != count || agree[2] != ctx.nranks())
    return std::vector<std::vector<int64_t>>(model.programs.size());
  // The k-th candidate the same instance everywhere.
  std::vector<int64_t> low(static_cast<size_t>(count), INT64_MAX), high(static_cast<size_t>(count), INT64_MIN);
  if (plan.candidates() == count) low = high = plan.instances();
  MPI_Allreduce(MPI_IN_PLACE, low.data(), static_cast<int>(count), MPI_INT64_T, MPI_MIN, ctx.comm());
  MPI_Allreduce(MPI_IN_PLACE, high.data(), static_cast<int>(count), MPI_INT64_T, MPI_MAX, ctx.comm());
  // Messages crossing owners meet at the receiver's owner; instances at owner instance % np.
  std::vector<std::vector<rp::CutPlan::End>> ends(static_cast<size_t>(ctx.nprocs()));
  for (const auto &e : plan.remote_ends()) ends[static_cast<size_t>(ctx.owner_of(e.rank))].push_back(e);
  for (const auto &e : ctx.alltoallv(ends)) plan.add_remote(e);
  std::vector<std::vector<rp::CutPlan::Span>> spans(static_cast<size_t>(ctx.nprocs()));
  for (const auto &s : plan.spans())
    spans[static_cast<size_t>(static_cast<uint64_t>(s.instance) % static_cast<uint64_t>(ctx.nprocs()))].push_back(s);
  plan.merge_spans(ctx.alltoallv(spans));
  std::vector<uint8_t> crossed = plan.candidates() == count ? plan.crossed() : std::vector<uint8_t>(low.size(), 0);
  for (size_t k = 0; k < crossed.size(); ++k) crossed[k] |= low[k] != high[k];
  MPI_Allreduce(MPI_IN_PLACE, crossed.data(), static_cast<int>(crossed.size()), MPI_UINT8_T, MPI_MAX, ctx.comm());
  return plan.clean(crossed);
}

}  // namespace perfsift::pipeline
