// OTF2 archives into RankTraces (see otf2_import.h and docs/otf2.md): the archive's
// definitions (io/otf2_definitions.h), then each rank's events (io/otf2_rank_reader.h).
#include "io/otf2_import.h"

#include <otf2/otf2.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <system_error>
#include <unordered_map>

#include "io/otf2_archive.h"
#include "io/otf2_definitions.h"
#include "io/otf2_messages.h"
#include "io/otf2_rank_reader.h"
#include "io/trace_store.h"

namespace perfsift::io {

namespace fs = std::filesystem;

namespace {

using namespace otf2_read;

// The anchor file: PATH itself, or the one *.otf2 in the directory PATH.
std::string anchor_of(const std::string &path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(path + ": no such file; give the OTF2 anchor file (traces.otf2 in the Score-P experiment directory)");
  if (!fs::is_directory(path, ec)) return path;
  std::vector<std::string> found;
  for (const auto &e : fs::directory_iterator(path, ec))
    if (e.path().extension() == ".otf2" && e.is_regular_file()) found.push_back(e.path().string());
  if (found.size() != 1)
    throw Error(path + ": " + (found.empty() ? "no" : "more than one") +
                " OTF2 anchor file (*.otf2) in this directory; give the anchor file itself");
  return found.front();
}

std::string iso_time(uint64_t epoch_ns) {
  const time_t s = static_cast<time_t>(epoch_ns / 1000000000ull);
  struct tm tm {};
  gmtime_r(&s, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

// Ranks [first, last) of part `part` of `parts` blocks. Blocks are rounded up: part 0
// always holds rank 0 (whose ProgramBegin names the command).
std::pair<int32_t, int32_t> block_of(int32_t nranks, int part, int parts) {
  const auto first = static_cast<int32_t>((static_cast<int64_t>(nranks) * part + parts - 1) / parts);
  const auto last = static_cast<int32_t>((static_cast<int64_t>(nranks) * (part + 1) + parts - 1) / parts);
  return {first, last};
}

RankMap ranks_of_archive(const std::string &anchor, const Defs &d) {
  RankMap ranks;
  try {
    ranks = map_ranks(d);
  } catch (const Error &e) {
    throw Error(anchor + ": " + e.what() + "; the archive is damaged: copy it again or re-run the measurement");
  }
  if (ranks.location_of.empty())
    throw Error(anchor +
                ": no MPI ranks: the archive defines no process location group; perfsift reads traces of "
                "MPI programs (Score-P with MPI measurement enabled)");
  return ranks;
}

// Counters: accumulated metric members, in definition order (named as recorded: PAPI_TOT_CYC).
struct Counters {
  std::vector<std::string> names;
  std::unordered_map<uint32_t, int32_t> slot;  // metric member -> index in names
};

Counters counters_of(const Defs &d) {
  Counters c;
  std::map<uint32_t, const MemberDef *> sorted;
  for (const auto &[id, m] : d.members) sorted[id] = &m;
  for (const auto &[id, m] : sorted)
    if (m->accumulated) {
      auto it = std::find(c.names.begin(), c.names.end(), m->name);
      c.slot[id] = static_cast<int32_t>(it - c.names.begin());
      if (it == c.names.end()) c.names.push_back(m->name);
    }
  return c;
}

// Selects and opens the locations of ranks [first, last): their local definitions read,
// their event files opened.
void open_locations(const Reader &reader, const RankMap &ranks, int32_t first, int32_t last) {
  for (int32_t r = first; r < last; ++r)
    reader.check(OTF2_Reader_SelectLocation(reader.get(), ranks.location_of[static_cast<size_t>(r)]),
                 "rank " + std::to_string(r) + "'s location is not in the archive", "the archive is damaged");
  if (first >= last) return;
  const bool local_defs = OTF2_Reader_OpenDefFiles(reader.get()) == OTF2_SUCCESS;
  otf2_message().clear();
  reader.check(OTF2_Reader_OpenEvtFiles(reader.get()), "cannot open the event files",
               "copy the whole experiment directory (the directory of event files beside the anchor file)");
  for (int32_t r = first; r < last; ++r) {
    const uint64_t loc = ranks.location_of[static_cast<size_t>(r)];
    if (local_defs) {
      OTF2_DefReader *dr = OTF2_Reader_GetDefReader(reader.get(), loc);
      if (dr) {
        uint64_t n = 0;
        reader.check(OTF2_Reader_ReadAllLocalDefinitions(reader.get(), dr, &n),
                     "the local definitions of rank " + std::to_string(r) + " are damaged",
                     "copy the archive again or re-run the measurement");
        OTF2_Reader_CloseDefReader(reader.get(), dr);
      }
      otf2_message().clear();
    }
    if (!OTF2_Reader_GetEvtReader(reader.get(), loc))
      reader.fail("cannot open the event file of rank " + std::to_string(r),
                  "copy the whole experiment directory (" + stem_of(reader.anchor()) + "/" + std::to_string(loc) +
                      ".evt must be there)");
  }
  if (local_defs) OTF2_Reader_CloseDefFiles(reader.get());
}

// Operations: the given names, then MPI regions not among them in definition order (the
// same list whichever ranks a process reads).
struct Operations {
  std::unordered_map<std::string, uint16_t> index;
  std::vector<std::string> extra;
};

Operations operations_of(const std::string &anchor, const Defs &d, const std::vector<std::string> &op_names) {
  Operations ops;
  for (size_t k = 0; k < op_names.size(); ++k) ops.index.emplace(op_names[k], static_cast<uint16_t>(k));
  std::map<uint32_t, const RegionDef *> sorted;
  for (const auto &[id, rd] : d.regions) sorted[id] = &rd;
  for (const auto &[id, rd] : sorted)
    if (rd->mpi && ops.index.emplace(rd->name, static_cast<uint16_t>(op_names.size() + ops.extra.size())).second)
      ops.extra.push_back(rd->name);
  if (op_names.size() + ops.extra.size() > 65535) throw Error(anchor + ": more than 65535 MPI operations");
  return ops;
}

// Hosts: the system-tree node above each rank's location group (Score-P: class "node"),
// each once, comma-separated; and each rank's among them when every rank has one.
std::string hosts_of(const Defs &d, const RankMap &ranks, std::vector<int32_t> &rank_hosts) {
  std::vector<std::string> hosts;
  rank_hosts.clear();
  bool every_rank = true;
  for (uint64_t loc : ranks.location_of) {
    std::string host;
    auto l = d.locations.find(loc);
    if (l != d.locations.end())
      if (auto g = d.location_groups.find(l->second.group); g != d.location_groups.end())
        for (uint32_t n = g->second.node, hops = 0; hops < 64; ++hops) {
          auto node = d.nodes.find(n);
          if (node == d.nodes.end()) break;
          if (host.empty() || d.str(node->second.cls) == "node") host = d.str(node->second.name);
          if (d.str(node->second.cls) == "node") break;
          n = node->second.parent;
        }
    if (host.empty()) {
      every_rank = false;
      continue;
    }
    const auto at = std::find(hosts.begin(), hosts.end(), host);
    rank_hosts.push_back(static_cast<int32_t>(at - hosts.begin()));
    if (at == hosts.end()) hosts.push_back(host);
  }
  if (!every_rank) rank_hosts.clear();
  std::string list;
  for (const auto &h : hosts) list += (list.empty() ? "" : ",") + h;
  return list;
}

// The run's facts besides the ranks' (truncated ranks are added as they are read).
void fill_run_facts(const Reader &reader, const Defs &d, const RankMap &ranks, const std::string &program,
                    const Counters &counters, RunInfo &run) {
  const std::string &anchor = reader.anchor();
  run.nranks = static_cast<int32_t>(ranks.location_of.size());
  char *creator = nullptr;
  std::string made_by = "OTF2";
  if (OTF2_Reader_GetCreator(reader.get(), &creator) == OTF2_SUCCESS && creator) {
    if (*creator) made_by = creator;
    std::free(creator);
  }
  run.command = program.empty() ? "(OTF2 archive " + anchor + ")" : program;
  run.mpi_library = "imported from " + made_by + " archive " + fs::absolute(anchor).lexically_normal().string();
  if (d.realtime != OTF2_UNDEFINED_TIMESTAMP) {
    run.start_epoch_ns = static_cast<int64_t>(d.realtime);
    run.start_time = iso_time(d.realtime);
  }
  run.counters_recorded = counters.names;
  run.hostname_list = hosts_of(d, ranks, run.rank_hosts);
}

}  // namespace

std::string Otf2Import::warning(const std::string &archive) const {
  if (unmapped.empty()) return "";
  std::string w = archive + ": not mapped:";
  bool first = true;
  for (const auto &[kind, n] : unmapped) {
    w += (first ? " " : ", ") + std::to_string(n) + " " + kind;
    first = false;
  }
  return w + " (docs/otf2.md)";
}

bool looks_like_otf2(const std::string &path) {
  std::error_code ec;
  if (fs::path(path).extension() == ".otf2") return true;
  if (!fs::is_directory(path, ec)) return false;
  for (const auto &e : fs::directory_iterator(path, ec))
    if (e.path().extension() == ".otf2") return true;
  return false;
}

Otf2Import read_otf2(const std::string &path, const std::vector<std::string> &op_names, int part, int parts) {
  const Reader reader(anchor_of(path));
  const std::string &anchor = reader.anchor();
  Defs d;
  read_global_defs(reader, d);
  Otf2Import out;
  // What the definitions lack is counted by part 0 only; each part counts its own events.
  std::map<std::string, int64_t> global_unmapped;
  if (!d.have_clock || d.resolution == 0) {
    ++global_unmapped["missing clock properties (times taken as ns)"];
    d.resolution = 1000000000ull;
  }
  const RankMap ranks = ranks_of_archive(anchor, d);
  const auto nranks = static_cast<int32_t>(ranks.location_of.size());
  parts = std::max(parts, 1);
  part = std::clamp(part, 0, parts - 1);
  const auto [first, last] = block_of(nranks, part, parts);
  for (const auto &[lid, l] : d.locations)
    if (!ranks.rank_of.count(lid) && l.events > 0)
      global_unmapped["events of threads besides each rank's first (OpenMP, pthreads, GPUs)"] +=
          static_cast<int64_t>(l.events);
  const Comms comms = map_comms(d, nranks, global_unmapped);
  if (part == 0) out.unmapped = global_unmapped;
  const Counters counters = counters_of(d);
  open_locations(reader, ranks, first, last);
  const Operations ops = operations_of(anchor, d, op_names);
  const EventMapping mapping{d, comms, op_names, ops.index, ops.extra, counters.names, counters.slot};
  const std::unique_ptr<OTF2_EvtReaderCallbacks, decltype(&OTF2_EvtReaderCallbacks_Delete)> callbacks(
      event_callbacks(), &OTF2_EvtReaderCallbacks_Delete);
  std::string program;
  for (int32_t r = first; r < last; ++r) {
    RankEvents rank =
        read_rank_events(reader, callbacks.get(), mapping, r, ranks.location_of[static_cast<size_t>(r)], out.unmapped);
    out.events_read += static_cast<int64_t>(rank.records);
    if (!rank.trace.complete) out.run.truncated_ranks.push_back(r);
    if (program.empty()) program = rank.program;
    out.traces.push_back(std::move(rank.trace));
  }
  if (first < last) OTF2_Reader_CloseEvtFiles(reader.get());
  fill_run_facts(reader, d, ranks, program, counters, out.run);
  out.op_names = op_names;
  out.op_names.insert(out.op_names.end(), ops.extra.begin(), ops.extra.end());
  return out;
}

}  // namespace perfsift::io
