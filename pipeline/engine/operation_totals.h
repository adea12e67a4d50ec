// Per owned rank and MPI operation: calls, time and bytes; point-to-point messages per
// receiver; the MPI_Start* calls (persistent sends, which the requests resolve). The
// profile stage's figures, summed in one streaming pass over the events: its own, or the
// matched run's build, which reads every owned event anyway (ProductBuilder::
// also_publishes) and so spares the profile a second read of the store.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::pipeline {

struct OpTotals {
  int64_t calls = 0, time_ns = 0, bytes = 0;
};
struct Channel {
  int64_t count = 0, bytes = 0;
};
using SentByReceiver = std::vector<std::pair<int32_t, Channel>>;  // sorted by receiver

// Product: the tallies of the owned ranks' events, published by whoever scanned them.
struct OperationTotals {
  static constexpr std::string_view kProduct = "operation totals";
  std::vector<OpTotals> rank_op;                   // [owned][store ops]
  std::vector<SentByReceiver> sent;                // per owned rank
  std::vector<std::vector<int64_t>> start_events;  // per owned rank: its MPI_Start* calls' indices
  std::vector<OpTotals> site;                      // per call site of the store, over the owned ranks
  std::vector<int32_t> site_op;                    // per call site: the store op it calls, -1 not seen
};

// Sums slices of owned ranks' events (any order of slices; integer sums, so the result
// does not depend on it). Memory: O(owned ranks x operations + distinct receivers).
class OperationTally {
 public:
  OperationTally(const std::vector<std::string> &ops, size_t callsites, int32_t first, int32_t owned);
  // Events [b, e) of `rank`, the first of them its event `index`.
  void add(int32_t rank, int64_t index, const io::Event *b, const io::Event *e);
  OperationTotals take() { return std::move(m_totals); }

 private:
  std::vector<uint8_t> m_role;  // per store op: how it takes part in messages
  int32_t m_first;
  OperationTotals m_totals;
};

}  // namespace perfsift::pipeline
