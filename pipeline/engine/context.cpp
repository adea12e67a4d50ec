// The analysis context.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "pipeline/engine/op_traits.h"
#include "pipeline/engine/context.h"

namespace perfsift::pipeline {

namespace {

// Per-rank cost of the block split: events dominate; the constant covers profile rows.
constexpr int64_t kRankWeight = 256;

template <class T>
MPI_Datatype bytes_type() {
  static MPI_Datatype t = [] {
    MPI_Datatype d;
    MPI_Type_contiguous(sizeof(T), MPI_BYTE, &d);
    MPI_Type_commit(&d);
    return d;
  }();
  return t;
}

template <class T>
MPI_Op merge_op() {
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(
        [](void *in, void *inout, int *len, MPI_Datatype *) {
          for (int i = 0; i < *len; ++i) {
            T a, b;  // copies: MPI's buffers need not be aligned for __int128
            std::memcpy(&a, static_cast<char *>(in) + i * sizeof(T), sizeof(T));
            std::memcpy(&b, static_cast<char *>(inout) + i * sizeof(T), sizeof(T));
            b.merge(a);
            std::memcpy(static_cast<char *>(inout) + i * sizeof(T), &b, sizeof(T));
          }
        },
        1, &o);
    return o;
  }();
  return op;
}

}  // namespace

Context::Context(MPI_Comm comm, const io::TraceStore &store, const config::Values &config, Progress &progress)
    : m_comm(comm), m_store(store), m_config(config), m_progress(progress) {
  MPI_Comm_rank(comm, &m_me);
  MPI_Comm_size(comm, &m_np);
  const int32_t n = store.nranks();
  const auto &off = store.event_offsets();
  // Contiguous blocks of equal weight: process k owns ranks whose cumulative weight
  // starts in [k W / K, (k+1) W / K).
  std::vector<int64_t> cum(static_cast<size_t>(n) + 1, 0);
  for (int32_t r = 0; r < n; ++r) cum[r + 1] = cum[r] + (off[r + 1] - off[r]) + kRankWeight;
  const __int128 total = cum[n];
  auto boundary = [&](int k) -> int32_t {
    if (k >= m_np) return n;
    const int64_t target = static_cast<int64_t>(total * k / m_np);
    return static_cast<int32_t>(std::lower_bound(cum.begin(), cum.end() - 1, target) - cum.begin());
  };
  for (int k = 0; k <= m_np; ++k) m_bounds.push_back(boundary(k));
  m_first = m_bounds[static_cast<size_t>(m_me)];
  m_last = m_bounds[static_cast<size_t>(m_me) + 1];

  const auto &regions = store.regions();
  m_children.assign(regions.size(), {});
  m_depth.assign(regions.size(), 0);
  for (const auto &r : regions)  // parents precede children in the store
    if (r.parent >= 0 && r.parent < static_cast<int32_t>(regions.size())) {
      m_children[r.parent].push_back(r.id);
      m_depth[r.id] = m_depth[r.parent] + 1;
    }
  m_missing.assign(static_cast<size_t>(n), false);
  for (int32_t r : store.run().missing_ranks)
    if (r >= 0 && r < n) m_missing[r] = true;

  progress.begin("loading the profile");
  for (const auto &metric : store.metrics()) m_profile[metric] = store.profile(metric, m_first, m_last);
  progress.end();
  // A rank whose row is NaN has no profile (it died before writing one). Its owner sees
  // that; every process must know it (collective members, arrivals' routing), or the
  // replay would depend on how the ranks are split.
  const auto &wall = profile(io::kMetricNames[io::kWall]);
  double wmax = 0;
  std::vector<uint8_t> no_profile(static_cast<size_t>(n), 0);
  for (int32_t r = m_first; r < m_last; ++r) {
    const double w = wall.empty() ? std::nan("") : wall[static_cast<size_t>(r - m_first) * nregions()];
    if (std::isnan(w))
      no_profile[static_cast<size_t>(r)] = 1;
    else
      wmax = std::max(wmax, w);
  }
  MPI_Allreduce(MPI_IN_PLACE, no_profile.data(), n, MPI_UINT8_T, MPI_MAX, comm);
  for (int32_t r = 0; r < n; ++r)
    if (no_profile[static_cast<size_t>(r)]) m_missing[static_cast<size_t>(r)] = true;
  MPI_Allreduce(&wmax, &m_wall_time_s, 1, MPI_DOUBLE, MPI_MAX, comm);
  find_program_window();
}

