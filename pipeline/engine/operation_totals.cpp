#include "pipeline/engine/operation_totals.h"

#include <omp.h>

#include <map>
#include <unordered_map>

#include "ops.h"

namespace perfsift::pipeline {

namespace {

// How store operations take part in point-to-point messages (the wrapper table's kinds).
enum OpRole : uint8_t { kNoMessage, kSends, kStarts };
std::vector<uint8_t> op_roles(const std::vector<std::string> &ops) {
  std::vector<uint8_t> out(ops.size(), kNoMessage);
  for (size_t i = 0; i < ops.size(); ++i)
    for (const auto &info : collect::kOps)
      if (ops[i] == info.name) {
        const std::string kind = info.kind;
        if (kind == "send" || kind == "isend" || kind == "sendrecv" || kind == "sendrecv_replace") out[i] = kSends;
        if (kind == "start" || kind == "startall") out[i] = kStarts;  // persistent: the requests say which send
      }
  return out;
}

// One thread's totals over part of a slice of events.
struct ThreadTally {
  std::vector<OpTotals> ops, sites;
  std::vector<int32_t> site_op;
  std::unordered_map<int32_t, Channel> messages;  // by receiver
};

std::vector<ThreadTally> tally_slice(const io::Event *b, const io::Event *e, const std::vector<uint8_t> &role,
                                     size_t nsites) {
  const size_t nops = role.size();
  const int64_t n = e - b;
  const int nthreads = n < 16384 ? 1 : omp_get_max_threads();
  std::vector<ThreadTally> tally(
      nthreads,
      ThreadTally{std::vector<OpTotals>(nops), std::vector<OpTotals>(nsites), std::vector<int32_t>(nsites, -1), {}});
#pragma omp parallel num_threads(nthreads)
  {
    auto &mine = tally[omp_get_thread_num()];
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const io::Event &x = b[i];
      if (x.op >= nops) continue;
      auto &o = mine.ops[x.op];
      ++o.calls;
      o.time_ns += x.t_exit - x.t_enter;
      o.bytes += x.bytes;
      if (x.site < nsites) {
        auto &site = mine.sites[x.site];
        ++site.calls;
        site.time_ns += x.t_exit - x.t_enter;
        site.bytes += x.bytes;
        mine.site_op[x.site] = x.op;
      }
      if (role[x.op] == kSends && x.peer >= 0 && !(x.flags & io::kProcNull)) {
        auto &c = mine.messages[x.peer];
        ++c.count;
        c.bytes += x.bytes - x.bytes_recv;
      }
    }
  }
  return tally;
}

// Integer sums: the merge order does not change the result.
void add_to(std::vector<OpTotals>::const_iterator from, size_t n, OpTotals *to) {
  for (size_t k = 0; k < n; ++k, ++from) {
    to[k].calls += from->calls;
    to[k].time_ns += from->time_ns;
    to[k].bytes += from->bytes;
  }
}

void merge_tallies(const std::vector<ThreadTally> &tally, OpTotals *row, OperationTotals &totals,
                   SentByReceiver &sent) {
  std::map<int32_t, Channel> merged(sent.begin(), sent.end());
  for (const auto &t : tally) {
    add_to(t.ops.begin(), t.ops.size(), row);
    add_to(t.sites.begin(), t.sites.size(), totals.site.data());
    for (size_t k = 0; k < t.site_op.size(); ++k)
      if (t.site_op[k] >= 0) totals.site_op[k] = t.site_op[k];
    for (const auto &[dst, c] : t.messages) {
      auto &m = merged[dst];
      m.count += c.count;
      m.bytes += c.bytes;
    }
  }
  sent.assign(merged.begin(), merged.end());
}

}  // namespace

OperationTally::OperationTally(const std::vector<std::string> &ops, size_t callsites, int32_t first, int32_t owned)
    : m_role(op_roles(ops)), m_first(first) {
  m_totals.site.assign(callsites, OpTotals{});
  m_totals.site_op.assign(callsites, -1);
  m_totals.rank_op.assign(static_cast<size_t>(owned) * m_role.size(), OpTotals{});
  m_totals.sent.assign(static_cast<size_t>(owned), {});
  m_totals.start_events.assign(static_cast<size_t>(owned), {});
}

void OperationTally::add(int32_t rank, int64_t index, const io::Event *b, const io::Event *e) {
  const size_t local = static_cast<size_t>(rank - m_first), nops = m_role.size();
  auto &starts = m_totals.start_events[local];
  for (const io::Event *x = b; x < e; ++x)
    if (x->op < nops && m_role[x->op] == kStarts) starts.push_back(index + (x - b));
  merge_tallies(tally_slice(b, e, m_role, m_totals.site.size()), &m_totals.rank_op[local * nops], m_totals,
                m_totals.sent[local]);
}

}  // namespace perfsift::pipeline
