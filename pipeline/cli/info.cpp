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

namespace perfsift::cli {

namespace {

std::string json_escape(const std::string &s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (c == '\n') o += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o;
}

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

}  // namespace

int run_info(const InfoOptions &o) {
  io::TraceStore store(o.store);
  const auto &run = store.run();
  const auto &ops = store.ops();
  const int32_t n = store.nranks();
  // Counted by operation code on the hot loop; by name for the output.
  std::vector<int64_t> count_of_code(ops.size() + 1, 0);
  std::vector<double> time_of_code(ops.size() + 1, 0.0);  // seconds summed over ranks
  std::vector<kernels::Channel> sends, recvs;
  const auto traits = pipeline::classify_ops(ops);
  int64_t t_end = 0;
  const int32_t block = 64;  // ranks per read: bounded memory on large stores
  const auto eo = store.event_offsets();
  const auto qo = store.offsets("requests");
  const auto co = store.offsets("completions");
  for (int32_t first = 0; first < n; first += block) {
    const int32_t last = std::min(n, first + block);
    const auto ev = store.events(first, last);
    const auto rq = store.requests(first, last);
    const auto cp = store.completions(first, last);
    for (int32_t r = first; r < last; ++r) {
      auto event_at = [&](int64_t local) -> const io::Event & { return ev[static_cast<size_t>(eo[r] - eo[first] + local)]; };
      for (int64_t k = eo[r]; k < eo[r + 1]; ++k) {
        const auto &x = ev[static_cast<size_t>(k - eo[first])];
        const size_t code = std::min<size_t>(x.op, ops.size());
        ++count_of_code[code];
        time_of_code[code] += (x.t_exit - x.t_enter) * 1e-9;
        t_end = std::max(t_end, x.t_exit);
        if (x.peer < 0 || (x.flags & io::kProcNull)) continue;
        const pipeline::OpTraits t = x.op < traits.size() ? traits[x.op] : pipeline::OpTraits{};
        if (t.sends()) sends.push_back({x.comm, r, x.peer, x.tag});
        if (t.cls == pipeline::OpClass::Recv) recvs.push_back({x.comm, x.peer, r, x.tag});
      }
      std::map<int64_t, io::RequestRecord> req_of;  // id -> latest activation
      for (int64_t k = qo[r]; k < qo[r + 1]; ++k) {
        const auto &q = rq[static_cast<size_t>(k - qo[first])];
        req_of[q.id] = q;
        const io::Event &x = event_at(q.event);
        // Persistent *_init rows are templates; their MPI_Start rows are the messages.
        const bool templ = x.op < traits.size() && traits[x.op].templ;
        if (q.kind == io::kReqSend && !templ && q.peer >= 0) sends.push_back({q.comm, r, q.peer, q.tag});
      }
      for (int64_t k = co[r]; k < co[r + 1]; ++k) {
        const auto &c = cp[static_cast<size_t>(k - co[first])];
        if (c.source < 0 || c.cancelled) continue;
        if (c.request < 0) recvs.push_back({event_at(c.event).comm, c.source, r, c.tag});  // Sendrecv's receive half
        else if (auto it = req_of.find(c.request); it != req_of.end() && it->second.kind == io::kReqRecv)
          recvs.push_back({it->second.comm, c.source, r, c.tag});
      }
    }
  }
  std::map<std::string, int64_t> per_op;
  std::map<std::string, double> time_per_op;
  for (size_t code = 0; code < count_of_code.size(); ++code)
    if (count_of_code[code]) {
      const std::string &name = op_name(ops, code);
      per_op[name] += count_of_code[code];
      time_per_op[name] += time_of_code[code];
    }
  const auto bal = kernels::balance_messages(std::move(sends), std::move(recvs));
  const int64_t nevents = store.event_offsets().back();
  const double duration = t_end * 1e-9;

  if (o.json) {
    std::ostringstream os;
    os << "{\"format\": \"perfsift-trace\", \"version\": " << store.version() << ", \"ranks\": " << n
       << ", \"duration_s\": " << duration << ", \"events\": " << nevents << ", \"events_storage_bytes\": " << store.events_storage_bytes()
       << ", \"command\": \"" << json_escape(run.command)
       << "\", \"start_time\": \"" << run.start_time << "\", \"events_per_op\": {";
    bool first = true;
    for (const auto &[op, c] : per_op) os << (first ? "" : ", ") << '"' << op << "\": " << c, first = false;
    os << "}, \"time_per_op_s\": {";
    first = true;
    for (const auto &[op, t] : time_per_op) os << (first ? "" : ", ") << '"' << op << "\": " << t, first = false;
    os << "}, \"regions\": [";
    for (size_t i = 0; i < store.regions().size(); ++i) os << (i ? ", \"" : "\"") << json_escape(store.regions()[i].path) << '"';
    os << "], \"metrics\": " << json_list(store.metrics()) << ", \"counters_recorded\": " << json_list(run.counters_recorded)
       << ", \"counters_unavailable\": " << json_list(run.counters_unavailable) << ", \"p2p\": {\"sends\": " << bal.sends
       << ", \"receives\": " << bal.receives << ", \"unmatched_sends\": " << bal.unmatched_sends
       << ", \"unmatched_receives\": " << bal.unmatched_receives << "}, \"incomplete\": " << (run.incomplete ? "true" : "false")
       << ", \"missing_ranks\": " << json_ints(run.missing_ranks) << ", \"truncated_ranks\": " << json_ints(run.truncated_ranks)
       << "}\n";
    std::fputs(os.str().c_str(), stdout);
    return 0;
  }
  std::printf("%s: perfsift trace store v%d\n", store.path().c_str(), store.version());
  std::printf("  command      %s\n", run.command.c_str());
  std::printf("  started      %s, %d ranks, %.3f s, %lld MPI events\n", run.start_time.c_str(), n, duration,
              static_cast<long long>(nevents));
  std::printf("  completeness %s", run.incomplete ? "INCOMPLETE" : "complete");
  if (!run.missing_ranks.empty()) std::printf(", missing ranks %s", json_ints(run.missing_ranks).c_str());
  if (!run.truncated_ranks.empty()) std::printf(", ranks ended without MPI_Finalize %s", json_ints(run.truncated_ranks).c_str());
  std::printf("\n  counters     recorded %s; unavailable %s\n", json_list(run.counters_recorded).c_str(),
              json_list(run.counters_unavailable).c_str());
  std::printf("  p2p          %lld sends, %lld receives, %lld unmatched sends, %lld unmatched receives\n",
              static_cast<long long>(bal.sends), static_cast<long long>(bal.receives),
              static_cast<long long>(bal.unmatched_sends), static_cast<long long>(bal.unmatched_receives));
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto &[op, c] : per_op) by_count.push_back({c, op});
  std::sort(by_count.rbegin(), by_count.rend());
  std::printf("  events per operation (count, seconds summed over ranks):\n");
  for (const auto &[c, op] : by_count)
    std::printf("    %-24s %10lld %12.6f\n", op.c_str(), static_cast<long long>(c), time_per_op[op]);
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
    int depth = static_cast<int>(std::count(reg.path.begin(), reg.path.end(), '/')) + (g ? 1 : 0);
    std::printf("    %*s%-*s %10.4f %10.4f\n", 2 * depth, "", 30 - 2 * depth, reg.name.c_str(), cnt ? w / cnt : 0.0, cnt ? m / cnt : 0.0);
  }
  return 0;
}

}  // namespace perfsift::cli
