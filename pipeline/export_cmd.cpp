// `perfsift export`: a predicted trace of the results store (the baseline replay or a
// user's what-if question) as Chrome trace JSON (Perfetto, chrome://tracing) or OTF2
// (Vampir, otf2-print). Each rank shows computation slices (named by region), MPI calls
// (named by operation) and, inside a call, its predicted waiting.
#include <otf2/otf2.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "io/results_store.h"
#include "pipeline/commands.h"
#include "pipeline/json.h"
#include "pipeline/report.h"
#include "pipeline/results_view.h"

namespace perfsift::cli {

namespace fs = std::filesystem;
using pipeline::attr_or;
using pipeline::column;
using pipeline::JsonWriter;

namespace {

struct Slice {
  int64_t rank, event, enter, exit, wait;
  int64_t op, region;
};

struct Predicted {
  std::string question;
  std::vector<std::string> ops, regions;
  std::vector<Slice> slices;  // by rank, then event
  int64_t nranks = 0;
};

Predicted load(const ExportOptions &o) {
  io::ResultsStore rs(o.results);
  const auto root = rs.attributes("");
  bool has = false;
  for (const auto &c : rs.children("whatif")) has |= c.name == "trace";
  if (!has)
    throw std::runtime_error(o.results + ": no predicted traces (the whatif stage did not run, or the run has more events than "
                             "whatif.trace_max_events); analyse again with the whatif stage and a larger whatif.trace_max_events");
  const auto questions = rs.table("whatif/questions");
  const auto &text = column<std::string>(questions, "question");
  const auto t = rs.table("whatif/trace");
  const auto &qi = column<int64_t>(t, "question");
  std::vector<int64_t> stored(qi.begin(), qi.end());
  std::sort(stored.begin(), stored.end());
  stored.erase(std::unique(stored.begin(), stored.end()), stored.end());
  // The question by row number or by its text.
  int64_t want = -1;
  if (o.question.empty()) want = 0;
  else {
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == o.question) want = static_cast<int64_t>(i);
    if (want < 0 && !o.question.empty() && std::all_of(o.question.begin(), o.question.end(), ::isdigit)) want = std::stoll(o.question);
  }
  if (want < 0 || !std::binary_search(stored.begin(), stored.end(), want)) {
    std::string avail;
    for (int64_t k : stored) avail += (avail.empty() ? "" : ", ") + std::to_string(k) + " \"" + text[static_cast<size_t>(k)] + "\"";
    throw std::runtime_error(o.results + ": no predicted trace for question '" + o.question + "'; stored: " + avail);
  }
  Predicted p;
  p.question = text[static_cast<size_t>(want)];
  const auto a = rs.attributes("whatif");
  p.ops = attr_or<std::vector<std::string>>(a, "trace_operations", {});
  p.regions = attr_or<std::vector<std::string>>(a, "trace_regions", {});
  const auto &rank = column<int64_t>(t, "rank"), &event = column<int64_t>(t, "event"), &enter = column<int64_t>(t, "enter_ns"),
             &exit = column<int64_t>(t, "exit_ns"), &wait = column<int64_t>(t, "wait_ns"), &op = column<int64_t>(t, "op"),
             &region = column<int64_t>(t, "region");
  for (size_t i = 0; i < t.rows(); ++i)
    if (qi[i] == want) {
      p.slices.push_back({rank[i], event[i], enter[i], exit[i], wait[i], op[i], region[i]});
      p.nranks = std::max(p.nranks, rank[i] + 1);
    }
  std::sort(p.slices.begin(), p.slices.end(), [](const Slice &x, const Slice &y) { return x.rank != y.rank ? x.rank < y.rank : x.event < y.event; });
  return p;
}

std::string name_of(const std::vector<std::string> &names, int64_t k, const char *fallback) {
  return k >= 0 && static_cast<size_t>(k) < names.size() ? names[static_cast<size_t>(k)] : fallback;
}

std::string chrome(const Predicted &p) {
  JsonWriter j;
  j.begin_object().key("displayTimeUnit").value("ns").key("traceEvents").begin_array();
  auto slice = [&](const std::string &name, const char *cat, int64_t rank, int64_t t0, int64_t t1) {
    j.begin_object().key("name").value(name).key("cat").value(cat).key("ph").value("X");
    j.key("ts").value(static_cast<double>(t0) * 1e-3).key("dur").value(static_cast<double>(std::max<int64_t>(0, t1 - t0)) * 1e-3);
    j.key("pid").value(int64_t{0}).key("tid").value(rank).end_object();
  };
  j.begin_object().key("name").value("process_name").key("ph").value("M").key("pid").value(int64_t{0});
  j.key("args").begin_object().key("name").value("perfsift prediction: " + p.question).end_object().end_object();
  for (int64_t r = 0; r < p.nranks; ++r) {
    j.begin_object().key("name").value("thread_name").key("ph").value("M").key("pid").value(int64_t{0}).key("tid").value(r);
    j.key("args").begin_object().key("name").value("rank " + std::to_string(r)).end_object().end_object();
  }
  int64_t prev_rank = -1, prev_exit = 0;
  for (const auto &s : p.slices) {
    if (s.rank != prev_rank) prev_exit = s.enter;
    prev_rank = s.rank;
    if (s.enter > prev_exit) slice("compute: " + name_of(p.regions, s.region, "?"), "compute", s.rank, prev_exit, s.enter);
    slice(name_of(p.ops, s.op, "MPI"), "mpi", s.rank, s.enter, s.exit);
    if (s.wait > 0) slice("wait", "wait", s.rank, s.exit - s.wait, s.exit);
    prev_exit = s.exit;
  }
  j.end_array().end_object();
  return j.take();
}

OTF2_FlushType pre_flush(void *, OTF2_FileType, OTF2_LocationRef, void *, bool) { return OTF2_FLUSH; }
OTF2_TimeStamp post_flush(void *, OTF2_FileType, OTF2_LocationRef) { return 0; }

void check(OTF2_ErrorCode e, const std::string &what, const std::string &path) {
  if (e != OTF2_SUCCESS) throw std::runtime_error(path + ": OTF2 " + what + " failed: " + OTF2_Error_GetName(e));
}

// An OTF2 archive at DIR/traces.otf2 (written to DIR.tmp-PID, then renamed).
void otf2(const Predicted &p, const std::string &dir) {
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  int64_t t_min = INT64_MAX, t_max = 0;
  for (const auto &s : p.slices) {
    t_min = std::min(t_min, s.enter);
    t_max = std::max(t_max, s.exit);
  }
  if (p.slices.empty()) t_min = 0;
  OTF2_Archive *ar = OTF2_Archive_Open(tmp.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                       OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (!ar) throw std::runtime_error(tmp + ": cannot create the OTF2 archive (check the directory is writable)");
  OTF2_FlushCallbacks flush = {pre_flush, post_flush};
  check(OTF2_Archive_SetFlushCallbacks(ar, &flush, nullptr), "SetFlushCallbacks", dir);
  check(OTF2_Archive_SetSerialCollectiveCallbacks(ar), "SetSerialCollectiveCallbacks", dir);
  check(OTF2_Archive_SetCreator(ar, "perfsift export"), "SetCreator", dir);
  check(OTF2_Archive_OpenEvtFiles(ar), "OpenEvtFiles", dir);
  // Regions: operations first, then "compute: PATH" per region path.
  const uint32_t compute_base = static_cast<uint32_t>(p.ops.size());
  const auto ts = [&](int64_t t) { return static_cast<OTF2_TimeStamp>(t - t_min); };
  std::vector<uint64_t> events_of(static_cast<size_t>(p.nranks), 0);
  size_t i = 0;
  while (i < p.slices.size()) {
    const int64_t rank = p.slices[i].rank;
    OTF2_EvtWriter *w = OTF2_Archive_GetEvtWriter(ar, static_cast<OTF2_LocationRef>(rank));
    int64_t prev = p.slices[i].enter;
    for (; i < p.slices.size() && p.slices[i].rank == rank; ++i) {
      const Slice &s = p.slices[i];
      if (s.enter > prev && s.region >= 0) {
        check(OTF2_EvtWriter_Enter(w, nullptr, ts(prev), compute_base + static_cast<uint32_t>(s.region)), "Enter", dir);
        check(OTF2_EvtWriter_Leave(w, nullptr, ts(s.enter), compute_base + static_cast<uint32_t>(s.region)), "Leave", dir);
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
  check(OTF2_Archive_CloseEvtFiles(ar), "CloseEvtFiles", dir);
  check(OTF2_Archive_OpenDefFiles(ar), "OpenDefFiles", dir);
  for (int64_t r = 0; r < p.nranks; ++r) {
    OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(ar, static_cast<OTF2_LocationRef>(r));
    check(OTF2_Archive_CloseDefWriter(ar, dw), "CloseDefWriter", dir);
  }
  check(OTF2_Archive_CloseDefFiles(ar), "CloseDefFiles", dir);
  OTF2_GlobalDefWriter *g = OTF2_Archive_GetGlobalDefWriter(ar);
  check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, static_cast<uint64_t>(std::max<int64_t>(0, t_max - t_min)),
                                                  OTF2_UNDEFINED_TIMESTAMP), "WriteClockProperties", dir);
  uint32_t next_string = 0;
  auto str = [&](const std::string &s) {
    check(OTF2_GlobalDefWriter_WriteString(g, next_string, s.c_str()), "WriteString", dir);
    return next_string++;
  };
  const uint32_t empty = str("");
  for (size_t k = 0; k < p.ops.size(); ++k) {
    const uint32_t n = str(p.ops[k]);
    check(OTF2_GlobalDefWriter_WriteRegion(g, static_cast<uint32_t>(k), n, n, empty, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_MPI,
                                           OTF2_REGION_FLAG_NONE, empty, 0, 0), "WriteRegion", dir);
  }
  for (size_t k = 0; k < p.regions.size(); ++k) {
    const uint32_t n = str("compute: " + p.regions[k]);
    check(OTF2_GlobalDefWriter_WriteRegion(g, compute_base + static_cast<uint32_t>(k), n, n, empty, OTF2_REGION_ROLE_CODE,
                                           OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE, empty, 0, 0), "WriteRegion", dir);
  }
  const uint32_t machine = str("predicted by perfsift: " + p.question), node = str("node");
  check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, machine, node, OTF2_UNDEFINED_SYSTEM_TREE_NODE), "WriteSystemTreeNode", dir);
  for (int64_t r = 0; r < p.nranks; ++r) {
    const uint32_t n = str("rank " + std::to_string(r));
    check(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<uint32_t>(r), n, OTF2_LOCATION_GROUP_TYPE_PROCESS, 0,
                                                  OTF2_UNDEFINED_LOCATION_GROUP), "WriteLocationGroup", dir);
    check(OTF2_GlobalDefWriter_WriteLocation(g, static_cast<uint64_t>(r), n, OTF2_LOCATION_TYPE_CPU_THREAD,
                                             events_of[static_cast<size_t>(r)], static_cast<uint32_t>(r)), "WriteLocation", dir);
  }
  check(OTF2_Archive_CloseGlobalDefWriter(ar, g), "CloseGlobalDefWriter", dir);
  check(OTF2_Archive_Close(ar), "Close", dir);
  fs::remove_all(dir);
  fs::rename(tmp, dir);
}

}  // namespace

int run_export(const ExportOptions &o) {
  const Predicted p = load(o);
  if (o.format == "chrome") pipeline::write_file_atomically(o.output, chrome(p));
  else otf2(p, o.output);
  std::fprintf(stderr, "perfsift: wrote %s (%s, %zu calls on %lld ranks, question \"%s\")\n", o.output.c_str(), o.format.c_str(),
               p.slices.size(), static_cast<long long>(p.nranks), p.question.c_str());
  return 0;
}

}  // namespace perfsift::cli
