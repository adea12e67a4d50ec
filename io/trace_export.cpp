// Predicted-trace exporters (see trace_export.h).
#include "io/trace_export.h"

#include <otf2/otf2.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "io/atomic_file.h"

namespace perfsift::io {

namespace fs = std::filesystem;

namespace {

std::string name_of(const std::vector<std::string> &names, int64_t k, const char *fallback) {
  return k >= 0 && static_cast<size_t>(k) < names.size() ? names[static_cast<size_t>(k)] : fallback;
}

std::string quoted(const std::string &s) {
  std::string o = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else
      o += c;
  }
  return o + "\"";
}

}  // namespace

void write_chrome_trace(const std::string &path, const PredictedTrace &p) {
  std::ostringstream os;
  os << "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  os << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, \"args\": {\"name\": "
     << quoted("perfsift prediction: " + p.question) << "}}";
  for (int64_t r = 0; r < p.nranks; ++r)
    os << ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " << r << ", \"args\": {\"name\": \"rank "
       << r << "\"}}";
  char num[64];
  auto slice = [&](const std::string &name, const char *cat, int64_t rank, int64_t t0, int64_t t1) {
    std::snprintf(num, sizeof num, "%.3f, \"dur\": %.3f", static_cast<double>(t0) * 1e-3,
                  static_cast<double>(std::max<int64_t>(0, t1 - t0)) * 1e-3);
    os << ",\n{\"name\": " << quoted(name) << ", \"cat\": \"" << cat << "\", \"ph\": \"X\", \"ts\": " << num
       << ", \"pid\": 0, \"tid\": " << rank << "}";
  };
  int64_t prev_rank = -1, prev_exit = 0;
  for (const auto &s : p.calls) {
    if (s.rank != prev_rank) prev_exit = s.enter;
    prev_rank = s.rank;
    if (s.enter > prev_exit)
      slice("compute: " + name_of(p.regions, s.region, "?"), "compute", s.rank, prev_exit, s.enter);
    slice(name_of(p.ops, s.op, "MPI"), "mpi", s.rank, s.enter, s.exit);
    if (s.wait > 0) slice("wait", "wait", s.rank, s.exit - s.wait, s.exit);
    prev_exit = s.exit;
  }
  os << "\n]}\n";
  write_file_atomically(path, os.str());
}

namespace {

OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void *, OTF2_FileType, OTF2_LocationRef) { return 0; }

void check(OTF2_ErrorCode e, const std::string &what, const std::string &path) {
  if (e != OTF2_SUCCESS) throw std::runtime_error(path + ": OTF2 " + what + " failed: " + OTF2_Error_GetName(e));
}

// Regions: operations first, then "compute: PATH" per region path.
uint32_t compute_base(const PredictedTrace &p) { return static_cast<uint32_t>(p.ops.size()); }

// Each rank's calls, with the compute between them, as Enter/Leave pairs; returns the
// number of events written per rank.
std::vector<uint64_t> write_otf2_events(OTF2_Archive *ar, const PredictedTrace &p, int64_t t_min,
                                        const std::string &dir) {
  const uint32_t compute = compute_base(p);
  const auto ts = [&](int64_t t) { return static_cast<OTF2_TimeStamp>(t - t_min); };
  std::vector<uint64_t> events_of(static_cast<size_t>(p.nranks), 0);
  size_t i = 0;
  while (i < p.calls.size()) {
    const int64_t rank = p.calls[i].rank;
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(ar, static_cast<OTF2_LocationRef>(rank));
    int64_t prev = p.calls[i].enter;
    for (; i < p.calls.size() && p.calls[i].rank == rank; ++i) {
      const PredictedCall &s = p.calls[i];
      if (s.enter > prev && s.region >= 0) {
        check(OTF2_EvtWriter_Enter(w, nullptr, ts(prev), compute + static_cast<uint32_t>(s.region)), "Enter", dir);
        check(OTF2_EvtWriter_Leave(w, nullptr, ts(s.enter), compute + static_cast<uint32_t>(s.region)), "Leave", dir);
        events_of[static_cast<size_t>(rank)] += 2;
      }
      const uint32_t op = static_cast<uint32_t>(std::max<int64_t>(0, s.op));
      check(OTF2_EvtWriter_Enter(w, nullptr, ts(s.enter), op), "Enter", dir);
      check(OTF2_EvtWriter_Leave(w, nullptr, ts(std::max(s.enter, s.exit)), op), "Leave", dir);
      events_of[static_cast<size_t>(rank)] += 2;
      prev = std::max(s.enter, s.exit);
    }
    check(OTF2_Archive_CloseEvtWriter(ar, w), "CloseEvtWriter", dir);
  }
  return events_of;
}

