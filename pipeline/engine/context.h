// The analysis context: the store, who owns which application ranks, the owned
// profile slices, the collective helpers every stage uses, the findings so far and the
// typed products stages hand on.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "config/schema.h"
#include "io/trace_store.h"
#include "kernels/exact_sum.h"
#include "kernels/rank_set.h"
#include "pipeline/engine/finding.h"
#include "pipeline/engine/products.h"
#include "pipeline/engine/progress.h"

namespace perfsift::pipeline {

// What the analysis processes share: the store, who owns which application ranks,
// the profile slices of the owned block, and the findings so far.
class Context {
 public:
  Context(MPI_Comm comm, const io::TraceStore &store, const config::Values &config, Progress &progress);

  MPI_Comm comm() const { return m_comm; }
  int me() const { return m_me; }
  int nprocs() const { return m_np; }
  const io::TraceStore &store() const { return m_store; }
  const config::Values &config() const { return m_config; }
  Progress &progress() const { return m_progress; }
  int32_t nranks() const { return m_store.nranks(); }
  int32_t nregions() const { return static_cast<int32_t>(m_store.regions().size()); }

  // This process's application ranks: [first(), last()), contiguous, balanced by
  // event count; the same split for every stage.
  int32_t first() const { return m_first; }
  int32_t last() const { return m_last; }
  int32_t owned() const { return m_last - m_first; }
  // The process owning an application rank.
  int owner_of(int32_t rank) const;
  // Ranks with no data (lost in a crash): excluded from statistics, named in warnings.
  bool missing(int32_t rank) const { return m_missing[static_cast<size_t>(rank)]; }
  const std::vector<int32_t> &missing_ranks() const { return m_store.run().missing_ranks; }

  // Owned rows of a profile metric, [owned()][nregions()]; empty when the store
  // lacks the metric. Loaded collectively once, at construction.
  const std::vector<double> &profile(const std::string &metric) const;
  bool has_metric(const std::string &metric) const { return m_profile.count(metric) != 0; }
  // Program wall time: the slowest rank's (program) region, MPI start-up and shut-down in.
  double wall_time_s() const { return m_wall_time_s; }
  // The program proper: from the end of MPI_Init (the first rank out) to the start of
  // MPI_Finalize (the last rank in), in s on the store's clock. Start-up (MPI_Init: the
  // launcher, wire-up, the collector's clock synchronisation) and shut-down are measured
  // but are not the program: shares, percentages and what-if baselines use this. A
  // store without MPI_Init/MPI_Finalize events (a crash, an import) is all program.
  struct ProgramWindow {
    double start_s = 0, end_s = 0;  // program start and end
    double run_end_s = 0;           // the last event's end (MPI_Finalize's exit)
    double startup_s() const { return start_s; }
    double shutdown_s() const { return std::max(0.0, run_end_s - end_s); }
    double time_s() const { return std::max(0.0, end_s - start_s); }
  };
  const ProgramWindow &program() const { return m_program; }
  // The time base of every share and percentage (the wall time when the store has no events).
  double program_time_s() const { return m_program.time_s() > 0 ? m_program.time_s() : m_wall_time_s; }

  // Collective: streams the owned ranks' events; fn(rank, index, first, last) per rank
  // slice of each read, ranks in order; `index` is the slice's first event within its rank.
  using EventSlice = std::function<void(int32_t rank, int64_t index, const io::Event *first, const io::Event *last)>;
  void scan_events(const std::string &label, const EventSlice &fn) const;
  // Collective: the same for owned ranks [first, last) only, without progress; every
  // process calls it equally often (an empty range takes part in the reads).
  void scan_events(int32_t first, int32_t last, const EventSlice &fn) const;
  // Collective: the owned ranks' request activations, in rank blocks of about
  // analysis.rows_per_read rows; fn(first_rank, last_rank, rows, offsets of the block).
  using RequestBlock = std::function<void(int32_t first, int32_t last, const std::vector<io::RequestRecord> &rows,
                                          const std::vector<int64_t> &offsets)>;
  void scan_requests(const RequestBlock &fn) const;
  // Collective: the owned ranks in consecutive blocks of at most `rows` rows of a table
  // with these per-rank `offsets` (a rank with more is a block alone); fn(first, last,
  // round, rounds) is called as often on every process, with empty ranges past its blocks
  // (reads inside fn are collective).
  using RankBlock = std::function<void(int32_t first, int32_t last, int64_t round, int64_t rounds)>;
  void in_rank_blocks(const std::vector<int64_t> &offsets, int64_t rows, const RankBlock &fn) const;

