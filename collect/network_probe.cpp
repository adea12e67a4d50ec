#include "network_probe.h"

#include <array>
#include <cstdint>
#include <vector>

#include "tick_clock.h"

namespace perfsift::collect {

namespace {

constexpr int kRounds = 16, kBurst = 16, kBursts = 2;
constexpr std::array<int, 4> kSizes = {8, 2048, 8192, 32768};
constexpr int kSmall = 8;

// Rank 0's side with `partner`: every sample of one level.
void measure_pair(MPI_Comm comm, int partner, int32_t level, int tag, std::vector<char> &buf, io::NetworkProbe &out) {
  for (const int size : kSizes)
    for (int i = 0; i <= kRounds; ++i) {  // the first round warms the path up
      const int64_t t0 = mono_ns();
      PMPI_Send(buf.data(), size, MPI_CHAR, partner, tag, comm);
      const int64_t t1 = mono_ns();
      PMPI_Recv(buf.data(), size, MPI_CHAR, partner, tag, comm, MPI_STATUS_IGNORE);
      const int64_t t2 = mono_ns();
      if (i == 0) continue;
      out.add(level, io::NetworkProbe::Transfer, size, (t2 - t0) / 2);
      if (size == kSmall) out.add(level, io::NetworkProbe::SendOverhead, size, t1 - t0);
    }
  for (int i = 0; i < kRounds; ++i) {
    int there = 0;
    while (!there) PMPI_Iprobe(partner, tag, comm, &there, MPI_STATUS_IGNORE);
    const int64_t t0 = mono_ns();
    PMPI_Recv(buf.data(), kSmall, MPI_CHAR, partner, tag, comm, MPI_STATUS_IGNORE);
    out.add(level, io::NetworkProbe::RecvOverhead, kSmall, mono_ns() - t0);
    PMPI_Send(buf.data(), 0, MPI_CHAR, partner, tag, comm);
  }
  std::array<MPI_Request, kBurst> sent{};
  std::array<int64_t, kBurst> enter{};
  for (int b = 0; b < kBursts; ++b) {
    for (int i = 0; i < kBurst; ++i) {
      enter[static_cast<size_t>(i)] = mono_ns();
      PMPI_Isend(buf.data(), kSmall, MPI_CHAR, partner, tag, comm, &sent[static_cast<size_t>(i)]);
    }
    PMPI_Waitall(kBurst, sent.data(), MPI_STATUSES_IGNORE);
    for (size_t i = 1; i < enter.size(); ++i) out.add(level, io::NetworkProbe::Gap, kSmall, enter[i] - enter[i - 1]);
    PMPI_Recv(buf.data(), 0, MPI_CHAR, partner, tag, comm, MPI_STATUS_IGNORE);
  }
}

// The partner's side of measure_pair.
void answer_pair(MPI_Comm comm, int tag, std::vector<char> &buf) {
  for (const int size : kSizes)
    for (int i = 0; i <= kRounds; ++i) {
      PMPI_Recv(buf.data(), size, MPI_CHAR, 0, tag, comm, MPI_STATUS_IGNORE);
      PMPI_Send(buf.data(), size, MPI_CHAR, 0, tag, comm);
    }
  for (int i = 0; i < kRounds; ++i) {
    PMPI_Send(buf.data(), kSmall, MPI_CHAR, 0, tag, comm);
    PMPI_Recv(buf.data(), 0, MPI_CHAR, 0, tag, comm, MPI_STATUS_IGNORE);
  }
  for (int b = 0; b < kBursts; ++b) {
    for (int i = 0; i < kBurst; ++i) PMPI_Recv(buf.data(), kSmall, MPI_CHAR, 0, tag, comm, MPI_STATUS_IGNORE);
    PMPI_Send(buf.data(), 0, MPI_CHAR, 0, tag, comm);
  }
}

}  // namespace

io::NetworkProbe measure_network(MPI_Comm comm, const std::vector<int32_t> &rank_hosts, int tag) {
  int me = 0, n = 1;
  PMPI_Comm_rank(comm, &me);
  PMPI_Comm_size(comm, &n);
  io::NetworkProbe out;
  if (n < 2 || rank_hosts.size() != static_cast<size_t>(n)) return out;
  // Rank 0's partners: the next rank on its node, the first on another.
  int partner[2] = {-1, -1};
  for (int r = 1; r < n; ++r) {
    const int32_t level = rank_hosts[static_cast<size_t>(r)] == rank_hosts[0] ? 0 : 1;
    if (partner[level] < 0) partner[level] = r;
  }
  std::vector<char> buf(static_cast<size_t>(kSizes.back()));
  const int64_t start = mono_ns();
  for (int32_t level = 0; level < 2; ++level) {
    if (partner[level] < 0) continue;
    if (me == 0)
      measure_pair(comm, partner[level], level, tag, buf, out);
    else if (me == partner[level])
      answer_pair(comm, tag, buf);
  }
  if (me == 0) out.cost_ns = static_cast<double>(mono_ns() - start);
  return out;
}

}  // namespace perfsift::collect
