// A measured trace store rewritten as Score-P would have recorded the same run: one
// location per rank, Enter/Leave of the user regions (from /steps) and of every MPI call,
// with the MPI records inside (MpiSend/MpiRecv, MpiIsend/MpiIrecvRequest and their
// completions, MpiCollectiveBegin/End with root and sizes), the communicators as
// COMM_GROUP groups. For the round trip of otf2_test.py: store -> OTF2 -> perfsift import.
//
// usage: store_to_otf2 STORE DIR   ->  DIR/traces.otf2
#include <mpi.h>
#include <otf2/otf2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/region_path.h"
#include "io/trace_store.h"

namespace {

using namespace perfsift::io;

OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void *, OTF2_FileType, OTF2_LocationRef) { return 0; }
OTF2_FlushCallbacks g_flush = {pre_flush, post_flush};

void ok(OTF2_ErrorCode e, const char *what) {
  if (e != OTF2_SUCCESS) {
    std::fprintf(stderr, "store_to_otf2: %s: %s\n", what, OTF2_Error_GetName(e));
    std::exit(1);
  }
}

constexpr uint64_t kOffset = 1000000000;  // ticks (ns) before the store's time 0

const std::set<std::string> kSends = {"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend"};
const std::set<std::string> kIsends = {"MPI_Isend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend"};
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
    {"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},
    {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN},
    {"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
};

}  // namespace

namespace {

void convert(const std::string &store, const std::string &dir) {
  const TraceStore st(store);
  std::filesystem::remove_all(dir);
  const int32_t P = st.nranks();
  const auto &ops = st.ops();
  const auto &regions = st.regions();
  const auto &comms = st.comms();
  const uint32_t nregions = static_cast<uint32_t>(regions.size());  // OTF2 regions: store regions, then ops

  OTF2_Archive *ar = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                       OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!ar) ok(OTF2_ERROR_INVALID, "OTF2_Archive_Open");
  ok(OTF2_Archive_SetFlushCallbacks(ar, &g_flush, nullptr), "SetFlushCallbacks");
  ok(OTF2_Archive_SetSerialCollectiveCallbacks(ar), "SetSerialCollectiveCallbacks");
  ok(OTF2_Archive_SetCreator(ar, "Score-P 8.4"), "SetCreator");
  ok(OTF2_Archive_OpenEvtFiles(ar), "OpenEvtFiles");

  auto comm_rank = [&](int32_t comm, int32_t world) -> uint32_t {
    if (comm < 0 || static_cast<size_t>(comm) >= comms.size()) return static_cast<uint32_t>(world);
    const auto &m = comms[static_cast<size_t>(comm)].members;
    auto it = std::find(m.begin(), m.end(), world);
    return it == m.end() ? OTF2_UNDEFINED_UINT32 : static_cast<uint32_t>(it - m.begin());
  };
  auto comm_ref = [](int32_t comm) { return static_cast<OTF2_CommRef>(comm < 0 ? 0 : comm); };

