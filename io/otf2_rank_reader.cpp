#include "io/otf2_rank_reader.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "io/region_path.h"

namespace perfsift::io::otf2_read {

namespace {

// Kinds of records that are not mapped, counted by the generic callback below.
const char *const kUnmappedKinds[] = {
    "RMA events",
    "OpenMP and thread events",
    "I/O events",
    "parameter events",
    "calling-context (unwinding) events",
    "nonblocking-collective events",
    "measurement on/off markers",
    "buffer flushes",
    "records of kinds unknown to this OTF2 version",
};
enum UnmappedKind { kRma, kThread, kIo, kParam, kContext, kNbc, kOnOff, kFlush, kUnknown };

struct Frame {
  int32_t node;  // region tree node (user regions), or -1 for an MPI call
  int64_t t0;
  double mpi_time, sent, recv;  // the rank's totals at entry
  std::vector<double> counters;
};

// One location's events into one RankTrace.
struct RankReader {
  const Defs &d;
  const Comms &comms;
  const std::vector<std::string> &op_names;
  const std::unordered_map<std::string, uint16_t> &op_index;
  const std::vector<std::string> &extra_ops;
  std::map<std::string, int64_t> &unmapped;
  const std::vector<std::string> &metric_names;              // PAPI and other counters, profile order
  const std::unordered_map<uint32_t, int32_t> &metric_slot;  // metric member -> index in metric_names
  RankTrace &tr;
  std::string program;  // from ProgramBegin

  RankReader(const Defs &d, const Comms &comms, const std::vector<std::string> &op_names,
             const std::unordered_map<std::string, uint16_t> &op_index, const std::vector<std::string> &extra_ops,
             std::map<std::string, int64_t> &unmapped, const std::vector<std::string> &metric_names,
             const std::unordered_map<uint32_t, int32_t> &metric_slot, RankTrace &tr)
      : d(d),
        comms(comms),
        op_names(op_names),
        op_index(op_index),
        extra_ops(extra_ops),
        unmapped(unmapped),
        metric_names(metric_names),
        metric_slot(metric_slot),
        tr(tr),
        counters(metric_names.size(), 0.0) {}

  std::map<std::pair<int32_t, std::string>, int32_t> children;
  std::vector<int32_t> parent{-1};
  std::vector<std::string> node_name{""};  // region tree node -> its region's name ("" for the root)
  std::vector<Frame> stack;
  int mpi_depth = 0;
  Event ev;
  bool in_call = false, call_completed = false, call_tested = false;
  std::unordered_map<uint64_t, int64_t> active;  // OTF2 request id -> our request id
  int64_t next_request = 0;
  double mpi_time = 0, sent = 0, recv = 0;
  std::vector<double> counters;
  int64_t first_t = INT64_MAX, last_t = INT64_MIN;

  int64_t ns(OTF2_TimeStamp t) const {
    const long double ticks = static_cast<long double>(t) - static_cast<long double>(d.offset);
    return static_cast<int64_t>(std::llround(ticks * 1e9L / static_cast<long double>(d.resolution)));
  }
  size_t nm() const { return kBuiltinMetricCount + metric_names.size(); }
  double &prof(int32_t node, int m) { return tr.profile[static_cast<size_t>(node) * nm() + static_cast<size_t>(m)]; }
  void seen(OTF2_TimeStamp t) {
    const int64_t v = ns(t);
    first_t = std::min(first_t, v);
    last_t = std::max(last_t, v);
  }

