// The replay model: the owned ranks' programs built from the store
// (pipeline/replay/replay_program.cpp), their messages matched across processes
// (pipeline/replay/message_matching.cpp) and the run-wide figures; its product builders;
// and a whole-run copy on every process.
#include "pipeline/replay/replay_model.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "pipeline/engine/stage_info.h"
#include "pipeline/replay/program_assembler.h"

namespace perfsift::pipeline {

namespace rp = kernels::replay;

namespace {

// Collective: the run-wide figures (message and call counts, the measured end).
void count_run_figures(const Context &ctx, ReplayModel &model, int64_t unmatched_sends, int64_t cancelled_receives,
                       int64_t local_end) {
  int64_t sends = 0, receives = 0, collectives = 0, local_events = 0, events = 0;
  for (const auto &p : model.programs) {
    sends += static_cast<int64_t>(p.sends.size());
    receives += static_cast<int64_t>(p.recvs.size());
    collectives += static_cast<int64_t>(p.colls.size());
    events += static_cast<int64_t>(p.events.size());
    for (const auto &e : p.events) local_events += e.items == 0;
  }
  // Receives whose source is unknown never entered `waiting`; count them as unmatched too,
  // except the cancelled ones (MPI_Cancel: no partner by design, counted apart).
  int64_t unmatched_receives = -cancelled_receives;
  for (const auto &p : model.programs)
    for (const auto &r : p.recvs) unmatched_receives += r.src < 0;
  std::vector<int64_t> sums = {sends,        receives, unmatched_sends,    unmatched_receives,  collectives,
                               local_events, events,   cancelled_receives, model.threaded_ranks};
  ctx.allreduce_sum(sums);
  model.sends = sums[0];
  model.receives = sums[1];
  model.unmatched_sends = sums[2];
  model.unmatched_receives = sums[3];
  model.collectives = sums[4];
  model.local_events = sums[5];
  model.events = sums[6];
  model.cancelled_receives = sums[7];
  model.threaded_ranks = sums[8];
  MPI_Allreduce(MPI_IN_PLACE, &model.max_threads, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  MPI_Allreduce(&local_end, &model.measured_ns, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
}

}  // namespace

ProductBuilder matched_run_builder() {
  return {product_name<MatchedRun>(),
          "each owned rank's events as a replay program, messages matched across analysis processes",
          {},
          [](Context &ctx, const std::vector<std::string_view> &wanted) {
            ctx.progress().begin("matching messages");
            std::optional<OperationTally> tally;
            if (std::find(wanted.begin(), wanted.end(), product_name<OperationTotals>()) != wanted.end())
              tally.emplace(ctx.store().ops(), ctx.store().callsites().size(), ctx.first(), ctx.owned());
            auto model = build_replay_model(ctx, kernels::LogGPS{}, tally ? &*tally : nullptr);
            ctx.progress().end();
            ctx.products().publish(MatchedRun{std::move(model)});
            if (tally) ctx.products().publish(tally->take());
          },
          {product_name<OperationTotals>()}};
}

ProductBuilder region_executions_builder() {
  return {product_name<RegionExecutions>(),
          "the matched run's region executions, released after their last user",
          {product_name<MatchedRun>()},
          [](Context &ctx, const std::vector<std::string_view> &) {
            ctx.products().publish(RegionExecutions{ctx.products().get<MatchedRun>().model});
          }};
}

std::shared_ptr<ReplayModel> build_replay_model(const Context &ctx, const kernels::LogGPS &params,
                                                OperationTally *tally) {
  auto model = std::make_shared<ReplayModel>();
  model->params = params;
  program_building::ReplayProgramAssembler built(ctx, *model);
  built.start();
  const auto add_slice = [&](int32_t rank, int64_t index, const io::Event *ev, const io::Event *end) {
    built.add_events(rank, index, ev, end);
    if (tally) tally->add(rank, index, ev, end);
  };
  // Blocks of ranks, each its records then its events.
  ctx.progress().begin("building the replay program");
  ctx.in_rank_blocks(ctx.store().event_offsets(), 2 * ctx.config().get_int("analysis.rows_per_read"),
                     [&](int32_t a, int32_t b, int64_t round, int64_t rounds) {
                       built.load_block(a, b);
                       ctx.scan_events(a, b, add_slice);
                       built.finish_block(a, b);
                       ctx.progress().update(static_cast<double>(round + 1) / static_cast<double>(rounds));
                     });
  built.release_records();
  ctx.progress().end();
  built.set_finalize_remainders();
  for (int64_t lanes : built.lanes_of_rank()) {
    model->threaded_ranks += lanes > 1;
    model->max_threads = std::max(model->max_threads, lanes);
  }
  const int64_t unmatched_sends = program_building::match_messages(ctx, built);
  count_run_figures(ctx, *model, unmatched_sends, built.cancelled_receives, built.local_end);
  return model;
}

namespace {
template <class T>
void put(std::vector<char> &b, const std::vector<T> &v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const int64_t n = static_cast<int64_t>(v.size());
  b.insert(b.end(), reinterpret_cast<const char *>(&n), reinterpret_cast<const char *>(&n) + sizeof n);
  if (n)
    b.insert(b.end(), reinterpret_cast<const char *>(v.data()), reinterpret_cast<const char *>(v.data() + v.size()));
}
template <class T>
void get(const char *&p, std::vector<T> &v) {
  int64_t n = 0;
  std::memcpy(&n, p, sizeof n);
  p += sizeof n;
  v.resize(static_cast<size_t>(n));
  if (n) std::memcpy(static_cast<void *>(v.data()), p, static_cast<size_t>(n) * sizeof(T));
  p += static_cast<size_t>(n) * sizeof(T);
}
}  // namespace

namespace {
// One rank's share of the model, field by field, for both packing and unpacking: `f`
// is called on each vector in the same order either way. The per-message timing links
// (exit, recv_event, *_done, coll_event) stay with the owner: only the owner's
// message table (pipeline/replay/matched_messages.h) reads them.
template <class Program, class Side, class Timings, class F>
void each_field(Program &p, Side &d, Timings &t, F &&f) {
  f(p.events);
  f(p.items);
  f(p.sends);
  f(p.recvs);
  f(p.colls);
  f(p.owns);
  f(p.lane);
  f(p.steps);
  rp::TimingColumn::each_part(t, f);
  kernels::replay::BlockDeltaColumn::each_part(d.enter, f);
  CallLabels::each_part(d.labels, f);
  f(d.send_event);
  ExecutionLog::each_part(d.executions, f);
}
}  // namespace

std::shared_ptr<ReplayModel> gather_whole(const Context &ctx, const ReplayModel &m,
                                          const std::vector<rp::TimingColumn> &timings,
                                          std::vector<rp::TimingColumn> *gathered_timings) {
  if (gathered_timings) gathered_timings->clear();
  std::vector<char> mine;
  const rp::TimingColumn none;
  for (size_t s = 0; s < m.programs.size(); ++s) {
    const auto &p = m.programs[s];
    put(mine, std::vector<int32_t>{p.rank, p.request_slots});
    each_field(p, m.side[s], s < timings.size() ? timings[s] : none, [&](const auto &v) { put(mine, v); });
  }
  const auto all = ctx.allgatherv(mine);
  auto w = std::make_shared<ReplayModel>();
  w->params = m.params;
  w->measured_ns = m.measured_ns;
  w->events = m.events;
  w->sends = m.sends;
  w->receives = m.receives;
  w->unmatched_sends = m.unmatched_sends;
  w->unmatched_receives = m.unmatched_receives;
  w->cancelled_receives = m.cancelled_receives;
  w->collectives = m.collectives;
  w->local_events = m.local_events;
  w->comm_owners = m.comm_owners;
  const char *p = all.data(), *end = all.data() + all.size();
  while (p < end) {
    rp::RankProgram q;
    ReplayModel::Side d;
    rp::TimingColumn t;
    std::vector<int32_t> head;
    get(p, head);
    q.rank = head[0];
    q.request_slots = head[1];
    each_field(q, d, t, [&](auto &v) { get(p, v); });
    w->programs.push_back(std::move(q));
    w->side.push_back(std::move(d));
    if (gathered_timings) gathered_timings->push_back(std::move(t));
  }
  return w;
}

}  // namespace perfsift::pipeline
