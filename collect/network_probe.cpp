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
// Rank 0 stops asking a partner once this much time has gone with it (ranks waiting for a
// core make every round trip a scheduler's quantum): the samples taken so far stay.
constexpr int64_t kBudgetNs = 5000000;
// What rank 0 asks of its partner, by tag offset: echo the message, send 8 bytes, take a
// burst, stop.
enum Ask : int { Echo = 0, Small = 1, Burst = 2, Stop = 3 };

// Rank 0's side with `partner`: the samples of one level, asked until `deadline`.
void measure_pair(MPI_Comm comm, int partner, int32_t level, int tag, int64_t deadline, std::vector<char> &buf,
                  io::NetworkProbe &out) {
  const auto in_time = [&] { return mono_ns() < deadline; };
  const auto echoes = [&](int size) {
    for (int i = 0; i <= kRounds && in_time(); ++i) {  // the first round warms the path up
      const int64_t t0 = mono_ns();
      PMPI_Send(buf.data(), size, MPI_CHAR, partner, tag + Echo, comm);
      const int64_t t1 = mono_ns();
      PMPI_Recv(buf.data(), size, MPI_CHAR, partner, tag + Echo, comm, MPI_STATUS_IGNORE);
      const int64_t t2 = mono_ns();
      if (i == 0) continue;
      out.add(level, io::NetworkProbe::Transfer, size, (t2 - t0) / 2);
      if (size == kSmall) out.add(level, io::NetworkProbe::SendOverhead, size, t1 - t0);
    }
  };
  // Small messages first (o_s, L, o_r, g), then the sizes G needs: a budget spent on a
  // loaded node leaves the constants measured.
  echoes(kSizes[0]);
  for (int i = 0; i < kRounds && in_time(); ++i) {
    PMPI_Send(buf.data(), 0, MPI_CHAR, partner, tag + Small, comm);
    int there = 0;
    while (!there) PMPI_Iprobe(partner, tag + Small, comm, &there, MPI_STATUS_IGNORE);
    const int64_t t0 = mono_ns();
    PMPI_Recv(buf.data(), kSmall, MPI_CHAR, partner, tag + Small, comm, MPI_STATUS_IGNORE);
    out.add(level, io::NetworkProbe::RecvOverhead, kSmall, mono_ns() - t0);
  }
  std::array<MPI_Request, kBurst> sent{};
  std::array<int64_t, kBurst> enter{};
  for (int b = 0; b < kBursts && in_time(); ++b) {
    for (int i = 0; i < kBurst; ++i) {
      enter[static_cast<size_t>(i)] = mono_ns();
      PMPI_Isend(buf.data(), kSmall, MPI_CHAR, partner, tag + Burst, comm, &sent[static_cast<size_t>(i)]);
    }
    PMPI_Waitall(kBurst, sent.data(), MPI_STATUSES_IGNORE);
    for (size_t i = 1; i < enter.size(); ++i) out.add(level, io::NetworkProbe::Gap, kSmall, enter[i] - enter[i - 1]);
    PMPI_Recv(buf.data(), 0, MPI_CHAR, partner, tag + Burst, comm, MPI_STATUS_IGNORE);
  }
  for (size_t k = 1; k < kSizes.size(); ++k) echoes(kSizes[k]);
  PMPI_Send(buf.data(), 0, MPI_CHAR, partner, tag + Stop, comm);
}

// The partner's side: answers rank 0 until it says stop.
void answer_pair(MPI_Comm comm, int tag, std::vector<char> &buf) {
  for (;;) {
    MPI_Status st;
    PMPI_Recv(buf.data(), static_cast<int>(buf.size()), MPI_CHAR, 0, MPI_ANY_TAG, comm, &st);
    int count = 0;
    PMPI_Get_count(&st, MPI_CHAR, &count);
    switch (st.MPI_TAG - tag) {
      case Echo:
        PMPI_Send(buf.data(), count, MPI_CHAR, 0, tag + Echo, comm);
        break;
      case Small:
        PMPI_Send(buf.data(), kSmall, MPI_CHAR, 0, tag + Small, comm);
        break;
      case Burst:
        for (int i = 1; i < kBurst; ++i)
          PMPI_Recv(buf.data(), kSmall, MPI_CHAR, 0, tag + Burst, comm, MPI_STATUS_IGNORE);
        PMPI_Send(buf.data(), 0, MPI_CHAR, 0, tag + Burst, comm);
        break;
      default:
        return;
    }
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
      measure_pair(comm, partner[level], level, tag, mono_ns() + kBudgetNs, buf, out);
    else if (me == partner[level])
      answer_pair(comm, tag, buf);
  }
  if (me == 0) out.cost_ns = static_cast<double>(mono_ns() - start);
  return out;
}

}  // namespace perfsift::collect