  int32_t node(int32_t up, const std::string &name) {
    auto [it, fresh] = children.emplace(std::make_pair(up, name), static_cast<int32_t>(tr.region_paths.size()));
    if (fresh) {
      tr.region_paths.push_back(child_region_path(tr.region_paths[static_cast<size_t>(up)], up == 0, name));
      parent.push_back(up);
      node_name.push_back(name);
      tr.profile.resize(tr.region_paths.size() * nm(), 0.0);
    }
    return it->second;
  }
  int32_t current_node() const {
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
      if (it->node >= 0) return it->node;
    return 0;
  }
  uint16_t op(const std::string &name) const { return op_index.at(name); }  // every MPI region is listed
  // A rank within communicator `c` as a world rank, or -1.
  int32_t world_rank(OTF2_CommRef c, uint32_t r, int32_t &comm_index) {
    comm_index = -1;
    auto it = comms.index.find(c);
    if (it == comms.index.end()) {
      ++unmapped["messages on undefined or intercommunicators (peer unknown)"];
      return -1;
    }
    comm_index = it->second;
    if (comms.self[static_cast<size_t>(comm_index)]) return r == 0 ? tr.rank : -1;
    const auto &m = comms.records[static_cast<size_t>(comm_index)].members;
    if (r >= m.size()) {
      ++unmapped["messages to ranks outside their communicator"];
      return -1;
    }
    return m[r];
  }
  bool call() {
    if (in_call) return true;
    ++unmapped["MPI records outside an MPI region"];
    return false;
  }

  // The call site named by an MPI call's Enter attributes: perfsift's own
  // (perfsift::call_site*, written by `perfsift export`), else any attribute of type
  // SOURCE_CODE_LOCATION (file and line). Its local id, or kNoSite.
  static constexpr uint64_t kNoSite = UINT64_MAX;
  // Per distinct set of attribute values (perfsift's location, function and module
  // references and offsets; another tool's location and the enclosing region): its id.
  std::map<std::array<uint64_t, 7>, uint64_t> site_ids;
  uint64_t call_site(const OTF2_AttributeList *attrs) {
    const uint32_t n = attrs && !d.attributes.empty() ? OTF2_AttributeList_GetNumberOfElements(attrs) : 0;
    if (n == 0) return kNoSite;
    constexpr uint64_t kNone = UINT64_MAX;
    std::array<uint64_t, 7> key{kNone, kNone, kNone, 0, 0, kNone, kNone};  // roles 1-5, any location, node
    bool found = false;
    for (uint32_t k = 0; k < n; ++k) {
      OTF2_AttributeRef id;
      OTF2_Type type;
      OTF2_AttributeValue v;
      if (OTF2_AttributeList_GetAttributeByIndex(attrs, k, &id, &type, &v) != OTF2_SUCCESS) continue;
      auto def = d.attributes.find(id);
      if (def == d.attributes.end()) continue;
      found = true;
      switch (def->second) {
        case Defs::kSiteLocation:
          key[0] = v.sourceCodeLocationRef;
          break;
        case Defs::kSiteFunction:
          key[1] = v.stringRef;
          break;
        case Defs::kSiteModule:
          key[2] = v.stringRef;
          break;
        case Defs::kSiteOffset:
          key[3] = v.uint64;
          break;
        case Defs::kSiteFnOffset:
          key[4] = v.uint64;
          break;
        case Defs::kAnyLocation:
          if (key[5] == kNone) key[5] = v.sourceCodeLocationRef;
          break;
        default:
          break;
      }
    }
    if (!found) return kNoSite;
    const bool ours = key[0] != kNone || key[1] != kNone || key[2] != kNone || key[3] || key[4];
    if (ours)
      key[5] = kNone;
    else
      key[6] = static_cast<uint64_t>(current_node());  // another tool's location: the function is the region's
    auto [it, fresh] = site_ids.emplace(key, tr.callsites.size());
    if (!fresh) return it->second;
    CallSite c;
    auto location = [&](uint64_t ref) {
      auto l = ref == kNone ? d.source_locations.end() : d.source_locations.find(static_cast<uint32_t>(ref));
      if (l == d.source_locations.end()) return;
      c.file = d.str(l->second.first);
      c.line = static_cast<int32_t>(std::min<uint32_t>(l->second.second, INT32_MAX));
    };
    location(ours ? key[0] : key[5]);
    if (key[1] != kNone) c.function = d.str(static_cast<uint32_t>(key[1]));
    if (key[2] != kNone) c.module = d.str(static_cast<uint32_t>(key[2]));
    c.offset = key[3], c.fn_offset = key[4];
    // The module names a file that the store's writer may hand to addr2line: no quotes.
    std::replace(c.module.begin(), c.module.end(), '\'', '?');
    if (c.module.empty() && c.offset == 0) {
      // A source location only (another tool): the function is the innermost enclosing
      // region (Score-P's compiler instrumentation makes one per function); the store
      // tells call sites apart by module and offset, so the offset is a hash of file and line.
      if (c.function.empty()) c.function = node_name[static_cast<size_t>(current_node())];
      uint64_t h = 1469598103934665603ull;
      for (unsigned char ch : c.file + ":" + std::to_string(c.line)) h = (h ^ ch) * 1099511628211ull;
      c.offset = h;
    }
    tr.callsites.push_back(std::move(c));
    return it->second;
  }