// Each owned rank's first and last events: MPI_Init's exit starts its program, MPI_Finalize's
// entry ends it (a rank without them: its first event's entry, its last event's exit).
void Context::find_program_window() {
  const auto &off = m_store.event_offsets();
  const auto &ops = m_store.ops();
  const auto traits = classify_ops(ops);
  auto is = [&](uint16_t op, auto test) { return op < traits.size() && test(traits[op]); };
  const auto ends = m_store.rank_ends(m_first, m_last);
  constexpr double kNone = 1e300;
  // [0] earliest program start, [1] -latest program end, [2] -latest event end; min-reduced
  double mine[3] = {kNone, kNone, kNone}, all[3];
  bool any_init = false;
  for (size_t i = 0; i + 1 < ends.size(); i += 2) {
    const int32_t r = m_first + static_cast<int32_t>(i / 2);
    if (off[r + 1] == off[r]) continue;  // a rank without events
    const io::Event &first = ends[i], &last = ends[i + 1];
    const bool init = is(first.op, [](const OpTraits &t) { return t.init; });
    any_init = any_init || init;
    mine[0] = std::min(mine[0], (init ? first.t_exit : first.t_enter) * 1e-9);
    mine[1] = std::min(
        mine[1],
        -(is(last.op, [](const OpTraits &t) { return t.cls == OpClass::Finalize; }) ? last.t_enter : last.t_exit) *
            1e-9);
    mine[2] = std::min(mine[2], -last.t_exit * 1e-9);
  }
  MPI_Allreduce(mine, all, 3, MPI_DOUBLE, MPI_MIN, m_comm);
  int init_seen = any_init, init_anywhere = 0;
  MPI_Allreduce(&init_seen, &init_anywhere, 1, MPI_INT, MPI_MAX, m_comm);
  if (all[0] >= kNone) return;  // no events at all: no window
  // Without any MPI_Init the program starts at the clock's origin.
  m_program.start_s = init_anywhere ? all[0] : std::min(0.0, all[0]);
  m_program.end_s = -all[1];
  m_program.run_end_s = -all[2];
}

int Context::owner_of(int32_t rank) const {
  // The last process whose block starts at or before `rank` (empty blocks are skipped).
  return static_cast<int>(std::upper_bound(m_bounds.begin(), m_bounds.end() - 1, rank) - m_bounds.begin()) - 1;
}

void Context::alltoallv_raw(const std::vector<const void *> &data, const std::vector<int64_t> &count, size_t size,
                            const std::function<void *(int64_t)> &receive) const {
  // Counts in elements of one derived type: MPI's int counts then reach 2^31 elements, not bytes.
  std::vector<int> sc(static_cast<size_t>(m_np)), rc(static_cast<size_t>(m_np)), sd(static_cast<size_t>(m_np), 0),
      rd(static_cast<size_t>(m_np), 0);
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  int64_t total_out = 0;
  for (int k = 0; k < m_np; ++k) {
    const int64_t n = count[static_cast<size_t>(k)];
    total_out += n;
    if (k != m_me) m_exchanges.bytes_to_others += n * static_cast<int64_t>(size);
  }
  ++m_exchanges.calls;
  // A process with more than MPI's int counts allow sends -1 to every process: all of them
  // then refuse together (one alone throwing would leave the others waiting).
  const bool too_many_out = total_out > kMax;
  for (int k = 0; k < m_np; ++k) sc[k] = too_many_out ? -1 : static_cast<int>(count[static_cast<size_t>(k)]);
  MPI_Alltoall(sc.data(), 1, MPI_INT, rc.data(), 1, MPI_INT, m_comm);
  if (std::any_of(rc.begin(), rc.end(), [](int c) { return c < 0; }))
    throw std::runtime_error(
        "an exchange between analysis processes exceeds 2^31 records from one of them; "
        "run perfsift analyze on more processes");
  int64_t total_in = 0;
  for (int k = 0; k < m_np; ++k) {
    rd[k] = static_cast<int>(std::min(total_in, kMax));
    total_in += rc[k];
  }
  if (total_in > kMax) {  // only this process knows: stop the job rather than leave the others waiting
    std::fprintf(stderr,
                 "perfsift: an exchange between analysis processes brings more than 2^31 records to analysis rank "
                 "%d; run perfsift analyze on more processes\n",
                 m_me);
    MPI_Abort(m_comm, 2);
  }
  // This process's own part goes straight to its place; the others' through one buffer.
  const int self = sc[m_me];
  std::vector<char> send(static_cast<size_t>(total_out - self) * size);
  for (int k = 0, at = 0; k < m_np; ++k) {
    if (k == m_me) continue;
    sd[k] = at;
    if (sc[k]) std::memcpy(send.data() + static_cast<size_t>(at) * size, data[static_cast<size_t>(k)], sc[k] * size);
    at += sc[k];
  }
  char *in = static_cast<char *>(receive(total_in));
  if (self) std::memcpy(in + static_cast<size_t>(rd[m_me]) * size, data[static_cast<size_t>(m_me)], self * size);
  sc[m_me] = rc[m_me] = 0;
  MPI_Datatype element;
  MPI_Type_contiguous(static_cast<int>(size), MPI_BYTE, &element);
  MPI_Type_commit(&element);
  MPI_Alltoallv(send.data(), sc.data(), sd.data(), element, in, rc.data(), rd.data(), element, m_comm);
  MPI_Type_free(&element);
}

