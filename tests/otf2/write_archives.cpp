// Writes OTF2 archives laid out as Score-P writes them (global definitions: clock, strings,
// system tree, location groups "MPI Rank N", locations, regions with role and paradigm,
// the COMM_LOCATIONS / COMM_GROUP / COMM_SELF groups, MPI_COMM_WORLD and MPI_COMM_SELF,
// a PAPI metric; events: ProgramBegin, Enter/Leave with the PAPI counter before each,
// the MPI records inside the MPI regions) with known behaviour, for otf2_test.py.
//
// usage: write_archives DIR   ->  DIR/{late_sender,imbalance,killed,no_mpi}/traces.otf2
//
// late_sender (2 ranks): 4 rounds; rank 1 computes 50 ms in "compute", then MPI_Send to
//   rank 0, which waits in MPI_Recv from the round's start: 4 x 50 ms of Late Sender wait
//   on rank 0. Then an Irecv/Isend/Test/Waitall exchange, an MPI_Sendrecv, 1 ms in a region
//   named `io/write "x"`, on rank 0 an Irecv it cancels (MPI_Cancel, MPI_Wait), MPI_Barrier,
//   MPI_Finalize. Rank 0 also has an OpenMP fork and a
//   second thread (both not mapped: the import warns about them).
// imbalance (4 ranks): 5 iterations of "solve" (ranks 0-1 compute 100 ms, ranks 2-3 20 ms)
//   and MPI_Allreduce: ranks 2-3 wait 80 ms per iteration. Rank 3's clock runs 3 ms ahead,
//   corrected by ClockOffset records in its local definitions. Then rank 1 broadcasts 1 KiB.
// killed (2 ranks): rank 1's records end 5 ms into an MPI_Allreduce (Score-P killed with it).
// no_mpi (1 process): user regions only.
#include <otf2/otf2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kTicksPerSecond = 2000000000;  // a 2 GHz time-stamp counter
constexpr uint64_t kOffset = 987654321000;        // ticks at the start of the measurement
constexpr double kCyclesPerNs = 2.5;              // PAPI_TOT_CYC while computing

OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void *, OTF2_FileType, OTF2_LocationRef) { return 0; }

void ok(OTF2_ErrorCode e, const char *what) {
  if (e != OTF2_SUCCESS) {
    std::fprintf(stderr, "write_archives: %s: %s\n", what, OTF2_Error_GetName(e));
    std::exit(1);
  }
}

