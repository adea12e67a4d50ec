// The OTF2 export's events (io/otf2_export.h): one rank's calls, messages, requests,
// collectives, regions and counters, each thread's to its own location.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/otf2_export_plan.h"

namespace perfsift::io::otf2_write {

namespace {

const std::set<std::string> kSends = {"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend"};
const std::map<std::string, OTF2_CollectiveOp> kCollectives = {
    {"MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER},
    {"MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST},
    {"MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE},
    {"MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE},
    {"MPI_Gather", OTF2_COLLECTIVE_OP_GATHER},
    {"MPI_Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
    {"MPI_Scatter", OTF2_COLLECTIVE_OP_SCATTER},
    {"MPI_Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
    {"MPI_Allgather", OTF2_COLLECTIVE_OP_ALLGATHER},
    {"MPI_Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
    {"MPI_Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL},
    {"MPI_Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
    {"MPI_Alltoallw", OTF2_COLLECTIVE_OP_ALLTOALLW},
    {"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},
    {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN},
    {"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
    {"MPI_Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
};

bool ends_with(const std::string &s, const char *tail) {
  const std::string t(tail);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

const OTF2_CollectiveOp *collective_of(const std::string &op) {
  auto it = kCollectives.find(op);
  if (it == kCollectives.end() && op.rfind("MPI_I", 0) == 0) it = kCollectives.find("MPI_" + op.substr(5));
  return it == kCollectives.end() ? nullptr : &it->second;
}

OTF2_RegionRole role_of(const std::string &op) {
  static const std::map<OTF2_CollectiveOp, OTF2_RegionRole> roles = {
      {OTF2_COLLECTIVE_OP_BARRIER, OTF2_REGION_ROLE_BARRIER},
      {OTF2_COLLECTIVE_OP_BCAST, OTF2_REGION_ROLE_COLL_ONE2ALL},
      {OTF2_COLLECTIVE_OP_SCATTER, OTF2_REGION_ROLE_COLL_ONE2ALL},
      {OTF2_COLLECTIVE_OP_SCATTERV, OTF2_REGION_ROLE_COLL_ONE2ALL},
      {OTF2_COLLECTIVE_OP_REDUCE, OTF2_REGION_ROLE_COLL_ALL2ONE},
      {OTF2_COLLECTIVE_OP_GATHER, OTF2_REGION_ROLE_COLL_ALL2ONE},
      {OTF2_COLLECTIVE_OP_GATHERV, OTF2_REGION_ROLE_COLL_ALL2ONE},
      {OTF2_COLLECTIVE_OP_SCAN, OTF2_REGION_ROLE_COLL_OTHER},
      {OTF2_COLLECTIVE_OP_EXSCAN, OTF2_REGION_ROLE_COLL_OTHER},
  };
  if (const OTF2_CollectiveOp *c = collective_of(op)) {
    auto it = roles.find(*c);
    return it == roles.end() ? OTF2_RegionRole{OTF2_REGION_ROLE_COLL_ALL2ALL} : it->second;
  }
  for (const char *p2p : {"send", "recv", "Send", "Recv"})
    if (op.find(p2p) != std::string::npos) return OTF2_REGION_ROLE_POINT2POINT;
  return OTF2_REGION_ROLE_FUNCTION;
}

namespace {

// One rank's events of one thread, written to its location.
class RankWriter {
 public:
  RankWriter(Plan &p, const Writer &wr, int32_t rank, const std::vector<Event> &ev,
             const std::vector<RequestRecord> &requests, const std::vector<CompletionRecord> &completions,
             std::vector<StepRecord> steps, const Clock &clock, bool truncated)
      : p(p), wr(wr), rank(rank), ev(ev), clock(clock), truncated(truncated), steps(std::move(steps)) {
    for (const auto &q : requests) {
      request_of[q.id] = &q;
      if (q.event >= 0 && static_cast<size_t>(q.event) < ev.size() &&
          !ends_with(p.st.ops()[ev[static_cast<size_t>(q.event)].op], "_init"))
        activated.emplace(q.event, &q);
    }
    for (const auto &c : completions) completed.emplace(c.event, &c);
  }

  // Writes thread `thread`'s calls (and, for thread 0, the regions and counters).
  void write(int32_t thread, const std::vector<double> &profile) {
    const uint64_t loc = (static_cast<uint64_t>(thread) << 32) | static_cast<uint64_t>(rank);
    w = OTF2_Archive_GetEvtWriter(wr.get(), loc);
    if (!w) wr.ok(OTF2_ERROR_INVALID, "opening an event writer");
    last = INT64_MIN;
    lo = INT64_MAX, hi = INT64_MIN;
    if (thread == 0) plan_counters(profile);
    bool first = true, stopped = false;
    for (size_t i = 0; i < ev.size() && !stopped; ++i) {
      const Event &e = ev[i];
      if (e.thread != thread) continue;
      if (first && thread == 0) {
        int64_t t0 = e.t_enter;
        if (!steps.empty()) t0 = std::min(t0, steps.front().t_begin);
        program_begin(t0);
      }
      first = false;
      if (thread == 0) regions_until(e.t_enter, e.region);
      stopped = call(i, e);
    }
    if (first && thread == 0 && !steps.empty()) program_begin(steps.front().t_begin);
    if (thread == 0 && !stopped) {
      regions_until(INT64_MAX / 4, -1);
      if (!p.counters.empty() && last != INT64_MIN) {  // (program)'s own share, at the end
        for (size_t k = 0; k < cum.size(); ++k) cum[k] += root_share[k];
        metric(last);
      }
      if (!truncated && last != INT64_MIN)
        wr.ok(OTF2_EvtWriter_ProgramEnd(w, nullptr, stamp(last, false), 0), "writing ProgramEnd");
    }
    uint64_t n = 0;
    wr.ok(OTF2_EvtWriter_GetNumberOfEvents(w, &n), "counting events");
    wr.ok(OTF2_Archive_CloseEvtWriter(wr.get(), w), "closing an event file");
    p.locations.push_back({loc, rank, thread, n});
    // The clock offsets: the store's measurements, and the same line at this location's
    // first and last local time (so the reader interpolates, never extrapolates).
    std::vector<ClockRecord> pts;
    if (clock.any) {
      auto point = [&](int64_t l, int64_t err) {
        ClockRecord c;
        c.local_init_ns = l;
        c.offset_init_ns = clock_offset_at(clock.c, l);
        c.error_init_ns = err;
        pts.push_back(c);
      };
      if (lo != INT64_MAX) point(lo, clock.c.error_init_ns);
      point(clock.c.local_init_ns, clock.c.error_init_ns);
      if (clock.c.local_fin_ns > clock.c.local_init_ns) point(clock.c.local_fin_ns, clock.c.error_fin_ns);
      if (hi != INT64_MIN) point(hi, clock.c.error_fin_ns);
      std::sort(pts.begin(), pts.end(),
                [](const ClockRecord &a, const ClockRecord &b) { return a.local_init_ns < b.local_init_ns; });
      pts.erase(
          std::unique(pts.begin(), pts.end(),
                      [](const ClockRecord &a, const ClockRecord &b) { return a.local_init_ns == b.local_init_ns; }),
          pts.end());
    }
    p.clock_points.push_back(std::move(pts));
  }

 private:
  Plan &p;
  const Writer &wr;
  int32_t rank;
  const std::vector<Event> &ev;
  const Clock &clock;
  bool truncated;
  std::vector<StepRecord> steps;  // thread 0's region visits, by begin (outer first)
  std::map<int64_t, const RequestRecord *> request_of;
  std::multimap<int64_t, const RequestRecord *> activated;
  std::multimap<int64_t, const CompletionRecord *> completed;
  OTF2_EvtWriter *w = nullptr;
  int64_t last = INT64_MIN;                // store time of the last record (records never go back in time)
  int64_t lo = INT64_MAX, hi = INT64_MIN;  // local times written
  std::vector<const StepRecord *> open;
  size_t next_step = 0;
  // Counters: per store region, the share added at each Leave; (program)'s own share.
  std::vector<std::vector<double>> share;
  std::vector<double> root_share, cum;
  std::unique_ptr<OTF2_AttributeList, OTF2_ErrorCode (*)(OTF2_AttributeList *)> attrs{nullptr,
                                                                                      OTF2_AttributeList_Delete};

  OTF2_TimeStamp stamp(int64_t t, bool advance = true) {
    t = std::max(t, last);
    if (advance) last = t;
    const int64_t l = std::max<int64_t>(0, clock.local(t));
    lo = std::min(lo, l), hi = std::max(hi, l);
    p.t_max = std::max(p.t_max, t + p.start);
    return static_cast<OTF2_TimeStamp>(l);
  }

  void program_begin(int64_t t) {
    wr.ok(OTF2_EvtWriter_ProgramBegin(w, nullptr, stamp(t), kCommandString, 0, nullptr), "writing ProgramBegin");
  }

  // The counter timeline: each visit of region R adds R's exclusive count / its visits at
  // its Leave, so the growth from Enter to Leave summed over R's visits is R's inclusive
  // count (rounded to whole counts as the timeline goes).
  void plan_counters(const std::vector<double> &profile) {
    const size_t nc = p.counters.size(), nr = p.st.regions().size();
    cum.assign(nc, 0.0);
    root_share.assign(nc, 0.0);
    share.assign(nr, std::vector<double>(nc, 0.0));
    if (!nc) return;
    std::vector<int64_t> visits(nr, 0);
    for (const auto &s : steps)
      if (s.region >= 0 && static_cast<size_t>(s.region) < nr) ++visits[static_cast<size_t>(s.region)];
    for (size_t k = 0; k < nc; ++k)
      for (size_t r = 0; r < nr; ++r) {
        double excl = profile[k * nr + r];
        for (size_t c = 0; c < nr; ++c)
          if (p.st.regions()[c].parent == static_cast<int32_t>(r) && c != r) excl -= profile[k * nr + c];
        if (r == 0)
          root_share[k] = excl;
        else if (visits[r] > 0)
          share[r][k] = excl / static_cast<double>(visits[r]);
        else
          root_share[k] += excl;
      }
  }

  void metric(int64_t t) {
    if (p.counters.empty()) return;
    std::vector<OTF2_Type> types(p.counters.size(), OTF2_TYPE_UINT64);
    std::vector<OTF2_MetricValue> values(p.counters.size());
    for (size_t k = 0; k < cum.size(); ++k)
      values[k].unsigned_int = static_cast<uint64_t>(std::llround(std::max(0.0, cum[k])));
    wr.ok(
        OTF2_EvtWriter_Metric(w, nullptr, stamp(t), 0, static_cast<uint8_t>(types.size()), types.data(), values.data()),
        "writing a Metric");
  }

  void enter_region(const StepRecord &s) {
    metric(s.t_begin);
    wr.ok(OTF2_EvtWriter_Enter(w, nullptr, stamp(s.t_begin), p.region_of[static_cast<size_t>(s.region)]),
          "writing an Enter");
    open.push_back(&s);
  }
  void leave_region() {
    const StepRecord &s = *open.back();
    if (!p.counters.empty())
      for (size_t k = 0; k < cum.size(); ++k) cum[k] += share[static_cast<size_t>(s.region)][k];
    metric(s.t_end);
    wr.ok(OTF2_EvtWriter_Leave(w, nullptr, stamp(s.t_end), p.region_of[static_cast<size_t>(s.region)]),
          "writing a Leave");
    open.pop_back();
  }

  // Closes the open regions that end by t, then opens those that begin by t; `region` is
  // the innermost region of the call at t (checked: the call must be inside it).
  void regions_until(int64_t t, int32_t region) {
    for (;;) {
      while (!open.empty() && open.back()->t_end <= t &&
             (next_step >= steps.size() || open.back()->t_end <= steps[next_step].t_begin))
        leave_region();
      if (next_step < steps.size() && steps[next_step].t_begin <= t) {
        enter_region(steps[next_step++]);
        continue;
      }
      break;
    }
    if (region >= 0 && (open.empty() ? 0 : open.back()->region) != region)
      ++p.out.unwritten["MPI calls outside every recorded visit of their region (imported under the enclosing one)"];
  }

  uint32_t comm_rank(int32_t comm, int32_t world, bool remote = false) const {
    const auto &comms = p.st.comms();
    if (comm < 0 || static_cast<size_t>(comm) >= comms.size()) return static_cast<uint32_t>(world);
    const auto &m = remote ? comms[static_cast<size_t>(comm)].remote : comms[static_cast<size_t>(comm)].members;
    auto it = std::find(m.begin(), m.end(), world);
    return it == m.end() ? kNoRank : static_cast<uint32_t>(it - m.begin());
  }
  OTF2_CommRef comm_ref(int32_t comm) const {
    if (comm < 0) return 0;  // MPI_COMM_WORLD
    if (static_cast<size_t>(comm) < p.comm_written.size() && p.comm_written[static_cast<size_t>(comm)])
      return static_cast<OTF2_CommRef>(comm);
    return OTF2_UNDEFINED_COMM;
  }

  // The attributes naming call site `site` of the store (none for a call without one).
  OTF2_AttributeList *site_attributes(uint64_t site) {
    if (site >= p.sites.size()) return nullptr;
    const Plan::Site &s = p.sites[site];
    const CallSite &c = p.st.callsites()[site];
    if (!attrs) attrs.reset(OTF2_AttributeList_New());
    OTF2_AttributeList *a = attrs.get();
    if (!a) wr.ok(OTF2_ERROR_MEM_ALLOC_FAILED, "making an attribute list");
    OTF2_AttributeList_RemoveAllAttributes(a);
    if (s.location != OTF2_UNDEFINED_SOURCE_CODE_LOCATION)
      wr.ok(OTF2_AttributeList_AddSourceCodeLocationRef(a, kSiteLocation, s.location), "adding an attribute");
    if (s.function != OTF2_UNDEFINED_STRING) {
      wr.ok(OTF2_AttributeList_AddStringRef(a, kSiteFunction, s.function), "adding an attribute");
      wr.ok(OTF2_AttributeList_AddUint64(a, kSiteFunctionOffset, c.fn_offset), "adding an attribute");
    }
    if (s.module != OTF2_UNDEFINED_STRING) {
      wr.ok(OTF2_AttributeList_AddStringRef(a, kSiteModule, s.module), "adding an attribute");
      wr.ok(OTF2_AttributeList_AddUint64(a, kSiteOffset, c.offset), "adding an attribute");
    }
    if (OTF2_AttributeList_GetNumberOfElements(a) == 0) return nullptr;
    ++p.sited_calls;
    return a;
  }

  // Requests the call starts; true when a record names one.
  bool start_requests(size_t i, const Event &e, bool inter) {
    bool carried = false;
    for (auto [it, end] = activated.equal_range(static_cast<int64_t>(i)); it != end; ++it) {
      const RequestRecord &q = *it->second;
      const auto id = static_cast<uint64_t>(q.id);
      if (q.kind == kReqSend) {
        if (q.peer < 0) continue;  // MPI_PROC_NULL: no message
        wr.ok(OTF2_EvtWriter_MpiIsend(w, nullptr, stamp(e.t_enter), comm_rank(q.comm, q.peer, inter), comm_ref(q.comm),
                                      static_cast<uint32_t>(q.tag), static_cast<uint64_t>(q.bytes), id),
              "writing an MpiIsend");
      } else if (q.kind == kReqRecv) {
        if (q.peer == -1) continue;
        wr.ok(OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, stamp(e.t_enter), id), "writing an MpiIrecvRequest");
      } else if (q.kind == kReqCollective) {
        wr.ok(OTF2_EvtWriter_NonBlockingCollectiveRequest(w, nullptr, stamp(e.t_enter), id),
              "writing a NonBlockingCollectiveRequest");
      } else {
        ++p.out.unwritten["requests of other kinds (generalized, I/O)"];
        continue;
      }
      carried = true;
    }
    return carried;
  }

  // Requests the call completes (and the receive half of a Sendrecv); true when it
  // completes any.
  bool complete_requests(size_t i, const Event &e, const std::string &op, bool inter) {
    bool completes = false;
    for (auto [it, end] = completed.equal_range(static_cast<int64_t>(i)); it != end; ++it) {
      const CompletionRecord &c = *it->second;
      completes = true;
      if (c.request < 0) {  // the receive half of a Sendrecv
        if (c.source < 0) continue;
        wr.ok(OTF2_EvtWriter_MpiRecv(w, nullptr, stamp(e.t_exit), comm_rank(e.comm, c.source, inter), comm_ref(e.comm),
                                     static_cast<uint32_t>(c.tag), static_cast<uint64_t>(c.bytes)),
              "writing an MpiRecv");
        continue;
      }
      auto q = request_of.find(c.request);
      const auto id = static_cast<uint64_t>(c.request);
      if (q == request_of.end()) {
        ++p.out.unwritten["completions of requests never started"];
      } else if (c.cancelled) {
        wr.ok(OTF2_EvtWriter_MpiRequestCancelled(w, nullptr, stamp(e.t_exit), id), "writing an MpiRequestCancelled");
      } else if (q->second->kind == kReqSend) {
        if (q->second->peer >= 0)
          wr.ok(OTF2_EvtWriter_MpiIsendComplete(w, nullptr, stamp(e.t_exit), id), "writing an MpiIsendComplete");
      } else if (q->second->kind == kReqRecv) {
        if (c.source >= 0) {
          const int32_t qc = q->second->comm;
          wr.ok(OTF2_EvtWriter_MpiIrecv(w, nullptr, stamp(e.t_exit), comm_rank(qc, c.source, inter), comm_ref(qc),
                                        static_cast<uint32_t>(c.tag), static_cast<uint64_t>(c.bytes), id),
                "writing an MpiIrecv");
        } else if (q->second->peer != -1) {
          ++p.out.unwritten["receive completions without a source"];
        }
      } else if (q->second->kind == kReqCollective) {
        const RequestRecord &r = *q->second;
        const std::string &started = r.event >= 0 && static_cast<size_t>(r.event) < ev.size()
                                         ? p.st.ops()[ev[static_cast<size_t>(r.event)].op]
                                         : op;
        const OTF2_CollectiveOp *k = collective_of(started);
        wr.ok(OTF2_EvtWriter_NonBlockingCollectiveComplete(
                  w, nullptr, stamp(e.t_exit), k ? *k : OTF2_CollectiveOp{OTF2_COLLECTIVE_OP_BARRIER}, comm_ref(r.comm),
                  r.peer >= 0 ? comm_rank(r.comm, r.peer) : kNoRank, static_cast<uint64_t>(r.bytes), 0, id),
              "writing a NonBlockingCollectiveComplete");
      }
    }
    return completes;
  }

  // One call with the MPI records inside; true when the rank died in it (nothing follows).
  bool call(size_t i, const Event &e) {
    const std::string &op = p.st.ops()[e.op];
    const uint32_t region = p.op_region(e.op);
    const bool nomsg = (e.flags & kProcNull) != 0, inter = (e.flags & kInterComm) != 0;
    const bool interrupted = (e.flags & kInterrupted) != 0;
    bool carried = false;  // a record names the call's partner or communicator
    if (e.flags & (kWildcardSource | kWildcardTag))
      ++p.out.unwritten["wildcard marks of receives (OTF2 records the matched source and tag only)"];
    wr.ok(OTF2_EvtWriter_Enter(w, site_attributes(e.site), stamp(e.t_enter), region), "writing an Enter");
    ++p.out.calls;
    const uint32_t peer = e.peer >= 0 ? comm_rank(e.comm, e.peer, inter) : kNoRank;
    const OTF2_CollectiveOp *coll = collective_of(op);
    const bool blocking_coll = coll && kCollectives.count(op);
    if (kSends.count(op) && !nomsg && e.peer >= 0) {
      wr.ok(OTF2_EvtWriter_MpiSend(w, nullptr, stamp(e.t_enter), peer, comm_ref(e.comm), static_cast<uint32_t>(e.tag),
                                   static_cast<uint64_t>(e.bytes)),
            "writing an MpiSend");
      carried = true;
    } else if (op.rfind("MPI_Sendrecv", 0) == 0 && !nomsg && e.peer >= 0) {
      wr.ok(OTF2_EvtWriter_MpiSend(w, nullptr, stamp(e.t_enter), peer, comm_ref(e.comm), static_cast<uint32_t>(e.tag),
                                   static_cast<uint64_t>(std::max<int64_t>(0, e.bytes - e.bytes_recv))),
            "writing an MpiSend");
      carried = true;
    }
    if (blocking_coll || (e.flags & kTagIsComm)) {
      wr.ok(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, stamp(e.t_enter)), "writing an MpiCollectiveBegin");
      carried = true;
    }
    carried |= start_requests(i, e, inter);
    if (interrupted) {  // the rank died in the call: no completion, no Leave; the measurement ends then
      wr.ok(OTF2_EvtWriter_MeasurementOnOff(w, nullptr, stamp(e.t_exit), OTF2_MEASUREMENT_OFF),
            "writing a MeasurementOnOff");
      return true;
    }
    if (op == "MPI_Recv" && !nomsg && e.peer >= 0) {
      wr.ok(OTF2_EvtWriter_MpiRecv(w, nullptr, stamp(e.t_exit), peer, comm_ref(e.comm), static_cast<uint32_t>(e.tag),
                                   static_cast<uint64_t>(e.bytes_recv)),
            "writing an MpiRecv");
      carried = true;
    }
    const bool completes = complete_requests(i, e, op, inter);
    if ((e.flags & kNoMatch) && !completes)
      wr.ok(OTF2_EvtWriter_MpiRequestTest(w, nullptr, stamp(e.t_exit),
                                          static_cast<uint64_t>(std::max<int64_t>(0, e.request))),
            "writing an MpiRequestTest");
    if (e.flags & kTagIsComm) {
      if (e.tag >= 0 && comm_ref(e.tag) != OTF2_UNDEFINED_COMM) {
        p.created.insert(e.tag);
        wr.ok(OTF2_EvtWriter_CommCreate(w, nullptr, stamp(e.t_exit), comm_ref(e.tag)), "writing a CommCreate");
      }
      wr.ok(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, stamp(e.t_exit), OTF2_COLLECTIVE_OP_CREATE_HANDLE,
                                            comm_ref(e.comm), kNoRank, 0, 0),
            "writing an MpiCollectiveEnd");
    } else if (blocking_coll) {
      wr.ok(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, stamp(e.t_exit), *coll, comm_ref(e.comm),
                                            e.peer >= 0 ? peer : kNoRank,
                                            static_cast<uint64_t>(std::max<int64_t>(0, e.bytes - e.bytes_recv)),
                                            static_cast<uint64_t>(e.bytes_recv)),
            "writing an MpiCollectiveEnd");
    }
    if (!carried && !nomsg && (e.peer >= 0 || e.comm > 0)) {
      ++p.silent_calls;
      p.silent_ops.insert(op);
    }
    wr.ok(OTF2_EvtWriter_Leave(w, nullptr, stamp(e.t_exit), region), "writing a Leave");
    return false;
  }
};

}  // namespace

void write_rank(Plan &p, const Writer &wr, int32_t rank, const std::vector<Event> &ev,
                const std::vector<RequestRecord> &requests, const std::vector<CompletionRecord> &completions,
                std::vector<StepRecord> steps, const Clock &clock, bool truncated, const std::vector<double> &profile) {
  std::set<int32_t> threads{0};
  for (const auto &e : ev) threads.insert(e.thread);
  RankWriter rw(p, wr, rank, ev, requests, completions, std::move(steps), clock, truncated);
  for (int32_t t : threads) rw.write(t, profile);
}

}  // namespace perfsift::io::otf2_write