const std::vector<double> &Context::profile(const std::string &metric) const {
  static const std::vector<double> none;
  auto it = m_profile.find(metric);
  return it == m_profile.end() ? none : it->second;
}

namespace {
// Reads the events of ranks [first, last) and hands them on in rank slices; `read` is
// told each read's end row.
void scan_rank_slices(const io::TraceStore &store, int32_t first, int32_t last, int64_t rows_per_read,
                      const Context::EventSlice &fn, const std::function<void(int64_t)> &read) {
  const auto &off = store.event_offsets();
  int32_t rank = first;
  store.scan_events(first, last, rows_per_read, omp_get_max_threads(),
                    [&](int64_t first_row, const std::vector<io::Event> &ev) {
                      const int64_t end_row = first_row + static_cast<int64_t>(ev.size());
                      for (int64_t row = first_row; row < end_row;) {
                        while (off[rank + 1] <= row) ++rank;
                        const int64_t stop = std::min<int64_t>(end_row, off[rank + 1]);
                        fn(rank, row - off[rank], ev.data() + (row - first_row), ev.data() + (stop - first_row));
                        row = stop;
                      }
                      if (read) read(end_row);
                    });
}
}  // namespace

void Context::scan_events(const std::string &label, const EventSlice &fn) const {
  const auto &off = m_store.event_offsets();
  const int64_t begin = off[m_first], total = off[m_last] - off[m_first];
  m_progress.begin(label);
  scan_rank_slices(m_store, m_first, m_last, m_config.get_int("analysis.rows_per_read"), fn, [&](int64_t end_row) {
    m_progress.update(total ? static_cast<double>(end_row - begin) / static_cast<double>(total) : 1.0);
  });
  m_progress.end();
}

void Context::scan_events(int32_t first, int32_t last, const EventSlice &fn) const {
  scan_rank_slices(m_store, first, last, m_config.get_int("analysis.rows_per_read"), fn, nullptr);
}

void Context::in_rank_blocks(const std::vector<int64_t> &offsets, int64_t rows, const RankBlock &fn) const {
  std::vector<std::pair<int32_t, int32_t>> blocks;
  for (int32_t a = m_first; a < m_last;) {
    int32_t b = a + 1;
    while (b < m_last && offsets[static_cast<size_t>(b) + 1] - offsets[static_cast<size_t>(a)] <= rows) ++b;
    blocks.emplace_back(a, b);
    a = b;
  }
  // Every process makes the same number of reads: opening a dataset is collective.
  int64_t rounds = static_cast<int64_t>(blocks.size());
  MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_INT64_T, MPI_MAX, m_comm);
  for (int64_t k = 0; k < rounds; ++k) {
    const auto [a, b] = k < static_cast<int64_t>(blocks.size()) ? blocks[static_cast<size_t>(k)]
                                                                : std::pair<int32_t, int32_t>{m_last, m_last};
    fn(a, b, k, rounds);
  }
}

void Context::scan_requests(const RequestBlock &fn) const {
  const auto off = m_store.offsets("requests");
  in_rank_blocks(off, m_config.get_int("analysis.rows_per_read"), [&](int32_t a, int32_t b, int64_t, int64_t) {
    const auto rows = m_store.requests(a, b);
    if (a < b) fn(a, b, rows, off);
  });
}

void Context::allreduce(std::vector<kernels::Summary> &v) const {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), bytes_type<kernels::Summary>(),
                merge_op<kernels::Summary>(), m_comm);
}

void Context::allreduce(std::vector<kernels::FixedSum> &v) const {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), bytes_type<kernels::FixedSum>(),
                merge_op<kernels::FixedSum>(), m_comm);
}

void Context::allreduce_sum(std::vector<int64_t> &v) const {
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_SUM, m_comm);
}

kernels::RankRanges Context::allgather(const kernels::RankRanges &mine) const {
  return kernels::merge_ranges(allgatherv(mine));
}

}  // namespace perfsift::pipeline