  void enter(OTF2_TimeStamp t, OTF2_RegionRef region, const OTF2_AttributeList *attrs) {
    seen(t);
    auto it = d.regions.find(region);
    const RegionDef *r = it == d.regions.end() ? nullptr : &it->second;
    Frame f{-1, ns(t), mpi_time, sent, recv, counters};
    if (r && r->mpi) {
      if (mpi_depth++ == 0) {
        ev = Event{};
        ev.t_enter = f.t0;
        ev.region = current_node();
        ev.op = op(r->name);
        ev.site = call_site(attrs);
        in_call = true;
        call_completed = call_tested = false;
      }
    } else {
      f.node = node(current_node(), r ? r->name : "region " + std::to_string(region));
    }
    stack.push_back(std::move(f));
  }

  void leave(OTF2_TimeStamp t) {
    seen(t);
    if (stack.empty()) {
      ++unmapped["Leave records without an Enter"];
      return;
    }
    leave_at(ns(t));
  }
  void leave_at(int64_t now) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    if (f.node < 0) {
      if (--mpi_depth == 0) finish_call(now);
      return;
    }
    prof(f.node, kVisits) += 1;
    const double wall = static_cast<double>(now - f.t0) * 1e-9, mpi = mpi_time - f.mpi_time;
    prof(f.node, kWall) += wall;
    prof(f.node, kCpu) += std::max(0.0, wall - mpi);
    prof(f.node, kMpiTime) += mpi;
    prof(f.node, kMpiBytesSent) += sent - f.sent;
    prof(f.node, kMpiBytesRecv) += recv - f.recv;
    for (size_t k = 0; k < counters.size(); ++k)
      prof(f.node, kBuiltinMetricCount + static_cast<int>(k)) += counters[k] - f.counters[k];
    tr.steps.push_back({f.node, -1, f.t0, now});
  }

  void finish_call(int64_t now) {
    ev.t_exit = std::max(ev.t_enter, now);
    if (call_tested && !call_completed) ev.flags |= kNoMatch;
    mpi_time += static_cast<double>(ev.t_exit - ev.t_enter) * 1e-9;
    sent += static_cast<double>(ev.bytes - ev.bytes_recv);
    recv += static_cast<double>(ev.bytes_recv);
    tr.events.push_back(ev);
    in_call = false;
  }

  int64_t event_index() const { return static_cast<int64_t>(tr.events.size()); }

  void send(uint32_t receiver, OTF2_CommRef c, uint32_t tag, uint64_t len, const uint64_t *request) {
    if (!call()) return;
    int32_t ci;
    const int32_t peer = world_rank(c, receiver, ci);
    if (ev.peer < 0) ev.peer = peer, ev.tag = static_cast<int32_t>(tag), ev.comm = ci;
    ev.bytes += static_cast<int64_t>(len);
    if (request) {
      const int64_t id = next_request++;
      active[*request] = id;
      tr.requests.push_back(
          {id, event_index(), peer, static_cast<int32_t>(tag), ci, kReqSend, static_cast<int64_t>(len)});
      if (ev.request < 0) ev.request = id;
    }
  }