enum Region : uint32_t {
  kMain,
  kCompute,
  kSolve,
  kOddName,
  kOmpParallel,
  kInit,
  kFinalize,
  kSend,
  kRecv,
  kIsend,
  kIrecv,
  kTest,
  kWaitall,
  kSendrecv,
  kBarrier,
  kAllreduce,
  kCancel,
  kWait,
  kBcast,
  kRegions
};
struct RegionInfo {
  const char *name;
  OTF2_RegionRole role;
  OTF2_Paradigm paradigm;
};
const RegionInfo kRegionInfo[kRegions] = {
    {"main", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_COMPILER},
    {"compute", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER},
    {"solve", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER},
    {"io/write \"x\"", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER},
    {"!$omp parallel @app.c:12", OTF2_REGION_ROLE_PARALLEL, OTF2_PARADIGM_OPENMP},
    {"MPI_Init", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
    {"MPI_Finalize", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
    {"MPI_Send", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
    {"MPI_Recv", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
    {"MPI_Isend", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
    {"MPI_Irecv", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
    {"MPI_Test", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
    {"MPI_Waitall", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
    {"MPI_Sendrecv", OTF2_REGION_ROLE_POINT2POINT, OTF2_PARADIGM_MPI},
    {"MPI_Barrier", OTF2_REGION_ROLE_BARRIER, OTF2_PARADIGM_MPI},
    {"MPI_Allreduce", OTF2_REGION_ROLE_COLL_ALL2ALL, OTF2_PARADIGM_MPI},
    {"MPI_Cancel", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
    {"MPI_Wait", OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI},
    {"MPI_Bcast", OTF2_REGION_ROLE_COLL_ONE2ALL, OTF2_PARADIGM_MPI},
};
constexpr OTF2_CommRef kWorld = 0, kSelf = 1;

// One location's event writer with its clock (ns since the start) and cycle counter.
struct Loc {
  OTF2_EvtWriter *w = nullptr;
  uint64_t id = 0;
  int64_t t = 0;  // ns
  double cycles = 0;
  int64_t ahead = 0;  // ns this location's clock runs ahead of the global clock (Score-P: ClockOffset)
  OTF2_TimeStamp ts() const { return kOffset + static_cast<uint64_t>(t + ahead) * (kTicksPerSecond / 1000000000); }
  void metric() {
    OTF2_Type type = OTF2_TYPE_UINT64;
    OTF2_MetricValue v;
    v.unsigned_int = static_cast<uint64_t>(cycles);
    ok(OTF2_EvtWriter_Metric(w, nullptr, ts(), 0, 1, &type, &v), "Metric");
  }
  void enter(Region r) {
    metric();
    ok(OTF2_EvtWriter_Enter(w, nullptr, ts(), r), "Enter");
  }
  void leave(Region r) {
    metric();
    ok(OTF2_EvtWriter_Leave(w, nullptr, ts(), r), "Leave");
  }
  void work(int64_t ns) {
    t += ns;
    cycles += static_cast<double>(ns) * kCyclesPerNs;
  }
  void compute(Region r, int64_t ns) {
    enter(r);
    work(ns);
    leave(r);
  }
  void call(Region r, int64_t ns) {  // an MPI call with nothing to record inside
    enter(r);
    t += ns;
    leave(r);
  }
};

class Archive {
 public:
  Archive(const std::string &dir, int nranks, bool second_thread) : nranks(nranks) {
    std::filesystem::remove_all(dir);
    ar = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                           OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!ar) ok(OTF2_ERROR_INVALID, "OTF2_Archive_Open");
    static OTF2_FlushCallbacks flush = {pre_flush, post_flush};  // kept by the archive
    ok(OTF2_Archive_SetFlushCallbacks(ar, &flush, nullptr), "SetFlushCallbacks");
    ok(OTF2_Archive_SetSerialCollectiveCallbacks(ar), "SetSerialCollectiveCallbacks");
    ok(OTF2_Archive_SetCreator(ar, "Score-P 8.4"), "SetCreator");
    ok(OTF2_Archive_OpenEvtFiles(ar), "OpenEvtFiles");
    for (int r = 0; r < nranks; ++r) locs.push_back(open_location(static_cast<uint64_t>(r)));
    if (second_thread) thread = open_location(uint64_t{1} << 32);  // Score-P: thread 1 of rank 0
  }

  Loc &rank(int r) { return locs[static_cast<size_t>(r)]; }
  Loc &second_thread() { return thread; }

  // Every rank: ProgramBegin, main, MPI_Init (1 ms).
  void begin() {
    for (auto &l : locs) {
      const OTF2_StringRef args[] = {kArgString};
      ok(OTF2_EvtWriter_ProgramBegin(l.w, nullptr, l.ts(), kProgramString, 1, args), "ProgramBegin");
      l.enter(kMain);
      l.call(kInit, 1000000);
    }
  }
  // Every rank but the killed ones: MPI_Finalize (0.5 ms), leave main, ProgramEnd; then the
  // definitions.
  void end(int killed = -1) {
    for (auto &l : locs) {
      if (static_cast<int>(l.id) == killed) continue;
      l.call(kFinalize, 500000);
      l.leave(kMain);
      ok(OTF2_EvtWriter_ProgramEnd(l.w, nullptr, l.ts(), 0), "ProgramEnd");
    }
    std::vector<std::pair<uint64_t, uint64_t>> counts;  // location, events
    for (auto *l : all()) {
      uint64_t n = 0;
      ok(OTF2_EvtWriter_GetNumberOfEvents(l->w, &n), "GetNumberOfEvents");
      counts.emplace_back(l->id, n);
      ok(OTF2_Archive_CloseEvtWriter(ar, l->w), "CloseEvtWriter");
    }
    ok(OTF2_Archive_CloseEvtFiles(ar), "CloseEvtFiles");
    ok(OTF2_Archive_OpenDefFiles(ar), "OpenDefFiles");
    for (auto *l : all()) {
      OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(ar, l->id);
      if (l->ahead) {  // as Score-P's clock synchronisation at init and finalize: global = local + offset
        const int64_t off = -l->ahead * static_cast<int64_t>(kTicksPerSecond / 1000000000);
        const Loc start{nullptr, l->id, 0, 0, l->ahead};
        ok(OTF2_DefWriter_WriteClockOffset(dw, start.ts(), off, 0.0), "WriteClockOffset");
        ok(OTF2_DefWriter_WriteClockOffset(dw, l->ts(), off, 0.0), "WriteClockOffset");
      }
      ok(OTF2_Archive_CloseDefWriter(ar, dw), "CloseDefWriter");
    }
    ok(OTF2_Archive_CloseDefFiles(ar), "CloseDefFiles");
    write_global_defs(counts);
    ok(OTF2_Archive_Close(ar), "Close");
  }

  // Every rank enters the collective now and leaves 50 us after the last has entered.
  void collective(Region r, OTF2_CollectiveOp op, uint64_t bytes, uint32_t root = OTF2_UNDEFINED_UINT32) {
    int64_t last = 0;
    for (auto &l : locs) last = std::max(last, l.t);
    for (auto &l : locs) {
      l.enter(r);
      ok(OTF2_EvtWriter_MpiCollectiveBegin(l.w, nullptr, l.ts()), "MpiCollectiveBegin");
      l.t = last + 50000;
      const bool is_root = root == static_cast<uint32_t>(l.id);  // rooted: the root sends, the others receive
      const uint64_t sent = root == OTF2_UNDEFINED_UINT32 || is_root ? bytes : 0;
      const uint64_t received = root == OTF2_UNDEFINED_UINT32 || !is_root ? bytes : 0;
      ok(OTF2_EvtWriter_MpiCollectiveEnd(l.w, nullptr, l.ts(), op, kWorld, root, sent, received), "MpiCollectiveEnd");
      l.leave(r);
    }
  }

 private:
  static constexpr OTF2_StringRef kProgramString = 0, kArgString = 1;

  Loc open_location(uint64_t id) {
    Loc l;
    l.id = id;
    l.w = OTF2_Archive_GetEvtWriter(ar, id);
    if (!l.w) ok(OTF2_ERROR_INVALID, "GetEvtWriter");
    return l;
  }
  std::vector<Loc *> all() {
    std::vector<Loc *> v;
    for (auto &l : locs) v.push_back(&l);
    if (thread.w) v.push_back(&thread);
    return v;
  }

  void write_global_defs(const std::vector<std::pair<uint64_t, uint64_t>> &counts) {
    OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(ar);
    int64_t length = 0;
    for (auto *l : all()) length = std::max(length, l->t);
    ok(OTF2_GlobalDefWriter_WriteClockProperties(g, kTicksPerSecond, kOffset,
                                                 static_cast<uint64_t>(length) * (kTicksPerSecond / 1000000000),
                                                 1767225600000000000ull),  // 2026-01-01T00:00:00Z
       "WriteClockProperties");
    uint32_t next = 0;
    auto str = [&](const std::string &s) {
      ok(OTF2_GlobalDefWriter_WriteString(g, next, s.c_str()), "WriteString");
      return next++;
    };
    str("./app");        // kProgramString
    str("--size=1024");  // kArgString
    const uint32_t empty = str("");
    ok(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, str("Linux"), str("machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE),
       "WriteSystemTreeNode");
    ok(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 1, str("node01"), str("node"), 0), "WriteSystemTreeNode");
    for (int r = 0; r < nranks; ++r)
      ok(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<uint32_t>(r), str("MPI Rank " + std::to_string(r)),
                                                 OTF2_LOCATION_GROUP_TYPE_PROCESS, 1, OTF2_UNDEFINED_LOCATION_GROUP),
         "WriteLocationGroup");
    for (auto &[id, n] : counts)
      ok(OTF2_GlobalDefWriter_WriteLocation(g, id, str(id >> 32 ? "OMP thread 1" : "Master thread"),
                                            OTF2_LOCATION_TYPE_CPU_THREAD, n, static_cast<uint32_t>(id & 0xffffffff)),
         "WriteLocation");
    const uint32_t file = str("app.c");
    for (uint32_t k = 0; k < kRegions; ++k) {
      const uint32_t n = str(kRegionInfo[k].name);
      ok(OTF2_GlobalDefWriter_WriteRegion(g, k, n, n, empty, kRegionInfo[k].role, kRegionInfo[k].paradigm,
                                          OTF2_REGION_FLAG_NONE,
                                          kRegionInfo[k].paradigm == OTF2_PARADIGM_MPI ? empty : file, 0, 0),
         "WriteRegion");
    }
    std::vector<uint64_t> locations, ranks;
    for (int r = 0; r < nranks; ++r) locations.push_back(static_cast<uint64_t>(r)), ranks.push_back(r);
    ok(OTF2_GlobalDefWriter_WriteGroup(g, 0, empty, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                       OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(nranks), locations.data()),
       "WriteGroup");
    ok(OTF2_GlobalDefWriter_WriteGroup(g, 1, empty, OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                       static_cast<uint32_t>(nranks), ranks.data()),
       "WriteGroup");
    ok(OTF2_GlobalDefWriter_WriteGroup(g, 2, empty, OTF2_GROUP_TYPE_COMM_SELF, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                       0, nullptr),
       "WriteGroup");
    ok(OTF2_GlobalDefWriter_WriteComm(g, kWorld, str("MPI_COMM_WORLD"), 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
       "WriteComm");
    ok(OTF2_GlobalDefWriter_WriteComm(g, kSelf, str("MPI_COMM_SELF"), 2, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
       "WriteComm");
    ok(OTF2_GlobalDefWriter_WriteMetricMember(g, 0, str("PAPI_TOT_CYC"), str("Total cycles"), OTF2_METRIC_TYPE_PAPI,
                                              OTF2_METRIC_ACCUMULATED_START, OTF2_TYPE_UINT64, OTF2_BASE_DECIMAL, 0,
                                              str("#")),
       "WriteMetricMember");
    const OTF2_MetricMemberRef members[] = {0};
    ok(OTF2_GlobalDefWriter_WriteMetricClass(g, 0, 1, members, OTF2_METRIC_SYNCHRONOUS_STRICT, OTF2_RECORDER_KIND_CPU),
       "WriteMetricClass");
    ok(OTF2_Archive_CloseGlobalDefWriter(ar, g), "CloseGlobalDefWriter");
  }

  OTF2_Archive *ar = nullptr;
  int nranks;
  std::vector<Loc> locs;
  Loc thread;
};

void late_sender(const std::string &dir) {
  Archive a(dir, 2, true);
  a.begin();
  Loc &r0 = a.rank(0), &r1 = a.rank(1);
  // Rank 0 forks an OpenMP team; its second thread works 2 ms (neither is mapped).
  ok(OTF2_EvtWriter_ThreadFork(r0.w, nullptr, r0.ts(), OTF2_PARADIGM_OPENMP, 2), "ThreadFork");
  Loc &th = a.second_thread();
  th.t = r0.t;
  th.compute(kOmpParallel, 2000000);
  for (uint32_t i = 0; i < 4; ++i) {
    const int64_t start = std::max(r0.t, r1.t);
    r0.t = r1.t = start;
    r1.compute(kCompute, 50000000);
    r1.enter(kSend);
    ok(OTF2_EvtWriter_MpiSend(r1.w, nullptr, r1.ts(), 0, kWorld, i, 4), "MpiSend");
    r1.t += 10000;
    r1.leave(kSend);
    r0.enter(kRecv);
    r0.t = r1.t + 10000;  // the message arrives 10 us after the send returned
    ok(OTF2_EvtWriter_MpiRecv(r0.w, nullptr, r0.ts(), 1, kWorld, i, 4), "MpiRecv");
    r0.leave(kRecv);
  }
  // A nonblocking exchange: Irecv, Isend, a Test that completes nothing, Waitall.
  const int64_t start = std::max(r0.t, r1.t);
  for (int r = 0; r < 2; ++r) {
    Loc &l = a.rank(r);
    const uint32_t peer = static_cast<uint32_t>(1 - r);
    l.t = start;
    l.enter(kIrecv);
    ok(OTF2_EvtWriter_MpiIrecvRequest(l.w, nullptr, l.ts(), 1), "MpiIrecvRequest");
    l.t += 2000;
    l.leave(kIrecv);
    l.enter(kIsend);
    ok(OTF2_EvtWriter_MpiIsend(l.w, nullptr, l.ts(), peer, kWorld, 9, 64, 2), "MpiIsend");
    l.t += 2000;
    l.leave(kIsend);
    l.enter(kTest);
    ok(OTF2_EvtWriter_MpiRequestTest(l.w, nullptr, l.ts(), 1), "MpiRequestTest");
    l.t += 1000;
    l.leave(kTest);
    l.enter(kWaitall);
    l.t += 20000;
    ok(OTF2_EvtWriter_MpiIsendComplete(l.w, nullptr, l.ts(), 2), "MpiIsendComplete");
    ok(OTF2_EvtWriter_MpiIrecv(l.w, nullptr, l.ts(), peer, kWorld, 9, 64, 1), "MpiIrecv");
    l.leave(kWaitall);
    l.enter(kSendrecv);
    ok(OTF2_EvtWriter_MpiSend(l.w, nullptr, l.ts(), peer, kWorld, 5, 8), "MpiSend");
    l.t += 20000;
    ok(OTF2_EvtWriter_MpiRecv(l.w, nullptr, l.ts(), peer, kWorld, 5, 8), "MpiRecv");
    l.leave(kSendrecv);
    l.compute(kOddName, 1000000);
  }
  // Rank 0 posts a receive nobody sends to, cancels it and waits for it.
  r0.enter(kIrecv);
  ok(OTF2_EvtWriter_MpiIrecvRequest(r0.w, nullptr, r0.ts(), 3), "MpiIrecvRequest");
  r0.t += 2000;
  r0.leave(kIrecv);
  r0.call(kCancel, 1000);
  r0.enter(kWait);
  r0.t += 3000;
  ok(OTF2_EvtWriter_MpiRequestCancelled(r0.w, nullptr, r0.ts(), 3), "MpiRequestCancelled");
  r0.leave(kWait);
  a.collective(kBarrier, OTF2_COLLECTIVE_OP_BARRIER, 0);
  a.end();
}

void imbalance(const std::string &dir) {
  Archive a(dir, 4, false);
  a.rank(3).ahead = 3000000;  // rank 3's clock is 3 ms ahead; its ClockOffset records say so
  a.begin();
  for (int it = 0; it < 5; ++it) {
    for (int r = 0; r < 4; ++r) {
      Loc &l = a.rank(r);
      l.enter(kSolve);
      l.work(r < 2 ? 100000000 : 20000000);
      l.leave(kSolve);
    }
    a.collective(kAllreduce, OTF2_COLLECTIVE_OP_ALLREDUCE, 8);
  }
  a.collective(kBcast, OTF2_COLLECTIVE_OP_BCAST, 1024, 1);  // rank 1 broadcasts 1 KiB
  a.end();
}

// Rank 1 is killed 5 ms into MPI_Allreduce (its records end there); rank 0 ends normally.
void killed(const std::string &dir) {
  Archive a(dir, 2, false);
  a.begin();
  Loc &r0 = a.rank(0), &r1 = a.rank(1);
  r0.compute(kSolve, 10000000);
  r1.compute(kSolve, 10000000);
  r1.enter(kAllreduce);
  ok(OTF2_EvtWriter_MpiCollectiveBegin(r1.w, nullptr, r1.ts()), "MpiCollectiveBegin");
  r1.t += 5000000;
  r1.metric();  // its last record
  a.end(1);
}

// A serial program's trace: one process, user regions only, no MPI call.
void no_mpi(const std::string &dir) {
  Archive a(dir, 1, false);
  Loc &l = a.rank(0);
  l.enter(kMain);
  l.compute(kSolve, 1000000);
  l.leave(kMain);
  a.end(0);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_archives DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  late_sender(dir + "/late_sender");
  imbalance(dir + "/imbalance");
  killed(dir + "/killed");
  no_mpi(dir + "/no_mpi");
  return 0;
}