// Clock, strings, regions, the system tree and one location per rank.
void write_otf2_global_defs(OTF2_Archive *ar, const PredictedTrace &p, int64_t t_min, int64_t t_max,
                            const std::vector<uint64_t> &events_of, const std::string &dir) {
  const uint32_t compute = compute_base(p);
  OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(ar);
  check(OTF2_GlobalDefWriter_WriteClockProperties(
            g, 1000000000, 0, static_cast<uint64_t>(std::max<int64_t>(0, t_max - t_min)), OTF2_UNDEFINED_TIMESTAMP),
        "WriteClockProperties", dir);
  uint32_t next_string = 0;
  auto str = [&](const std::string &s) {
    check(OTF2_GlobalDefWriter_WriteString(g, next_string, s.c_str()), "WriteString", dir);
    return next_string++;
  };
  const uint32_t empty = str("");
  for (size_t k = 0; k < p.ops.size(); ++k) {
    const uint32_t n = str(p.ops[k]);
    check(OTF2_GlobalDefWriter_WriteRegion(g, static_cast<uint32_t>(k), n, n, empty, OTF2_REGION_ROLE_FUNCTION,
                                           OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, empty, 0, 0),
          "WriteRegion", dir);
  }
  for (size_t k = 0; k < p.regions.size(); ++k) {
    const uint32_t n = str("compute: " + p.regions[k]);
    check(OTF2_GlobalDefWriter_WriteRegion(g, compute + static_cast<uint32_t>(k), n, n, empty, OTF2_REGION_ROLE_CODE,
                                           OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, empty, 0, 0),
          "WriteRegion", dir);
  }
  const uint32_t machine = str("predicted by perfsift: " + p.question), node = str("node");
  check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, machine, node, OTF2_UNDEFINED_SYSTEM_TREE_NODE),
        "WriteSystemTreeNode", dir);
  for (int64_t r = 0; r < p.nranks; ++r) {
    const uint32_t n = str("rank " + std::to_string(r));
    check(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<uint32_t>(r), n, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                  OTF2_UNDEFINED_LOCATION_GROUP),
          "WriteLocationGroup", dir);
    check(OTF2_GlobalDefWriter_WriteLocation(g, static_cast<uint64_t>(r), n, OTF2_LOCATION_TYPE_CPU_THREAD,
                                             events_of[static_cast<size_t>(r)], static_cast<uint32_t>(r)),
          "WriteLocation", dir);
  }
  check(OTF2_Archive_CloseGlobalDefWriter(ar, g), "CloseGlobalDefWriter", dir);
}

}  // namespace

// An OTF2 archive at DIR/traces.otf2 (written to DIR.tmp-PID, then renamed).
void write_otf2(const std::string &dir, const PredictedTrace &p) {
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  int64_t t_min = INT64_MAX, t_max = 0;
  for (const auto &s : p.calls) {
    t_min = std::min(t_min, s.enter);
    t_max = std::max(t_max, s.exit);
  }
  if (p.calls.empty()) t_min = 0;
  OTF2_Archive *ar = OTF2_Archive_Open(tmp.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                       OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!ar) throw std::runtime_error(tmp + ": cannot create the OTF2 archive (check the directory is writable)");
  OTF2_FlushCallbacks flush = {pre_flush, post_flush};
  check(OTF2_Archive_SetFlushCallbacks(ar, &flush, nullptr), "SetFlushCallbacks", dir);
  check(OTF2_Archive_SetSerialCollectiveCallbacks(ar), "SetSerialCollectiveCallbacks", dir);
  check(OTF2_Archive_SetCreator(ar, "perfsift export"), "SetCreator", dir);
  check(OTF2_Archive_OpenEvtFiles(ar), "OpenEvtFiles", dir);
  const std::vector<uint64_t> events_of = write_otf2_events(ar, p, t_min, dir);
  check(OTF2_Archive_CloseEvtFiles(ar), "CloseEvtFiles", dir);
  check(OTF2_Archive_OpenDefFiles(ar), "OpenDefFiles", dir);
  for (int64_t r = 0; r < p.nranks; ++r) {
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(ar, static_cast<OTF2_LocationRef>(r));
    check(OTF2_Archive_CloseDefWriter(ar, dw), "CloseDefWriter", dir);
  }
  check(OTF2_Archive_CloseDefFiles(ar), "CloseDefFiles", dir);
  write_otf2_global_defs(ar, p, t_min, t_max, events_of, dir);
  check(OTF2_Archive_Close(ar), "Close", dir);
  fs::remove_all(dir);
  fs::rename(tmp, dir);
}

}  // namespace perfsift::io
