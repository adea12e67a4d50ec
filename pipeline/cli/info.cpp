// perfsift info: what a trace store holds, in a few lines (or JSON for scripts).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "io/trace_store.h"
#include "kernels/message_balance.h"
#include "pipeline/engine/op_traits.h"
#include "pipeline/cli/commands.h"
#include "pipeline/format/json_writer.h"
#include "pipeline/format/text.h"

namespace perfsift::cli {

namespace {

// Names as the JSON report writes them: valid UTF-8 whatever their bytes (docs/results.md).
std::string json_escape(const std::string &s) { return pipeline::JsonWriter::escape(s); }

std::string json_list(const std::vector<std::string> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + json_escape(v[i]) + "\"";
  return s + "]";
}

std::string json_ints(const std::vector<int32_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The name of an operation code; a code outside the store's /ops table reads "?".
const std::string &op_name(const std::vector<std::string> &ops, size_t code) {
  static const std::string unknown = "?";
  return code < ops.size() ? ops[code] : unknown;
}

// Events and their time per operation code, and the point-to-point messages, as counted.
struct Counts {
  explicit Counts(size_t nops) : count_of_code(nops + 1, 0), time_of_code(nops + 1, 0.0) {}
  std::vector<int64_t> count_of_code;  // the last code: outside the /ops table
  std::vector<double> time_of_code;    // seconds summed over ranks
  std::vector<kernels::Channel> sends, recvs;
  int64_t t_end = 0;
};

// The rows of a block of ranks, read together, and every rank's offsets into its tables.
struct Block {
  const std::vector<int64_t> &eo, &qo, &co;  // events, requests, completions
  int32_t first;
  std::vector<io::Event> ev;
  std::vector<io::RequestRecord> rq;
  std::vector<io::CompletionRecord> cp;

  // Rank r's event number `local`.
  const io::Event &event(int32_t r, int64_t local) const { return ev[static_cast<size_t>(eo[r] - eo[first] + local)]; }
};

// Rank r's events: counts and time per operation, blocking sends and receives.
void count_events(Counts &c, const Block &b, int32_t r, const std::vector<pipeline::OpTraits> &traits) {
  const size_t nops = c.count_of_code.size() - 1;
  for (int64_t k = b.eo[r]; k < b.eo[r + 1]; ++k) {
    const auto &x = b.ev[static_cast<size_t>(k - b.eo[b.first])];
    const size_t code = std::min<size_t>(x.op, nops);
    ++c.count_of_code[code];
    c.time_of_code[code] += (x.t_exit - x.t_enter) * 1e-9;
    c.t_end = std::max(c.t_end, x.t_exit);
    if (x.peer < 0 || (x.flags & io::kProcNull)) continue;
    const pipeline::OpTraits t = x.op < traits.size() ? traits[x.op] : pipeline::OpTraits{};
    if (t.sends()) c.sends.push_back({x.comm, r, x.peer, x.tag});
    if (t.cls == pipeline::OpClass::Recv) c.recvs.push_back({x.comm, x.peer, r, x.tag});
  }
}

// Rank r's nonblocking sends (requests) and the receives its completions finished.
void count_requests(Counts &c, const Block &b, int32_t r, const std::vector<pipeline::OpTraits> &traits) {
  std::map<int64_t, io::RequestRecord> req_of;  // id -> latest activation
  for (int64_t k = b.qo[r]; k < b.qo[r + 1]; ++k) {
    const auto &q = b.rq[static_cast<size_t>(k - b.qo[b.first])];
    req_of[q.id] = q;
    const io::Event &x = b.event(r, q.event);
    // Persistent *_init rows are templates; their MPI_Start rows are the messages.
    const bool templ = x.op < traits.size() && traits[x.op].templ;
    if (q.kind == io::kReqSend && !templ && q.peer >= 0) c.sends.push_back({q.comm, r, q.peer, q.tag});
  }
  for (int64_t k = b.co[r]; k < b.co[r + 1]; ++k) {
    const auto &cp = b.cp[static_cast<size_t>(k - b.co[b.first])];
    if (cp.source < 0 || cp.cancelled) continue;
    if (cp.request < 0)
      c.recvs.push_back({b.event(r, cp.event).comm, cp.source, r, cp.tag});  // Sendrecv's receive half
    else if (auto it = req_of.find(cp.request); it != req_of.end() && it->second.kind == io::kReqRecv)
      c.recvs.push_back({it->second.comm, cp.source, r, cp.tag});
  }
}

// What info reports of the whole store.
struct Summary {
  std::map<std::string, int64_t> per_op;
  std::map<std::string, double> time_per_op;  // seconds summed over ranks
  kernels::MessageBalance bal;
  int64_t nevents = 0;
  double duration = 0;  // s
  io::AbortRecord abort;
};

Summary summarise(const io::TraceStore &store) {
  const auto &ops = store.ops();
  const int32_t n = store.nranks();
  // Counted by operation code on the hot loop; by name for the output.
  Counts c(ops.size());
  const auto traits = pipeline::classify_ops(ops);
  const int32_t block = 64;  // ranks per read: bounded memory on large stores
  const auto eo = store.event_offsets();
  const auto qo = store.offsets("requests");
  const auto co = store.offsets("completions");
  for (int32_t first = 0; first < n; first += block) {
    const int32_t last = std::min(n, first + block);
    const Block b{
        eo, qo, co, first, store.events(first, last), store.requests(first, last), store.completions(first, last)};
    for (int32_t r = first; r < last; ++r) {
      count_events(c, b, r, traits);
      count_requests(c, b, r, traits);
    }
  }
  Summary s;
  for (size_t code = 0; code < c.count_of_code.size(); ++code)
    if (c.count_of_code[code]) {
      const std::string &name = op_name(ops, code);
      s.per_op[name] += c.count_of_code[code];
      s.time_per_op[name] += c.time_of_code[code];
    }
  s.bal = kernels::balance_messages(std::move(c.sends), std::move(c.recvs));
  s.nevents = store.event_offsets().back();
  s.duration = c.t_end * 1e-9;
  s.abort = io::find_abort(ops, store.rank_ends(0, n), 0);
  return s;
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream os;
  os << v;
  return os.str();
}

// What the collector cost (rank 0's start-up measurement), or null: an imported or
// synthetic store, or one collected before it was recorded.
std::string json_timer(const io::RunInfo &run) {
  if (run.timer.empty()) return "null";
  return "{\"name\": \"" + json_escape(run.timer) + "\", \"read_ns\": " + json_number(run.timer_read_ns) +
         ", \"collector_call_ns\": " + json_number(run.collector_call_ns) + "}";
}

void print_timer(const io::RunInfo &run) {
  if (run.timer.empty()) return;
  char line[256];
  std::snprintf(line, sizeof line, "  timer        %s, %.0f ns a read", run.timer.c_str(), run.timer_read_ns);
  std::string text = line;
  if (std::isfinite(run.collector_call_ns)) {
    std::snprintf(line, sizeof line, "; the collector added ~%.0f ns a call (rank 0, measured at start-up)",
                  run.collector_call_ns);
    text += line;
  }
  std::printf("%s\n", text.c_str());
}

void print_json(const io::TraceStore &store, const Summary &s) {
  const auto &run = store.run();
  std::ostringstream os;
  os << "{\"format\": \"perfsift-trace\", \"version\": " << store.version() << ", \"ranks\": " << store.nranks()
     << ", \"duration_s\": " << s.duration << ", \"events\": " << s.nevents
     << ", \"events_storage_bytes\": " << store.events_storage_bytes() << ", \"command\": \""
     << json_escape(run.command) << "\", \"start_time\": \"" << run.start_time << "\", \"events_per_op\": {";
  bool first = true;
  for (const auto &[op, c] : s.per_op) os << (first ? "" : ", ") << '"' << op << "\": " << c, first = false;
  os << "}, \"time_per_op_s\": {";
  first = true;
  for (const auto &[op, t] : s.time_per_op) os << (first ? "" : ", ") << '"' << op << "\": " << t, first = false;
  os << "}, \"regions\": [";
  for (size_t i = 0; i < store.regions().size(); ++i)
    os << (i ? ", \"" : "\"") << json_escape(store.regions()[i].path) << '"';
  os << "], \"metrics\": " << json_list(store.metrics())
     << ", \"counters_recorded\": " << json_list(run.counters_recorded)
     << ", \"counters_unavailable\": " << json_list(run.counters_unavailable)
     << ", \"p2p\": {\"sends\": " << s.bal.sends << ", \"receives\": " << s.bal.receives
     << ", \"unmatched_sends\": " << s.bal.unmatched_sends << ", \"unmatched_receives\": " << s.bal.unmatched_receives
     << "}, \"incomplete\": " << (run.incomplete ? "true" : "false")
     << ", \"missing_ranks\": " << json_ints(run.missing_ranks)
     << ", \"truncated_ranks\": " << json_ints(run.truncated_ranks) << ", \"timer\": " << json_timer(run)
     << ", \"aborted\": ";
  if (s.abort.rank < 0)
    os << "null";
  else
    os << "{\"rank\": " << s.abort.rank << ", \"error_code\": " << s.abort.error_code << ", \"place\": \""
       << json_escape(pipeline::site_label(store.callsites(), s.abort.callsite))
       << "\", \"time_s\": " << s.abort.t_ns * 1e-9 << ", \"ranks_calling\": " << s.abort.ranks << "}";
  os << "}\n";
  std::fputs(os.str().c_str(), stdout);
}

// Each region, indented by depth: mean over the ranks that have it of wall and MPI time.
void print_regions(const io::TraceStore &store) {
  const auto &metrics = store.metrics();
  if (std::find(metrics.begin(), metrics.end(), "wall") == metrics.end() ||
      std::find(metrics.begin(), metrics.end(), "mpi_time") == metrics.end()) {
    std::printf("  regions      none: no rank's profile was saved (its events are above)\n");
    return;
  }
  const int32_t n = store.nranks();
  auto wall = store.profile("wall");
  auto mpi = store.profile("mpi_time");
  const size_t nr = store.regions().size();
  std::printf("  regions (mean over ranks: wall s, MPI s):\n");
  for (size_t g = 0; g < nr; ++g) {
    double w = 0, m = 0;
    int cnt = 0;
    for (int32_t r = 0; r < n; ++r)
      if (!std::isnan(wall[r * nr + g])) w += wall[r * nr + g], m += mpi[r * nr + g], ++cnt;
    const auto &reg = store.regions()[g];
    int depth = 0;  // by parent ids: names may hold '/'
    for (int32_t p = reg.parent; p >= 0 && depth < 64; p = store.regions()[static_cast<size_t>(p)].parent) ++depth;
    std::printf("    %*s%-*s %10.4f %10.4f\n", 2 * depth, "", 30 - 2 * depth, reg.name.c_str(), cnt ? w / cnt : 0.0,
                cnt ? m / cnt : 0.0);
  }
}

void print_text(const io::TraceStore &store, const Summary &s) {
  const auto &run = store.run();
  std::printf("%s: perfsift trace store v%d\n", store.path().c_str(), store.version());
  if (s.abort.rank >= 0) std::printf("  ABORTED      %s\n", abort_phrase(s.abort, store.callsites()).c_str());
  std::printf("  command      %s\n", run.command.c_str());
  std::printf("  started      %s, %d ranks, %.3f s, %lld MPI events\n", run.start_time.c_str(), store.nranks(),
              s.duration, static_cast<long long>(s.nevents));
  std::printf("  completeness %s", run.incomplete ? "INCOMPLETE" : "complete");
  if (!run.missing_ranks.empty()) std::printf(", missing ranks %s", json_ints(run.missing_ranks).c_str());
  if (!run.truncated_ranks.empty())
    std::printf(", ranks ended without MPI_Finalize %s", json_ints(run.truncated_ranks).c_str());
  std::printf("\n  counters     recorded %s; unavailable %s\n", json_list(run.counters_recorded).c_str(),
              json_list(run.counters_unavailable).c_str());
  print_timer(run);
  std::printf("  p2p          %lld sends, %lld receives, %lld unmatched sends, %lld unmatched receives\n",
              static_cast<long long>(s.bal.sends), static_cast<long long>(s.bal.receives),
              static_cast<long long>(s.bal.unmatched_sends), static_cast<long long>(s.bal.unmatched_receives));
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto &[op, c] : s.per_op) by_count.push_back({c, op});
  std::sort(by_count.rbegin(), by_count.rend());
  std::printf("  events per operation (count, seconds summed over ranks):\n");
  for (const auto &[c, op] : by_count)
    std::printf("    %-24s %10lld %12.6f\n", op.c_str(), static_cast<long long>(c), s.time_per_op.at(op));
  print_regions(store);
}

}  // namespace

std::string abort_phrase(const io::AbortRecord &abort, const std::vector<io::CallSite> &sites) {
  char when[64];
  std::snprintf(when, sizeof when, ", %.3f s into the run", abort.t_ns * 1e-9);
  const std::string place = abort.callsite < sites.size() ? " at " + pipeline::site_label(sites, abort.callsite)
                                                          : " (its call site was not saved)";
  std::string s = "rank " + std::to_string(abort.rank) + " called MPI_Abort with error code " +
                  std::to_string(abort.error_code) + place + when;
  if (abort.ranks > 1) s += " (" + std::to_string(abort.ranks) + " ranks called it)";
  return s;
}

int run_info(const InfoOptions &o) {
  if (!o.resolve_dir.empty()) return print_resolved_sites(o);
  io::TraceStore store(o.store);
  const Summary s = summarise(store);
  if (o.json)
    print_json(store, s);
  else
    print_text(store, s);
  return 0;
}

}  // namespace perfsift::cli