  std::vector<uint64_t> counts(static_cast<size_t>(P), 0);
  int64_t t_max = 0;
  for (int32_t r = 0; r < P; ++r) {
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(ar, static_cast<uint64_t>(r));
    const auto ev = st.events(r, r + 1);
    const auto req = st.requests(r, r + 1);
    const auto comp = st.completions(r, r + 1);
    auto steps = st.steps(r, r + 1);
    std::sort(steps.begin(), steps.end(), [](const StepRecord &a, const StepRecord &b) {
      return a.t_begin != b.t_begin ? a.t_begin < b.t_begin : a.t_end > b.t_end;
    });
    std::map<int64_t, const RequestRecord *> request;
    for (const auto &q : req) request[q.id] = &q;
    std::multimap<int64_t, const CompletionRecord *> completed;
    for (const auto &c : comp) completed.emplace(c.event, &c);
    auto ts = [](int64_t t) { return static_cast<OTF2_TimeStamp>(static_cast<int64_t>(kOffset) + t); };
    std::vector<const StepRecord *> open;
    size_t next_step = 0;
    // Close the open regions that end by t, then open those that begin by t.
    auto regions_until = [&](int64_t t) {
      for (;;) {
        while (!open.empty() && open.back()->t_end <= t &&
               (next_step >= steps.size() || open.back()->t_end <= steps[next_step].t_begin)) {
          ok(OTF2_EvtWriter_Leave(w, nullptr, ts(open.back()->t_end), static_cast<uint32_t>(open.back()->region)),
             "Leave");
          open.pop_back();
        }
        if (next_step < steps.size() && steps[next_step].t_begin <= t) {
          const StepRecord &s = steps[next_step++];
          ok(OTF2_EvtWriter_Enter(w, nullptr, ts(s.t_begin), static_cast<uint32_t>(s.region)), "Enter");
          open.push_back(&s);
          continue;
        }
        break;
      }
    };
    for (size_t i = 0; i < ev.size(); ++i) {
      const Event &e = ev[i];
      regions_until(e.t_enter);
      const std::string &op = ops[e.op];
      const uint32_t region = nregions + e.op;
      ok(OTF2_EvtWriter_Enter(w, nullptr, ts(e.t_enter), region), "Enter");
      const bool nomsg = (e.flags & kProcNull) != 0;
      if (kSends.count(op) && !nomsg)
        ok(OTF2_EvtWriter_MpiSend(w, nullptr, ts(e.t_enter), comm_rank(e.comm, e.peer), comm_ref(e.comm),
                                  static_cast<uint32_t>(e.tag), static_cast<uint64_t>(e.bytes)),
           "MpiSend");
      else if (kIsends.count(op) && !nomsg && e.request >= 0)
        ok(OTF2_EvtWriter_MpiIsend(w, nullptr, ts(e.t_enter), comm_rank(e.comm, e.peer), comm_ref(e.comm),
                                   static_cast<uint32_t>(e.tag), static_cast<uint64_t>(e.bytes),
                                   static_cast<uint64_t>(e.request)),
           "MpiIsend");
      else if (op == "MPI_Irecv" && !nomsg && e.request >= 0)
        ok(OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, ts(e.t_enter), static_cast<uint64_t>(e.request)),
           "MpiIrecvRequest");
      else if (op == "MPI_Sendrecv" && !nomsg)
        ok(OTF2_EvtWriter_MpiSend(w, nullptr, ts(e.t_enter), comm_rank(e.comm, e.peer), comm_ref(e.comm),
                                  static_cast<uint32_t>(e.tag), static_cast<uint64_t>(e.bytes - e.bytes_recv)),
           "MpiSend");
      else if (auto c = kCollectives.find(op); c != kCollectives.end())
        ok(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, ts(e.t_enter)), "MpiCollectiveBegin");
      if (op == "MPI_Recv" && !nomsg)
        ok(OTF2_EvtWriter_MpiRecv(w, nullptr, ts(e.t_exit), comm_rank(e.comm, e.peer), comm_ref(e.comm),
                                  static_cast<uint32_t>(e.tag), static_cast<uint64_t>(e.bytes_recv)),
           "MpiRecv");
      for (auto [it, end] = completed.equal_range(static_cast<int64_t>(i)); it != end; ++it) {
        const CompletionRecord &c = *it->second;
        auto q = request.find(c.request);
        if (c.request < 0 && c.source >= 0) {  // the receive half of a Sendrecv
          ok(OTF2_EvtWriter_MpiRecv(w, nullptr, ts(e.t_exit), comm_rank(e.comm, c.source), comm_ref(e.comm),
                                    static_cast<uint32_t>(c.tag), static_cast<uint64_t>(c.bytes)),
             "MpiRecv");
        } else if (q != request.end() && q->second->kind == kReqSend) {
          ok(OTF2_EvtWriter_MpiIsendComplete(w, nullptr, ts(e.t_exit), static_cast<uint64_t>(c.request)),
             "MpiIsendComplete");
        } else if (q != request.end() && q->second->kind == kReqRecv && c.source >= 0) {
          ok(OTF2_EvtWriter_MpiIrecv(w, nullptr, ts(e.t_exit), comm_rank(q->second->comm, c.source),
                                     comm_ref(q->second->comm), static_cast<uint32_t>(c.tag),
                                     static_cast<uint64_t>(c.bytes), static_cast<uint64_t>(c.request)),
             "MpiIrecv");
        }
      }
      if (auto c = kCollectives.find(op); c != kCollectives.end())
        ok(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, ts(e.t_exit), c->second, comm_ref(e.comm),
                                           e.peer >= 0 ? comm_rank(e.comm, e.peer) : OTF2_UNDEFINED_UINT32,
                                           static_cast<uint64_t>(e.bytes - e.bytes_recv),
                                           static_cast<uint64_t>(e.bytes_recv)),
           "MpiCollectiveEnd");
      ok(OTF2_EvtWriter_Leave(w, nullptr, ts(e.t_exit), region), "Leave");
      t_max = std::max(t_max, e.t_exit);
    }
    regions_until(INT64_MAX / 4);
    while (!open.empty()) {
      ok(OTF2_EvtWriter_Leave(w, nullptr, ts(open.back()->t_end), static_cast<uint32_t>(open.back()->region)), "Leave");
      open.pop_back();
    }
    ok(OTF2_EvtWriter_GetNumberOfEvents(w, &counts[static_cast<size_t>(r)]), "GetNumberOfEvents");
    ok(OTF2_Archive_CloseEvtWriter(ar, w), "CloseEvtWriter");
  }
  ok(OTF2_Archive_CloseEvtFiles(ar), "CloseEvtFiles");
  ok(OTF2_Archive_OpenDefFiles(ar), "OpenDefFiles");
  for (int32_t r = 0; r < P; ++r) ok(OTF2_Archive_CloseDefWriter(ar, OTF2_Archive_GetDefWriter(ar, r)), "DefWriter");
  ok(OTF2_Archive_CloseDefFiles(ar), "CloseDefFiles");

  OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(ar);
  ok(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, kOffset, static_cast<uint64_t>(t_max),
                                               OTF2_UNDEFINED_TIMESTAMP),
     "WriteClockProperties");
  uint32_t next = 0;
  auto str = [&](const std::string &s) {
    ok(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()), "WriteString");
    return next++;
  };
  const uint32_t empty = str("");
  ok(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("Linux"), str("machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE),
     "WriteSystemTreeNode");
  for (int32_t r = 0; r < P; ++r) {
    const uint32_t n = str("MPI Rank " + std::to_string(r));
    ok(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<uint32_t>(r), n, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                               OTF2_UNDEFINED_LOCATION_GROUP),
       "WriteLocationGroup");
    ok(OTF2_GlobalDefWriter_WriteLocation(g, static_cast<uint64_t>(r), str("Master thread"),
                                          OTF2_LOCATION_TYPE_CPU_THREAD, counts[static_cast<size_t>(r)],
                                          static_cast<uint32_t>(r)),
       "WriteLocation");
  }
  for (uint32_t k = 0; k < nregions; ++k) {
    const uint32_t n = str(region_leaf_name(regions[k].path));
    ok(OTF2_GlobalDefWriter_WriteRegion(g, k, n, n, empty, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
                                        OTF2_REGION_FLAG_NONE, empty, 0, 0),
       "WriteRegion");
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    const uint32_t n = str(ops[k]);
    ok(OTF2_GlobalDefWriter_WriteRegion(g, nregions + static_cast<uint32_t>(k), n, n, empty, OTF2_REGION_ROLE_FUNCTION,
                                        OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, empty, 0, 0),
       "WriteRegion");
  }
  std::vector<uint64_t> locations;
  for (int32_t r = 0; r < P; ++r) locations.push_back(static_cast<uint64_t>(r));
  ok(OTF2_GlobalDefWriter_WriteGroup(g, 0, empty, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                     OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(P), locations.data()),
     "WriteGroup");
  for (size_t c = 0; c < comms.size(); ++c) {
    std::vector<uint64_t> m(comms[c].members.begin(), comms[c].members.end());
    ok(OTF2_GlobalDefWriter_WriteGroup(g, static_cast<uint32_t>(c + 1), empty, OTF2_GROUP_TYPE_COMM_GROUP,
                                       OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(m.size()),
                                       m.data()),
       "WriteGroup");
    ok(OTF2_GlobalDefWriter_WriteComm(g, static_cast<uint32_t>(c), str(c == 0 ? "MPI_COMM_WORLD" : "comm"),
                                      static_cast<uint32_t>(c + 1), OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
       "WriteComm");
  }
  ok(OTF2_Archive_CloseGlobalDefWriter(ar, g), "CloseGlobalDefWriter");
  ok(OTF2_Archive_Close(ar), "Close");
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: store_to_otf2 STORE DIR\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  convert(argv[1], argv[2]);  // the store is closed before MPI is finalised
  MPI_Finalize();
  return 0;
}
