// A finished replay's state, to resume others from (Scenario::resume): taken from an
// engine (Engine::take_snapshot) or rebuilt from recorded timings without one.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/replay/columns.h"
#include "kernels/replay/program.h"
#include "kernels/replay/rounds.h"
#include "kernels/replay/scenario.h"

namespace perfsift::kernels::replay {

// Per owned rank (program order), per send, receive or collective call: the event that
// posts it. The program's own, the same for every replay: a snapshot borrows the tables
// of whoever keeps them (the replay model's side data) rather than holding a copy (4 B
// per message end and call), or holds its own.
class PostingEvents {
 public:
  using Borrowed = std::vector<const std::vector<int32_t> *>;
  const std::vector<int32_t> &operator[](size_t s) const { return m_borrowed.empty() ? m_own[s] : *m_borrowed[s]; }
  size_t size() const { return m_borrowed.empty() ? m_own.size() : m_borrowed.size(); }
  bool borrowed() const { return !m_borrowed.empty(); }
  void borrow(Borrowed tables) {
    m_borrowed = std::move(tables);
    m_own = {};
  }
  std::vector<std::vector<int32_t>> &own() { return m_own; }

 private:
  std::vector<std::vector<int32_t>> m_own;
  Borrowed m_borrowed;
};

// The state of a finished replay of the owned ranks (program order), to resume others
// from (Scenario::resume). A resumed replay starts each rank at its cut, the first event
// whose exit_max passes the resume time: what ended by then cannot change.
struct Snapshot {
  // The replayed timings: held, or borrowed from whoever keeps the same replay (the
  // pipeline's baseline: 12.5 B per event not held twice).
  std::vector<TimingColumn> own_timings;
  const std::vector<TimingColumn> *borrowed_timings = nullptr;
  const std::vector<TimingColumn> &timings() const { return borrowed_timings ? *borrowed_timings : own_timings; }
  // Per event: the largest exit up to it. Held only for ranks whose exits ever fall (laned
  // ranks); a single stream's exits never do (8 B per event not held).
  std::vector<std::vector<int64_t>> exit_max;
  int64_t exit_max_at(size_t slot, size_t event) const {
    return exit_max[slot].empty() ? timings()[slot].exit(event) : exit_max[slot][event];
  }
  std::vector<std::vector<int64_t>> send_start, recv_post, recv_send_start;
  // The event that posted each send, receive, collective and request slot (kNever: none).
  static constexpr int32_t kNever = std::numeric_limits<int32_t>::max();
  PostingEvents send_event, recv_event, coll_event;
  std::vector<std::vector<int32_t>> slot_event;
  // When a receive or a collective call was posted: its posting event's enter (kUnknown:
  // never), read from the timings rather than held (8 B per receive and call).
  int64_t recv_posted(size_t slot, size_t k) const { return entered(slot, recv_event[slot][k]); }
  int64_t coll_enter(size_t slot, size_t k) const { return entered(slot, coll_event[slot][k]); }
  int64_t entered(size_t slot, int32_t event) const {
    return event == kNever ? kUnknown : timings()[slot].enter(static_cast<size_t>(event));
  }
  std::vector<std::vector<int32_t>> slot_ref;
  // The event that uses each receive's send start, each send's receive post (rendezvous)
  // and each collective's arrivals: the blocking call, or the Wait/Test completing it.
  std::vector<std::vector<int32_t>> recv_consumer, send_consumer, coll_consumer;
  // Per collective call: its instance's latest arrival and root arrival (kUnknown: none),
  // what every member's completion depends on.
  std::vector<std::vector<int64_t>> coll_max_enter, coll_root_enter;
  // The other end's exit_max at the event posting its side: per send, the receiver's at
  // its receive; per receive, the sender's at its send (INT64_MAX: unmatched). Both ends
  // agree whether a message was posted before the cut without seeing each other's rank.
  // Held, with recv_send_start, only for a rank with a partner outside the snapshot (the
  // pipeline fills those from their owners); a rank whose partners are all here reads them
  // from its partners' values (*_at: 24 B per message end not held).
  std::vector<std::vector<int64_t>> send_partner_exit_max, recv_partner_exit_max;
  // `prog`: the snapshot's programs; `slot_of`: world rank -> their slot, -1 elsewhere.
  int64_t send_partner_exit_max_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                   size_t slot, size_t k) const;
  int64_t recv_partner_exit_max_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of,
                                   size_t slot, size_t k) const;
  int64_t recv_send_start_at(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of, size_t slot,
                             size_t k) const;
  // exit_max at the event posting message `index` of `slot` (INT64_MAX: none).
  int64_t posted_exit_max(int32_t slot, const PostingEvents &event_of, int32_t index) const;
  // Every rank's partner values held (a part of the snapshot handed to another owner).
  void hold_partner_values(const std::vector<RankProgram> &prog);
  // Rank `slot`'s partner values held, as read now.
  void hold_partners_of(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of, size_t slot);
  // Receive k's send start as its sender (in this snapshot) holds it; kUnknown otherwise.
  int64_t senders_start(const std::vector<RankProgram> &prog, const std::vector<int32_t> &slot_of, size_t slot,
                        size_t k) const;
  // The owned collective calls by instance: a resumed replay gathers an instance's
  // earlier arrivals when it first meets it.
  // Each carries what gathering an instance reads of it, so that gathering is one pass
  // over the instance's members rather than several lookups per member in per-rank tables.
  struct Member {
    int64_t instance;
    int32_t slot, index;
    int64_t enter = kUnknown;  // its arrival (coll_enter)
    // exit_max at the call posting it and at the one using the outcome (INT64_MAX: none).
    int64_t posted_by = std::numeric_limits<int64_t>::max(), used_by = std::numeric_limits<int64_t>::max();
    bool root = false, has_user = false;
    bool operator<(const Member &o) const { return instance < o.instance || (instance == o.instance && slot < o.slot); }
  };
  std::vector<Member> coll_members;  // sorted by instance, then slot
  // coll_members' instances, each once, and where each one's members begin (one more:
  // the end): a resumed replay looks an instance up thousands of times per candidate, in
  // a table as long as the instances rather than the calls.
  std::vector<int64_t> member_instances;
  std::vector<int64_t> member_begin;
  // Sorts coll_members and builds that index (take_snapshot does; so must whoever fills
  // a snapshot by hand).
  void index_members();
  std::pair<const Member *, const Member *> members_of(int64_t instance) const {
    const auto k = std::lower_bound(member_instances.begin(), member_instances.end(), instance);
    if (k == member_instances.end() || *k != instance) return {nullptr, nullptr};
    const size_t i = static_cast<size_t>(k - member_instances.begin());
    return {coll_members.data() + member_begin[i], coll_members.data() + member_begin[i + 1]};
  }
  // The largest exit of rank slot s (INT64_MIN: no events): it rests past resume_at
  // unless this lies beyond.
  int64_t last_exit_max(size_t s) const {
    if (!exit_max[s].empty()) return exit_max[s].back();
    return timings()[s].empty() ? std::numeric_limits<int64_t>::min() : end[s];
  }
  // Per rank, for request slots, sends, receives and collectives: how many later ones
  // were posted while one was still open (posted, not yet used). A resumed rank holds
  // values from its first one posted after the cut less this lag.
  std::vector<std::array<int64_t, 4>> open_lag;
  std::vector<int64_t> end;
  int64_t run_end = 0;  // the run's end over every rank (distributed: made global by the owner)
};

