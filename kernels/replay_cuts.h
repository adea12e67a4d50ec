// Clean cuts of a run (Scenario::cuts): the collectives every rank takes part in that no
// dependency crosses. A resumed replay that finds every rank leaving one exactly delta
// ahead of the snapshot stops there: the replay is max-plus with no absolute time in it,
// so shifting every value the rest of the run reads shifts every time after by the same.
//
// A candidate is a blocking collective event alone in its call, of a communicator with
// every rank, on a single-stream rank; the k-th candidate must be the same instance on
// every rank. Epoch of an event: the candidates before it on its rank. A value crosses
// cut k when it is posted in an epoch up to k and used in one after: a message (its send
// and receive posts and the calls completing them, on both ranks), a request, a collective
// instance (every member's post and use). Whatever crosses a candidate rules it out.
//
// Cost: O(events + messages + collective calls) once per snapshot; split over owners, one
// exchange of the ends of messages crossing owners and one of each instance's span.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/replay.h"

namespace perfsift::kernels::replay {

class CutPlan {
 public:
  // The owned ranks' candidates and what crosses them, as far as these ranks tell.
  CutPlan(const std::vector<RankProgram> &programs, const Snapshot &snap, int32_t nranks);

  // Candidates per owned rank: -1 when the owned ranks disagree or one cannot take part;
  // kNone when no rank is owned.
  static constexpr int64_t kNone = -2;
  int64_t candidates() const { return m_count; }
  // Per candidate: its instance on the owned ranks (INT64_MIN: they disagree).
  const std::vector<int64_t> &instances() const { return m_instance; }

  // A message whose receiver another owner holds: the sender's epochs, for that owner's
  // add_remote().
  struct End {
    int32_t rank;   // the receiver
    int32_t index;  // its receive
    int32_t lo, hi;
  };
  const std::vector<End> &remote_ends() const { return m_remote; }
  void add_remote(const End &e);
  // Per collective instance: the epochs its owned members post and use it in (one per
  // instance, by instance); merge_spans() takes those of every owner for the instances
  // it is told.
  struct Span {
    int64_t instance;
    int32_t lo, hi;
  };
  const std::vector<Span> &spans() const { return m_spans; }
  void merge_spans(std::vector<Span> spans);

  // Per candidate: 1 when something crosses it (seen here; split, the owners' maximum).
  std::vector<uint8_t> crossed() const;
  // The owned ranks' clean cuts given every owner's crossings, for Scenario::cuts.
  std::vector<std::vector<int64_t>> clean(const std::vector<uint8_t> &crossed) const;

 private:
  void mark(int32_t lo, int32_t hi);

  std::vector<std::vector<int64_t>> m_candidates;                     // per owned slot
  std::vector<int32_t> m_slot_of;                                     // rank -> owned slot or -1
  std::vector<std::vector<std::pair<int32_t, int32_t>>> m_recv_span;  // per slot, per receive
  int64_t m_count = kNone;
  std::vector<int64_t> m_instance;
  std::vector<End> m_remote;
  std::vector<Span> m_spans;
  std::vector<int32_t> m_diff;  // per candidate: ranges starting less ranges ending there
};

// Every rank held here: the clean cuts per rank (empty vectors when there are none).
std::vector<std::vector<int64_t>> clean_cuts(const std::vector<RankProgram> &programs, const Snapshot &snap);

}  // namespace perfsift::kernels::replay
