// Stage `waitstates`: Scalasca's wait-state patterns (kernels/wait_states.h) in seconds
// per call path and rank, from the matched trace: Late Sender (the latest sender's wait
// of the messages one Waitall completes; "wrong order" when a message posted for later
// was sent earlier), Late Receiver (beyond the same call's Late Sender: a Sendrecv or a
// mixed Waitall waits once), Wait at Barrier, Wait at NxN (Allreduce, Alltoall*,
// Allgather*, Reduce_scatter*), Late Broadcast (Bcast, Scatter*), Early Reduce (Reduce,
// Gather*). Clock-condition violations beyond the clocks' measured error bounds are
// counted and reported, since every wait compares two ranks' clocks.
//
// Cost: the message join of pipeline/replay/matched_messages.h (one all-to-all), one more
// all-to-all routing each collective instance's entries to one process, one routing
// Late Receiver candidates to their sender's owner, O(messages +
// collective entries) work; the (pattern, rank, call path) sums meet on every process.
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <tuple>

#include "kernels/rank_set.h"
#include "kernels/wait_states.h"
#include "pipeline/format/text.h"
#include "pipeline/replay/matched_messages.h"
#include "pipeline/whatif/fix_questions.h"
#include "pipeline/whatif/questions.h"
#include "pipeline/engine/op_traits.h"
#include "pipeline/replay/replay_model.h"
#include "pipeline/engine/stage_info.h"

namespace perfsift::pipeline {

namespace {

using namespace kernels::waitstates;
const char *const kPatternAdvice[kPatterns] = {
    "receivers wait for senders that start late: balance the work before the sends, or post receives later / use "
    "MPI_Irecv and overlap",
    "senders block until the receive is posted: post receives earlier, or send asynchronously (MPI_Isend) and overlap",
    "ranks wait in the barrier for the last one: balance the work before it, or drop the barrier if nothing needs it",
    "ranks wait in an n-to-n collective for the last one: balance the work before it",
    "destinations wait for a late root: give the root less work before the broadcast",
    "the root waits for late contributors: balance the others' work before the reduction, or let the root work "
    "meanwhile"};

// One (pattern, rank, call site, region) sum, plain data for the gathers.
struct WaitSum {
  int32_t pattern, rank;
  uint64_t site;
  int32_t region;
  int32_t pad = 0;
  int64_t ns = 0, instances = 0, wrong_order_ns = 0;
};

struct Key {  // in the order the sums are read
  int32_t pattern, rank;
  uint64_t site;
  int32_t region;
  bool operator==(const Key &) const = default;
  struct Hash {
    size_t operator()(const Key &k) const {
      uint64_t h = k.site * 0x9E3779B97F4A7C15ull;
      h ^= (uint64_t(uint32_t(k.pattern)) << 32 | uint32_t(k.rank)) + 0x7F4A7C15ull + (h << 6) + (h >> 2);
      h ^= uint64_t(uint32_t(k.region)) + 0x9E3779B9ull + (h << 6) + (h >> 2);
      return static_cast<size_t>(h);
    }
  };
};

// The sums, in (pattern, rank, site, region) order when read: a hash table while adding
// (one lookup per late message; an ordered map's comparisons were a third of the stage).
class Sums {
 public:
  void add(int32_t pattern, int32_t rank, uint64_t site, int32_t region, int64_t ns, int64_t wrong_order_ns = 0) {
    if (ns <= 0) return;
    WaitSum &w = m[{pattern, rank, site, region}];
    w.pattern = pattern, w.rank = rank, w.site = site, w.region = region;
    w.ns += ns;
    w.wrong_order_ns += wrong_order_ns;
    ++w.instances;
  }
  std::vector<WaitSum> rows() const {
    std::vector<WaitSum> v;
    v.reserve(m.size());
    for (const auto &kv : m) v.push_back(kv.second);
    std::sort(v.begin(), v.end(), [](const WaitSum &a, const WaitSum &b) {
      return std::tie(a.pattern, a.rank, a.site, a.region) < std::tie(b.pattern, b.rank, b.site, b.region);
    });
    return v;
  }

