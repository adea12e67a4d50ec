// The collector's store writers under real mpirun: for several bounds, every rank's trace
// reaches exactly one writer intact, groups are runs of consecutive ranks of one node that
// stay under the bound (or hold one rank), and the writers' communicator has them all.
// Usage: mpirun -n P store_writers_test
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "collect/store_writers.h"

namespace {

using perfsift::collect::StoreWriters;
using perfsift::io::RankTrace;

int g_failures = 0;

void check(bool ok, const std::string &what) {
  if (ok) return;
  ++g_failures;
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  std::fprintf(stderr, "rank %d: FAILED: %s\n", me, what.c_str());
}

// Rank r's trace: sizes and contents that differ by rank (rank 2 has no records at all),
// and names with odd bytes.
RankTrace trace_of(int r) {
  RankTrace t;
  t.rank = r;
  t.complete = r % 3 != 1;
  const int n = r == 2 ? 0 : 1000 * (r + 1);
  for (int i = 0; i < n; ++i) {
    perfsift::io::Event e;
    e.t_enter = 10 * i + r;
    e.t_exit = 10 * i + 5;
    e.peer = (r + 1) % 7;
    e.op = static_cast<uint16_t>(i % 50);
    t.events.push_back(e);
    if (i % 3 == 0) t.requests.push_back({i, i, r, i % 5, 0, 1, 8});
    if (i % 4 == 0) t.completions.push_back({i, i / 4, r, 3, 8, 0, 0});
  }
  t.steps.push_back({1, r, 0, 100});
  t.region_paths = {"(program)", "solve/it's \"odd\"", std::string("bytes\x01\xff", 7)};
  t.metric_names = {"time", "PAPI_TOT_CYC"};
  t.profile.assign(6, 0.5 * r);
  t.comms.push_back({42, {0, 1, r}, {}});
  t.callsites.push_back({"/bin/app with space", 0x40u + static_cast<uint64_t>(r), "main", 4, "a.c", r, {}});
  t.clock.offset_init_ns = -r;
  t.clock.error_fin_ns = r;
  return t;
}

template <class T>
bool same_bytes(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

bool same(const RankTrace &a, const RankTrace &b) {
  bool sites = a.callsites.size() == b.callsites.size();
  for (size_t i = 0; sites && i < a.callsites.size(); ++i)
    sites = a.callsites[i].module == b.callsites[i].module && a.callsites[i].offset == b.callsites[i].offset &&
            a.callsites[i].line == b.callsites[i].line;
  return a.rank == b.rank && a.complete == b.complete && same_bytes(a.events, b.events) &&
         same_bytes(a.requests, b.requests) && same_bytes(a.completions, b.completions) &&
         same_bytes(a.steps, b.steps) && a.region_paths == b.region_paths && a.metric_names == b.metric_names &&
         a.profile == b.profile && a.comms.size() == b.comms.size() && a.comms[0].members == b.comms[0].members &&
         sites && std::memcmp(&a.clock, &b.clock, sizeof a.clock) == 0;
}

void run_with_bound(uint64_t bound) {
  int me = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string label = "bound " + std::to_string(bound) + ": ";
  std::vector<RankTrace> owned;
  owned.push_back(trace_of(me));
  const uint64_t mine = perfsift::collect::record_bytes(owned.front());
  StoreWriters plan;
  perfsift::collect::plan_store_writers(MPI_COMM_WORLD, mine, bound, plan);
  perfsift::collect::gather_traces(MPI_COMM_WORLD, plan, owned, 99);

  check(same(owned.front(), trace_of(me)), label + "own trace changed");
  // Who writes whom, seen from every rank.
  std::vector<int> writer_of(size);
  MPI_Allgather(&plan.writer_rank, 1, MPI_INT, writer_of.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<unsigned long long> bytes(size);
  const unsigned long long mine_ull = mine;
  MPI_Allgather(&mine_ull, 1, MPI_UNSIGNED_LONG_LONG, bytes.data(), 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
  int writers = 0;
  for (int r = 0; r < size; ++r) {
    const int w = writer_of[r];
    check(w >= 0 && w <= r, label + "rank " + std::to_string(r) + " written by " + std::to_string(w));
    if (w == r) {
      ++writers;
      continue;
    }
    check(writer_of[r - 1] == w, label + "group of " + std::to_string(w) + " is not consecutive");
  }
  check(plan.group_count == writers, label + "group_count " + std::to_string(plan.group_count));
  if (bound == 0) check(writers == size, label + "every rank should write its own");
  if (bound >= (uint64_t{1} << 40)) check(writers == 1, label + "one node, no bound: one writer");
  for (int w = 0; w < size; ++w) {
    if (writer_of[w] != w) continue;
    unsigned long long sum = 0;
    int count = 0;
    for (int r = w; r < size && writer_of[r] == w; ++r) sum += bytes[r], ++count;
    check(count == 1 || sum <= bound, label + "group of " + std::to_string(w) + " holds " + std::to_string(sum));
  }
  if (plan.writer) {
    check(plan.writers != MPI_COMM_NULL, label + "writer without the writers' communicator");
    int wsize = 0;
    MPI_Comm_size(plan.writers, &wsize);
    check(wsize == writers, label + "writers' communicator of " + std::to_string(wsize));
    check(owned.size() == plan.members.size() + 1, label + "writer holds " + std::to_string(owned.size()));
    for (size_t i = 1; i < owned.size(); ++i)
      check(same(owned[i], trace_of(plan.members[i - 1])) && owned[i].rank == me + static_cast<int>(i),
            label + "trace of rank " + std::to_string(owned[i].rank) + " damaged in transit");
  } else {
    check(plan.writers == MPI_COMM_NULL && owned.size() == 1, label + "member holds others' traces");
  }
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  // Rank r has about 110 KB per thousand events: bounds that make groups of one, of a few,
  // and of the whole node.
  for (uint64_t bound : {uint64_t{0}, uint64_t{1}, uint64_t{300000}, uint64_t{700000}, uint64_t{1} << 40})
    run_with_bound(bound);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me == 0) std::printf("store writers: %s (%d failed checks)\n", failures ? "FAILED" : "ok", failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
