// A replay split over owners: each owner's round report and the decision all take alike
// from the reports combined.
#include "kernels/replay/rounds.h"

#include <algorithm>
#include <limits>

#include "kernels/replay/engine_core.h"

namespace perfsift::kernels::replay {

EngineCore::RoundReport EngineCore::round_report(bool moved) const {
  const Frontier f = m_converge ? frontier() : Frontier{0, std::numeric_limits<int64_t>::max()};
  constexpr int64_t lowest = std::numeric_limits<int64_t>::min(), highest = std::numeric_limits<int64_t>::max();
  // An owner without clean cuts or ranks does not hold a stop back; one without a run does.
  const bool vacuous = !m_cuts || m_prog.empty();
  const bool run = m_cut_first <= m_cut_last;
  // Off the snapshot counts what the exchange just woke or left to send: it may yet differ.
  return {moved ? 1 : 0,
          m_unfinished,
          off_snapshot() + (idle() ? 0 : 1),
          zero_wait_done() ? 0 : 1,
          m_aborted || m_conflict ? 1 : 0,
          zero_wait_done() ? f.lead : 0,
          m_assumed,
          m_rest_bound_met ? 1 : 0,
          f.horizon,
          m_assumed == 0 ? std::numeric_limits<int64_t>::min() : m_assumed_latest,
          vacuous ? lowest : m_cut_first,
          vacuous ? highest : m_cut_last,
          vacuous || !run ? highest : m_cut_lead,
          vacuous || !run ? lowest : m_cut_lead};
}

static_assert(sizeof(RoundReport) == (RoundReport::kSums + RoundReport::kMaxima) * sizeof(int64_t));

void RoundReport::encode(int64_t *sums, int64_t *maxima) const {
  const int64_t summed[kSums] = {moved,   unfinished, off_snapshot, changed_pending,
                                 stopped, lead,       assumed,      rest_bound_met};
  const int64_t maxed[kMaxima] = {~horizon, assumed_latest, cut_first, ~cut_last, ~shift_low, shift_high};
  std::copy(summed, summed + kSums, sums);
  std::copy(maxed, maxed + kMaxima, maxima);
}

RoundReport RoundReport::decode(const int64_t *s, const int64_t *m) {
  return {s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], ~m[0], m[1], m[2], ~m[3], ~m[4], m[5]};
}

void combine(RoundReport &into, const RoundReport &from) {
  int64_t sums[2][RoundReport::kSums], maxima[2][RoundReport::kMaxima];
  into.encode(sums[0], maxima[0]);
  from.encode(sums[1], maxima[1]);
  for (size_t k = 0; k < RoundReport::kSums; ++k) sums[0][k] += sums[1][k];
  for (size_t k = 0; k < RoundReport::kMaxima; ++k) maxima[0][k] = std::max(maxima[0][k], maxima[1][k]);
  into = RoundReport::decode(sums[0], maxima[0]);
}

EngineCore::RoundEnd EngineCore::round_end(const RoundReport &sum) const {
  const bool replayed = sum.changed_pending == 0 && sum.stopped == 0;
  if (m_converge && replayed && sum.off_snapshot == 0) return RoundEnd::Converged;
  // Every owner left cut_first equally ahead, with no unseen assumed arrival behind it.
  if (m_converge && replayed && sum.assumed == 0 && sum.cut_first <= sum.cut_last && sum.shift_low == sum.shift_high)
    return RoundEnd::Shifted;
  // Bounds prove the threshold out of reach only on values no unseen assumed arrival shaped.
  const bool settled = sum.assumed == 0 || sum.horizon > sum.assumed_latest;
  if (replayed && settled && (sum.rest_bound_met > 0 || (m_converge && lead_passes_threshold(sum.lead))))
    return RoundEnd::Abort;
  if (sum.stopped > 0 || sum.unfinished == 0) return RoundEnd::Finished;
  return sum.moved == 0 ? RoundEnd::Stuck : RoundEnd::Continue;
}

}  // namespace perfsift::kernels::replay