 private:
  std::unordered_map<Key, WaitSum, Key::Hash> m;
};

// One member's entry into a collective instance, routed to the instance's owner.
struct CollEntry {
  int64_t instance;
  int64_t enter, exit;
  uint64_t site;
  int32_t rank, root, region, pattern;
};

// Clock-condition violations beyond what the clocks' measured error bounds allow.
struct Violations {
  int64_t tolerance_ns = 0;
  int64_t p2p = 0, collective = 0, max_ns = 0;
};

// The pattern of a blocking collective operation, or -1 (not one Scalasca counts).
int32_t collective_pattern(const std::string &op, const OpTraits &t) {
  if (t.cls != OpClass::Collective) return -1;
  if (op == "MPI_Barrier") return kWaitAtBarrier;
  if (op == "MPI_Bcast" || op == "MPI_Scatter" || op == "MPI_Scatterv") return kLateBroadcast;
  if (op == "MPI_Reduce" || op == "MPI_Gather" || op == "MPI_Gatherv") return kEarlyReduce;
  if (op == "MPI_Allreduce" || op.rfind("MPI_Alltoall", 0) == 0 || op.rfind("MPI_Allgather", 0) == 0 ||
      op.rfind("MPI_Reduce_scatter", 0) == 0)
    return kWaitAtNxN;
  return -1;
}

void point_to_point(const Context &ctx, const MatchedMessageTable &msgs, Sums &sums, Violations &v) {
  // Waiting is counted once per blocking call (rank, event), as the largest wait of the
  // transfers it completes: a Waitall finishing several, or a Sendrecv, waited once.
  // Late Sender per receive call here, where the messages are (their receiver's owner);
  // msgs are ordered by (receiver, receive event), the posting order.
  struct Blocked {
    int32_t rank, event, region;
    uint32_t site;  // a call site, as the matched messages keep it
    int64_t ns, wrong_order;
  };
  static_assert(sizeof(Blocked) == 32);
  // Per call (rank, event), in that order, the first of its largest waits: sorted vectors,
  // 32 B per waiting transfer (and as much again while sorting), not a tree node per call.
  const auto by_key = [](const Blocked &a, const Blocked &b) {
    return std::tie(a.rank, a.event) < std::tie(b.rank, b.event);
  };
  const auto largest_per_call = [&](std::vector<Blocked> &v) {
    std::stable_sort(v.begin(), v.end(), by_key);
    size_t kept = 0;
    for (size_t i = 0; i < v.size();) {
      size_t j = i;
      Blocked best = v[i];
      for (; j < v.size() && !by_key(v[i], v[j]); ++j)
        if (v[j].ns > best.ns) best = v[j];
      v[kept++] = best;
      i = j;
    }
    v.resize(kept);
    v.shrink_to_fit();
  };
  std::vector<Blocked> by_call;  // late senders: the receive calls
  std::vector<std::vector<Blocked>> late_receivers(static_cast<size_t>(ctx.nprocs()));  // to the sender's owner
  // One receiver's messages at a time (the table assembles each on reading): whether a
  // send came out of order needs all its receiver's sends.
  std::vector<MatchedMessage> received;
  std::vector<int64_t> sent;
  const auto judge = [&] {
    sent.clear();
    for (const MatchedMessage &m : received) sent.push_back(m.timing.send_enter);
    const auto wrong = wrong_order(sent);
    for (size_t i = 0; i < received.size(); ++i) {
      const MatchedMessage &m = received[i];
      const auto &t = m.timing;
      if (const int64_t early = clock_violation(t); early > v.tolerance_ns) {
        ++v.p2p;
        v.max_ns = std::max(v.max_ns, early);
      }
      if (const int64_t wait = late_sender(t); wait > 0) {
        const bool in_wait = receiver_call(t).in_completion;
        const int32_t ev = in_wait ? m.recv_done : m.recv_event;
        by_call.push_back(
            {m.dst, ev, m.recv_region, in_wait ? m.recv_done_site : m.recv_site, wait, wrong[i] ? wait : 0});
      }
      if (const int64_t wait = late_receiver(t); wait > 0) {
        const bool in_wait = sender_call(t).in_completion;
        late_receivers[static_cast<size_t>(ctx.owner_of(m.src))].push_back(
            {m.src, in_wait ? m.send_done : m.send_event, m.send_region, in_wait ? m.send_done_site : m.send_site, wait,
             0});
      }
    }
    received.clear();
  };
  for (MatchedMessage m : msgs) {
    if (!received.empty() && m.dst != received.front().dst) judge();
    received.push_back(m);
  }
  judge();
  // Late Receiver per send call at the sender's owner, which also holds that rank's
  // receive calls: a call that waited for a late sender too (a Sendrecv, a Waitall over
  // Irecvs and Isends) counts only its wait beyond the Late Sender part, so the call's
  // waiting is max(late sender, late receiver), split without counting twice.
  largest_per_call(by_call);
  std::vector<Blocked> by_send_call = ctx.alltoallv(late_receivers);
  late_receivers = {};
  largest_per_call(by_send_call);
  for (const Blocked &b : by_send_call) {
    const auto ls = std::lower_bound(by_call.begin(), by_call.end(), b, by_key);
    const bool both = ls != by_call.end() && ls->rank == b.rank && ls->event == b.event;
    sums.add(kLateReceiver, b.rank, b.site, b.region, b.ns - (both ? ls->ns : 0));
  }
  for (const Blocked &b : by_call) sums.add(kLateSender, b.rank, b.site, b.region, b.ns, b.wrong_order);
}

void collectives(const Context &ctx, const ReplayModel &model, Sums &sums, Violations &v) {
  const auto &ops = ctx.store().ops();
  const auto traits = classify_ops(ops);
  std::vector<int32_t> pattern_of(ops.size());
  for (size_t o = 0; o < ops.size(); ++o) pattern_of[o] = collective_pattern(ops[o], traits[o]);
  std::vector<std::vector<CollEntry>> route(static_cast<size_t>(ctx.nprocs()));
  for (size_t s = 0; s < model.programs.size(); ++s) {
    const auto &p = model.programs[s];
    const auto &side = model.side[s];
    for (size_t k = 0; k < p.colls.size(); ++k) {
      const auto ev = static_cast<size_t>(side.coll_event[k]);
      const int32_t pattern = pattern_of[side.labels.op(ev)];
      if (pattern < 0) continue;
      const int64_t inst = p.colls[k].instance;
      const auto owner =
          static_cast<size_t>(static_cast<uint64_t>(inst * 0x9E3779B97F4A7C15LL) % static_cast<uint64_t>(ctx.nprocs()));
      route[owner].push_back({inst, side.enter[ev], model.measured_exit(s, ev), side.labels.site(ev), p.rank,
                              p.colls[k].root, side.labels.region(ev), pattern});
    }
  }
  auto entries = ctx.alltoallv(route);
  std::sort(entries.begin(), entries.end(), [](const CollEntry &a, const CollEntry &b) {
    return a.instance != b.instance ? a.instance < b.instance : a.rank < b.rank;
  });
  for (size_t i = 0; i < entries.size();) {
    size_t k = i;
    while (k < entries.size() && entries[k].instance == entries[i].instance) ++k;
    std::vector<Member> members;
    int32_t root = -1;
    for (size_t x = i; x < k; ++x) {
      if (entries[x].rank == entries[x].root) root = static_cast<int32_t>(x - i);
      members.push_back({entries[x].enter, entries[x].exit});
    }
    const auto w = collective_waits(entries[i].pattern, members, root);
    if (w.max_violation > v.tolerance_ns) {
      v.collective += w.violations;
      v.max_ns = std::max(v.max_ns, w.max_violation);
    }
    for (size_t x = i; x < k; ++x)
      sums.add(entries[x].pattern, entries[x].rank, entries[x].site, entries[x].region, w.wait[x - i]);
    i = k;
  }
}

// Every process gets every sum, in one deterministic order: (pattern, site, region, rank).
std::vector<WaitSum> gather_sums(Context &ctx, const Sums &sums) {
  auto all = ctx.allgatherv(sums.rows());
  std::sort(all.begin(), all.end(), [](const WaitSum &a, const WaitSum &b) {
    return std::tie(a.pattern, a.site, a.region, a.rank) < std::tie(b.pattern, b.site, b.region, b.rank);
  });
  // A sender's Late Receiver sums come from every process owning one of its receivers: one row each.
  size_t kept = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (kept > 0 && std::tie(all[kept - 1].pattern, all[kept - 1].site, all[kept - 1].region, all[kept - 1].rank) ==
                        std::tie(all[i].pattern, all[i].site, all[i].region, all[i].rank)) {
      all[kept - 1].ns += all[i].ns;
      all[kept - 1].instances += all[i].instances;
      all[kept - 1].wrong_order_ns += all[i].wrong_order_ns;
    } else {
      all[kept++] = all[i];
    }
  }
  all.resize(kept);
  return all;
}

// What the stage found: the waiting sums of the whole run and the clock violations.
struct WaitStatesResult {
  std::vector<WaitSum> sums;  // every (pattern, rank, call site, region), sorted as gather_sums
  int64_t p2p_violations = 0, collective_violations = 0, max_violation_ns = 0;
  int64_t tolerance_ns = 0;
};

WaitStatesResult compute_waitstates(Context &ctx) {
  const ReplayModel &model = *ctx.products().get<MatchedRun>().model;
  const MatchedMessageTable &msgs = ctx.products().get<MatchedMessages>().items;
  Sums sums;
  Violations v;
  // Two ranks' corrected clocks may disagree by up to the sum of their offsets' error bounds.
  for (const auto &c : ctx.store().clocks())
    v.tolerance_ns = std::max({v.tolerance_ns, 2 * c.error_init_ns, 2 * c.error_fin_ns});
  point_to_point(ctx, msgs, sums, v);
  collectives(ctx, model, sums, v);
  WaitStatesResult r;
  r.sums = gather_sums(ctx, sums);
  std::vector<int64_t> vio = {v.p2p, v.collective};
  ctx.allreduce_sum(vio);
  r.p2p_violations = vio[0];
  r.collective_violations = vio[1];
  r.max_violation_ns = v.max_ns;
  MPI_Allreduce(MPI_IN_PLACE, &r.max_violation_ns, 1, MPI_INT64_T, MPI_MAX, ctx.comm());
  r.tolerance_ns = v.tolerance_ns;
  return r;
}

// "region path > call site" of a wait.
std::string callpath(const Context &ctx, int32_t region, uint64_t site) {
  const auto &regions = ctx.store().regions();
  const bool known = region >= 0 && static_cast<size_t>(region) < regions.size();
  const std::string path = known ? regions[static_cast<size_t>(region)].path : std::string("?");
  return path + " > " + site_label(ctx.store().callsites(), site);
}

void write_waitstates(const Context &ctx, const WaitStatesResult &r, StageOutput &out) {
  io::Table t;
  t.description = "waiting time per pattern, call path and rank (Scalasca's wait states)";
  auto &pat =
      t.strings("pattern", "late_sender, late_receiver, wait_at_barrier, wait_at_nxn, late_broadcast or early_reduce");
  auto &rank = t.ints("rank", "", "the rank that waited");
  auto &site = t.ints("site", "", "call-site id of the call it waited in (/callsites of the trace store)");
  auto &path = t.strings("callpath", "region path and call site");
  auto &wait = t.floats("wait_s", "s", "waiting time");
  auto &wrong = t.floats("wrong_order_s", "s", "late_sender: the part where a message sent earlier was received later");
  auto &count = t.ints("instances", "", "calls that waited");
  std::vector<double> totals(kPatterns, 0.0);
  for (const WaitSum &w : r.sums) {
    pat.push_back(pattern_key(w.pattern));
    rank.push_back(w.rank);
    site.push_back(static_cast<int64_t>(w.site));
    path.push_back(callpath(ctx, w.region, w.site));
    wait.push_back(static_cast<double>(w.ns) * 1e-9);
    wrong.push_back(static_cast<double>(w.wrong_order_ns) * 1e-9);
    count.push_back(w.instances);
    totals[static_cast<size_t>(w.pattern)] += static_cast<double>(w.ns) * 1e-9;
  }
  out.table("waits", t);
  for (int p = 0; p < kPatterns; ++p) out.attribute(std::string(pattern_key(p)) + "_s", totals[static_cast<size_t>(p)]);
  out.attribute("clock_violations_p2p", r.p2p_violations);
  out.attribute("clock_violations_collective", r.collective_violations);
  out.attribute("clock_violation_max_s", static_cast<double>(r.max_violation_ns) * 1e-9);
  out.attribute("clock_tolerance_s", static_cast<double>(r.tolerance_ns) * 1e-9);
}

// A warning for clock-condition violations; a finding per pattern and call path when
// the waiting matters for the run.
void waitstates_findings(Context &ctx, const config::Values &cfg, const WaitStatesResult &r) {
  if (r.p2p_violations + r.collective_violations > 0)
    ctx.warnings.push_back("waitstates: " + std::to_string(r.p2p_violations) +
                           " messages received before they were sent and " + std::to_string(r.collective_violations) +
                           " collective exits before the last entry (up to " +
                           format_seconds(static_cast<double>(r.max_violation_ns) * 1e-9) +
                           "): the ranks' clocks disagree, so waiting times near that size are uncertain");
  const auto &all = r.sums;
  const auto &sites = ctx.store().callsites();
  const double wall = ctx.program_time_s(), min_share = cfg.get_float("waitstates.min_share");
  for (size_t i = 0; i < all.size();) {
    size_t k = i;
    while (k < all.size() && all[k].pattern == all[i].pattern && all[k].site == all[i].site &&
           all[k].region == all[i].region)
      ++k;
    double total = 0, worst = 0, wrong_order = 0;
    std::vector<int32_t> waiting;
    for (size_t x = i; x < k; ++x) {
      total += static_cast<double>(all[x].ns) * 1e-9;
      wrong_order += static_cast<double>(all[x].wrong_order_ns) * 1e-9;
      worst = std::max(worst, static_cast<double>(all[x].ns) * 1e-9);
      waiting.push_back(all[x].rank);
    }
    const WaitSum &w = all[i];
    i = k;
    if (wall <= 0 || worst < min_share * wall) continue;
    Finding f;
    f.kind = wait_state_kind(w.pattern);
    f.place = Place::call_site(sites, w.site, callpath(ctx, w.region, w.site));
    const bool region_known = w.region >= 0 && static_cast<size_t>(w.region) < ctx.store().regions().size();
    if (region_known) {
      f.place.region_id = w.region;
      f.place.region_path = ctx.store().regions()[static_cast<size_t>(w.region)].path;
    }
    f.culprits.ranks = kernels::to_ranges(waiting);
    f.lost_s = worst;
    // The fix: no waiting at this call site, or in this region where the call site is unknown
    if (w.site < sites.size())
      f.fix = callsite_fix(Fix::Action::ZeroWait, sites, static_cast<int64_t>(w.site));
    else if (region_known)
      f.fix = region_fix(Fix::Action::ZeroWait, w.region, f.place.region_path);
    f.cause = format_seconds(total) + " of " + std::string(pattern_key(w.pattern)) + " waiting on " +
              std::to_string(waiting.size()) + (waiting.size() == 1 ? " rank" : " ranks") + " (up to " +
              format_seconds(worst) + " on one)" +
              (wrong_order > 0 ? ", " + format_seconds(wrong_order) + " of it for messages received in the wrong order"
                               : std::string()) +
              ": " + kPatternAdvice[w.pattern];
    ctx.findings.push_back(f);
  }
}

void run_waitstates(Context &ctx, const config::Values &cfg, StageOutput &out) {
  const WaitStatesResult r = compute_waitstates(ctx);
  write_waitstates(ctx, r, out);
  waitstates_findings(ctx, cfg, r);
}

}  // namespace

StageInfo waitstates_stage() {
  StageInfo s{"waitstates",
              "Scalasca's wait states from the matched trace: Late Sender (and wrong order), Late Receiver, Wait at "
              "Barrier, Wait at NxN, Late Broadcast, Early Reduce, per call path and rank, with clock-condition checks",
              {{"min_share", config::Type::Float, 0.01, "",
                "a pattern at a call path becomes a finding when one rank waits this share of the run", 0, 1}},
              run_waitstates};
  s.requires_products = {product_name<MatchedRun>(), product_name<MatchedMessages>()};
  return s;
}

}  // namespace perfsift::pipeline