  // ---- collective reductions that give the same bits for any number of processes
  void allreduce(std::vector<kernels::Summary> &v) const;
  void allreduce(std::vector<kernels::FixedSum> &v) const;
  void allreduce_sum(std::vector<int64_t> &v) const;
  // Every process sends out[k] to process k (plain data of type T); returns what arrived,
  // in process order. One copy into the send buffer; what arrives lands in the result.
  template <class T>
  std::vector<T> alltoallv(const std::vector<std::vector<T>> &out) const {
    static_assert(std::is_trivially_copyable_v<T>, "plain data");
    std::vector<const void *> data(out.size());
    std::vector<int64_t> count(out.size());
    for (size_t k = 0; k < out.size(); ++k) data[k] = out[k].data(), count[k] = static_cast<int64_t>(out[k].size());
    std::vector<T> items;
    alltoallv_raw(data, count, sizeof(T), [&](int64_t n) -> void * {
      items.resize(static_cast<size_t>(n));
      return items.data();
    });
    return items;
  }
  // The all-to-alls so far and the bytes this process sent in them to other processes
  // (what the scaling figures count: docs/scaling.md).
  struct Exchanges {
    int64_t calls = 0, bytes_to_others = 0;
  };
  Exchanges exchanges() const { return m_exchanges; }
  // Union of every process's ranges.
  kernels::RankRanges allgather(const kernels::RankRanges &mine) const;
  // Every process's items, concatenated in process order (plain data).
  template <class T>
  std::vector<T> allgatherv(const std::vector<T> &mine) const {
    static_assert(std::is_standard_layout_v<T> && std::is_trivially_destructible_v<T>, "plain data");
    int n = static_cast<int>(mine.size() * sizeof(T));
    std::vector<int> counts(static_cast<size_t>(m_np)), displs(static_cast<size_t>(m_np), 0);
    MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, m_comm);
    for (int i = 1; i < m_np; ++i) displs[i] = displs[i - 1] + counts[i - 1];
    std::vector<T> all(static_cast<size_t>(displs.back() + counts.back()) / sizeof(T));
    MPI_Allgatherv(mine.data(), n, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, m_comm);
    return all;
  }

  std::vector<Finding> findings;
  std::vector<std::string> warnings;  // said once, on stderr and in the results

  // Typed products of the stages so far (products.h).
  Products &products() { return m_products; }
  const Products &products() const { return m_products; }

  // Region tree.
  const std::vector<std::vector<int32_t>> &children() const { return m_children; }
  int depth(int32_t region) const { return m_depth[static_cast<size_t>(region)]; }

 private:
  void find_program_window();
  // count[k] elements of `size` bytes at data[k] to process k; `receive(n)` gives room for
  // the n elements that arrive.
  void alltoallv_raw(const std::vector<const void *> &data, const std::vector<int64_t> &count, size_t size,
                     const std::function<void *(int64_t)> &receive) const;
  mutable Exchanges m_exchanges;
  MPI_Comm m_comm;
  int m_me = 0, m_np = 1;
  const io::TraceStore &m_store;
  const config::Values &m_config;
  Progress &m_progress;
  int32_t m_first = 0, m_last = 0;
  std::vector<int32_t> m_bounds;  // process k owns [m_bounds[k], m_bounds[k+1])
  std::vector<bool> m_missing;
  std::map<std::string, std::vector<double>> m_profile;
  double m_wall_time_s = 0;
  ProgramWindow m_program;
  std::vector<std::vector<int32_t>> m_children;
  std::vector<int> m_depth;
  Products m_products;
};

}  // namespace perfsift::pipeline