  void receive(uint32_t sender, OTF2_CommRef c, uint32_t tag, uint64_t len, const uint64_t *request) {
    if (!call()) return;
    int32_t ci;
    const int32_t peer = world_rank(c, sender, ci);
    ev.bytes += static_cast<int64_t>(len);
    ev.bytes_recv += static_cast<int64_t>(len);
    const std::string &name = ev.op < op_names.size() ? op_names[ev.op] : extra_ops[ev.op - op_names.size()];
    if (request) {  // a nonblocking receive completes here
      auto it = active.find(*request);
      if (it == active.end()) {
        ++unmapped["completions of requests never started"];
        return;
      }
      complete(it->second, peer, static_cast<int32_t>(tag), static_cast<int64_t>(len), 0);
      // OTF2 does not say whom the receive was posted for: the matched source stands in.
      // (Request ids are their rows: ids count up as rows are added.)
      auto &rq = tr.requests[static_cast<size_t>(it->second)];
      if (rq.kind == kReqRecv) {
        rq.peer = peer, rq.tag = static_cast<int32_t>(tag), rq.comm = ci, rq.bytes = static_cast<int64_t>(len);
        if (rq.event < event_index()) {
          auto &posting = tr.events[static_cast<size_t>(rq.event)];
          if (posting.peer == -2) posting.peer = peer, posting.tag = rq.tag, posting.comm = ci;
        }
      }
      active.erase(it);
    } else if (name.rfind("MPI_Sendrecv", 0) == 0) {  // the receive half: a completion of no request
      tr.completions.push_back({event_index(), -1, peer, static_cast<int32_t>(tag), static_cast<int64_t>(len), 0, 0});
    } else {
      ev.peer = peer, ev.tag = static_cast<int32_t>(tag), ev.comm = ci;
    }
  }

  void complete(int64_t id, int32_t source, int32_t tag, int64_t bytes, int32_t cancelled) {
    tr.completions.push_back({event_index(), id, source, tag, bytes, cancelled, 0});
    if (ev.request < 0) ev.request = id;
    call_completed = true;
  }

  void request_posted(uint64_t request) {
    if (!call()) return;
    const int64_t id = next_request++;
    active[request] = id;
    tr.requests.push_back({id, event_index(), -2, -1, -1, kReqRecv, 0});
    if (ev.request < 0) ev.request = id, ev.peer = -2;
  }

  void request_done(uint64_t request, bool cancelled) {
    if (!call()) return;
    auto it = active.find(request);
    if (it == active.end()) {
      ++unmapped["completions of requests never started"];
      return;
    }
    complete(it->second, -1, -1, 0, cancelled ? 1 : 0);
    active.erase(it);
  }

  void collective_end(OTF2_CommRef c, uint32_t root, uint64_t sent_bytes, uint64_t recv_bytes) {
    if (!call()) return;
    int32_t ci = -1;
    auto it = comms.index.find(c);
    if (it != comms.index.end()) ci = it->second;
    ev.comm = ci;
    if (root != OTF2_UNDEFINED_UINT32 && ci >= 0) {
      int32_t unused;
      ev.peer = world_rank(c, root, unused);
    }
    ev.bytes += static_cast<int64_t>(sent_bytes + recv_bytes);
    ev.bytes_recv += static_cast<int64_t>(recv_bytes);
  }

  void metric(OTF2_MetricRef cls, uint8_t n, const OTF2_Type *types, const OTF2_MetricValue *values) {
    auto it = d.metric_classes.find(cls);
    if (it == d.metric_classes.end()) {
      ++unmapped["metric records of undefined metric classes"];
      return;
    }
    for (uint8_t k = 0; k < n && k < it->second.size(); ++k) {
      auto slot = metric_slot.find(it->second[k]);
      if (slot == metric_slot.end()) {
        ++unmapped["metric values that are not accumulated counters"];
        continue;
      }
      double v = 0;
      if (types[k] == OTF2_TYPE_UINT64)
        v = static_cast<double>(values[k].unsigned_int);
      else if (types[k] == OTF2_TYPE_INT64)
        v = static_cast<double>(values[k].signed_int);
      else
        v = values[k].floating_point;
      counters[static_cast<size_t>(slot->second)] = v;
    }
  }