// A finished replay's state rebuilt from its recorded timings, for a replay that kept no
// engine (the first question of a pass, replay_pass.h): what Engine::take_snapshot gives.
// For programs of single-stream ranks whose every event was replayed, nothing released.
//
// Each send's start as the engine computed it: its event's enter, or the previous send's
// injection horizon if later (`scenario`: its network and message sizes).
std::vector<std::vector<int64_t>> replayed_send_starts(const std::vector<RankProgram> &programs,
                                                       const std::vector<TimingColumn> &timings,
                                                       const Scenario &scenario);
// What the owned ranks delivered to other owners' ranks in that replay (Engine::Outbox of
// the whole replay): each send's start, each receive's post, each collective instance's
// arrivals here. Route them as a replay round does.
Outbox delivered_elsewhere(const std::vector<RankProgram> &programs, const std::vector<TimingColumn> &timings,
                           const std::vector<std::vector<int64_t>> &send_start, int32_t nranks,
                           const Scenario &scenario);
// The snapshot, from the timings, the send starts and what other owners delivered here
// (`from_elsewhere`); the posting events borrowed when lent (Engine::lend_posting_events).
// Nothing when some program has several lanes, a message end is named by two others, or a
// collective instance's members name two roots (what a replay would resolve in its own
// order).
std::optional<Snapshot> snapshot_from_timings(const std::vector<RankProgram> &programs,
                                              std::vector<TimingColumn> timings,
                                              std::vector<std::vector<int64_t>> send_start, int32_t nranks,
                                              const Outbox &from_elsewhere,
                                              std::array<PostingEvents::Borrowed, 3> lent = {});

}  // namespace perfsift::kernels::replay