  // The end of the location's records: the root region spans them; open regions close at
  // the last record (a rank that stopped early).
  void finish() {
    const bool open = !stack.empty();
    while (!stack.empty()) {
      if (in_call && mpi_depth == 1 && stack.back().node < 0) ev.flags |= kInterrupted;
      leave_at(last_t);
    }
    tr.complete = !open;
    if (first_t == INT64_MAX) first_t = last_t = 0;
    prof(0, kVisits) = 1;
    prof(0, kWall) = static_cast<double>(last_t - first_t) * 1e-9;
    prof(0, kMpiTime) = mpi_time;
    prof(0, kCpu) = std::max(0.0, prof(0, kWall) - mpi_time);
    prof(0, kMpiBytesSent) = sent;
    prof(0, kMpiBytesRecv) = recv;
    for (size_t k = 0; k < counters.size(); ++k) prof(0, kBuiltinMetricCount + static_cast<int>(k)) = counters[k];
  }
};

RankReader &rr(void *ud) { return *static_cast<RankReader *>(ud); }

#define EVT_CB(name, ...)                                                                         \
  OTF2_CallbackCode name(OTF2_LocationRef, [[maybe_unused]] OTF2_TimeStamp t, uint64_t, void *ud, \
                         [[maybe_unused]] OTF2_AttributeList *attrs, __VA_ARGS__) {               \
    RankReader &r = rr(ud);                                                                       \
    r.seen(t);
#define EVT_CB0(name)                                                                             \
  OTF2_CallbackCode name(OTF2_LocationRef, [[maybe_unused]] OTF2_TimeStamp t, uint64_t, void *ud, \
                         OTF2_AttributeList *) {                                                  \
    RankReader &r = rr(ud);                                                                       \
    r.seen(t);
#define EVT_END                 \
  return OTF2_CALLBACK_SUCCESS; \
  }

EVT_CB(ev_enter, OTF2_RegionRef region)
r.enter(t, region, attrs);
EVT_END
EVT_CB(ev_leave, OTF2_RegionRef)
r.leave(t);
EVT_END
EVT_CB(ev_send, uint32_t to, OTF2_CommRef c, uint32_t tag, uint64_t len)
r.send(to, c, tag, len, nullptr);
EVT_END
EVT_CB(ev_isend, uint32_t to, OTF2_CommRef c, uint32_t tag, uint64_t len, uint64_t req)
r.send(to, c, tag, len, &req);
EVT_END
EVT_CB(ev_isend_complete, uint64_t req)
r.request_done(req, false);
EVT_END
EVT_CB(ev_irecv_request, uint64_t req)
r.request_posted(req);
EVT_END
EVT_CB(ev_recv, uint32_t from, OTF2_CommRef c, uint32_t tag, uint64_t len)
r.receive(from, c, tag, len, nullptr);
EVT_END
EVT_CB(ev_irecv, uint32_t from, OTF2_CommRef c, uint32_t tag, uint64_t len, uint64_t req)
r.receive(from, c, tag, len, &req);
EVT_END
EVT_CB(ev_test, uint64_t)
r.call_tested = true;
EVT_END
EVT_CB(ev_cancelled, uint64_t req)
r.request_done(req, true);
EVT_END
EVT_CB0(ev_coll_begin)
EVT_END
EVT_CB(ev_coll_end, OTF2_CollectiveOp, OTF2_CommRef c, uint32_t root, uint64_t s, uint64_t rcv)
r.collective_end(c, root, s, rcv);
EVT_END
EVT_CB(ev_metric, OTF2_MetricRef cls, uint8_t n, const OTF2_Type *types, const OTF2_MetricValue *values)
r.metric(cls, n, types, values);
EVT_END
EVT_CB(ev_comm_create, OTF2_CommRef c)
auto it = r.comms.index.find(c);
if (r.in_call && it != r.comms.index.end()) r.ev.tag = it->second, r.ev.flags |= kTagIsComm;
EVT_END
EVT_CB(ev_comm_destroy, OTF2_CommRef)
EVT_END
EVT_CB(ev_program_begin, OTF2_StringRef name, uint32_t n, const OTF2_StringRef *args)
r.program = r.d.str(name);
for (uint32_t k = 0; k < n; ++k) r.program += " " + r.d.str(args[k]);
EVT_END
EVT_CB(ev_program_end, int64_t)
EVT_END

// Counts a record of an unmapped kind K under its name, whatever the record's fields.
template <class Fn, int K>
struct Count;
template <int K, class... A>
struct Count<OTF2_CallbackCode (*)(OTF2_LocationRef, OTF2_TimeStamp, uint64_t, void *, OTF2_AttributeList *, A...), K> {
  static OTF2_CallbackCode fn(OTF2_LocationRef, OTF2_TimeStamp t, uint64_t, void *ud, OTF2_AttributeList *, A...) {
    ++rr(ud).unmapped[kUnmappedKinds[K]];
    rr(ud).seen(t);
    return OTF2_CALLBACK_SUCCESS;
  }
};
#define COUNT(Kind, K) OTF2_EvtReaderCallbacks_Set##Kind##Callback(cb, &Count<OTF2_EvtReaderCallback_##Kind, K>::fn)

}  // namespace

OTF2_EvtReaderCallbacks *event_callbacks() {
  OTF2_EvtReaderCallbacks *cb = OTF2_EvtReaderCallbacks_New();
  OTF2_EvtReaderCallbacks_SetEnterCallback(cb, ev_enter);
  OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, ev_leave);
  OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, ev_send);
  OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, ev_isend);
  OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, ev_isend_complete);
  OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cb, ev_irecv_request);
  OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, ev_recv);
  OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, ev_irecv);
  OTF2_EvtReaderCallbacks_SetMpiRequestTestCallback(cb, ev_test);
  OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(cb, ev_cancelled);
  OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb, ev_coll_begin);
  OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, ev_coll_end);
  OTF2_EvtReaderCallbacks_SetMetricCallback(cb, ev_metric);
  OTF2_EvtReaderCallbacks_SetCommCreateCallback(cb, ev_comm_create);
  OTF2_EvtReaderCallbacks_SetCommDestroyCallback(cb, ev_comm_destroy);
  OTF2_EvtReaderCallbacks_SetProgramBeginCallback(cb, ev_program_begin);
  OTF2_EvtReaderCallbacks_SetProgramEndCallback(cb, ev_program_end);
  COUNT(Unknown, kUnknown);
  COUNT(BufferFlush, kFlush);
  COUNT(MeasurementOnOff, kOnOff);
  COUNT(OmpFork, kThread);
  COUNT(OmpJoin, kThread);
  COUNT(OmpAcquireLock, kThread);
  COUNT(OmpReleaseLock, kThread);
  COUNT(OmpTaskCreate, kThread);
  COUNT(OmpTaskSwitch, kThread);
  COUNT(OmpTaskComplete, kThread);
  COUNT(ParameterString, kParam);
  COUNT(ParameterInt, kParam);
  COUNT(ParameterUnsignedInt, kParam);
  COUNT(RmaWinCreate, kRma);
  COUNT(RmaWinDestroy, kRma);
  COUNT(RmaCollectiveBegin, kRma);
  COUNT(RmaCollectiveEnd, kRma);
  COUNT(RmaGroupSync, kRma);
  COUNT(RmaRequestLock, kRma);
  COUNT(RmaAcquireLock, kRma);
  COUNT(RmaTryLock, kRma);
  COUNT(RmaReleaseLock, kRma);
  COUNT(RmaSync, kRma);
  COUNT(RmaWaitChange, kRma);
  COUNT(RmaPut, kRma);
  COUNT(RmaGet, kRma);
  COUNT(RmaAtomic, kRma);
  COUNT(RmaOpCompleteBlocking, kRma);
  COUNT(RmaOpCompleteNonBlocking, kRma);
  COUNT(RmaOpTest, kRma);
  COUNT(RmaOpCompleteRemote, kRma);
  COUNT(ThreadFork, kThread);
  COUNT(ThreadJoin, kThread);
  COUNT(ThreadTeamBegin, kThread);
  COUNT(ThreadTeamEnd, kThread);
  COUNT(ThreadAcquireLock, kThread);
  COUNT(ThreadReleaseLock, kThread);
  COUNT(ThreadTaskCreate, kThread);
  COUNT(ThreadTaskSwitch, kThread);
  COUNT(ThreadTaskComplete, kThread);
  COUNT(ThreadCreate, kThread);
  COUNT(ThreadBegin, kThread);
  COUNT(ThreadWait, kThread);
  COUNT(ThreadEnd, kThread);
  COUNT(CallingContextEnter, kContext);
  COUNT(CallingContextLeave, kContext);
  COUNT(CallingContextSample, kContext);
  COUNT(IoCreateHandle, kIo);
  COUNT(IoDestroyHandle, kIo);
  COUNT(IoDuplicateHandle, kIo);
  COUNT(IoSeek, kIo);
  COUNT(IoChangeStatusFlags, kIo);
  COUNT(IoDeleteFile, kIo);
  COUNT(IoOperationBegin, kIo);
  COUNT(IoOperationTest, kIo);
  COUNT(IoOperationIssued, kIo);
  COUNT(IoOperationComplete, kIo);
  COUNT(IoOperationCancelled, kIo);
  COUNT(IoAcquireLock, kIo);
  COUNT(IoReleaseLock, kIo);
  COUNT(IoTryLock, kIo);
  COUNT(NonBlockingCollectiveRequest, kNbc);
  COUNT(NonBlockingCollectiveComplete, kNbc);
  return cb;
}

RankEvents read_rank_events(const Reader &reader, OTF2_EvtReaderCallbacks *callbacks, const EventMapping &m, int32_t r,
                            uint64_t loc, std::map<std::string, int64_t> &unmapped) {
  RankEvents out;
  RankTrace &tr = out.trace;
  tr.rank = r;
  tr.region_paths = {kRootRegionPath};
  tr.metric_names.assign(kMetricNames.begin(), kMetricNames.end());
  tr.metric_names.insert(tr.metric_names.end(), m.metric_names.begin(), m.metric_names.end());
  tr.profile.assign(tr.metric_names.size(), 0.0);
  for (size_t c = 0; c < m.comms.records.size(); ++c) {
    CommRecord rec = m.comms.records[c];
    if (m.comms.self[c])
      rec.key = (rec.key ^ (static_cast<uint64_t>(r) << 32)) | 0x8000000000000000ull, rec.members = {r};
    tr.comms.push_back(std::move(rec));
  }
  RankReader rd(m.d, m.comms, m.op_names, m.op_index, m.extra_ops, unmapped, m.metric_names, m.metric_slot, tr);
  OTF2_EvtReader *er = OTF2_Reader_GetEvtReader(reader.get(), loc);
  const OTF2_ErrorCode e = OTF2_Reader_RegisterEvtCallbacks(reader.get(), er, callbacks, &rd);
  const OTF2_ErrorCode re = e == OTF2_SUCCESS ? OTF2_Reader_ReadAllLocalEvents(reader.get(), er, &out.records) : e;
  reader.check(re,
               "the event file of rank " + std::to_string(r) + " (" + stem_of(reader.anchor()) + "/" +
                   std::to_string(loc) + ".evt) is truncated or damaged",
               "copy the archive again or re-run the measurement (Score-P may have been killed while writing)");
  rd.finish();
  out.program = rd.program;
  OTF2_Reader_CloseEvtReader(reader.get(), er);
  return out;
}

}  // namespace perfsift::io::otf2_read
