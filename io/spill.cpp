#include "io/spill.h"

#include "io/codec.h"
#include "io/trace_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <queue>
#include <string_view>
#include <sstream>
#include <stdexcept>

namespace perfsift::io {

namespace {

bool write_all(int fd, const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

struct ChunkHeader {
  uint32_t type;
  uint32_t reserved;
  uint64_t bytes;
};

}  // namespace

std::string spill_path(const std::string &dir, int rank) { return dir + "/rank-" + std::to_string(rank) + ".bin"; }

SpillHeader make_spill_header(int32_t rank, int32_t nranks, int64_t start_ns) {
  SpillHeader h{};
  std::memcpy(h.magic, kSpillMagic, sizeof h.magic);
  h.version = kSpillVersion;
  h.rank = rank;
  h.nranks = nranks;
  h.start_ns = start_ns;
  return h;
}

SpillWriter::~SpillWriter() { close(); }

bool SpillWriter::open(const std::string &dir, const SpillHeader &header, std::string *error, bool temporary) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    if (error) *error = dir + ": cannot create spill directory: " + std::strerror(errno);
    return false;
  }
  m_final_path = spill_path(dir, header.rank);
  m_path = temporary ? m_final_path + ".tmp" : m_final_path;
  m_fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (m_fd < 0) {
    if (error) *error = m_path + ": cannot create spill file: " + std::strerror(errno);
    return false;
  }
  if (!write_all(m_fd, &header, sizeof header)) {
    if (error) *error = m_path + ": cannot write: " + std::strerror(errno);
    close();
    return false;
  }
  return true;
}

bool SpillWriter::write_chunk(SpillChunk type, const void *data, uint64_t bytes) {
  if (m_fd < 0) return false;
  ChunkHeader h{type, 0, bytes};
  return write_all(m_fd, &h, sizeof h) && write_all(m_fd, data, bytes);
}

bool SpillWriter::write_records(std::span<const Event> events, std::span<const RequestRecord> requests,
                                std::span<const CompletionRecord> completions, std::span<const StepRecord> steps) {
  const bool ok = write_chunk(kChunkEvents, events.data(), events.size_bytes());
  if (!ok) return false;
  write_chunk(kChunkRequests, requests.data(), requests.size_bytes());
  write_chunk(kChunkCompletions, completions.data(), completions.size_bytes());
  write_chunk(kChunkSteps, steps.data(), steps.size_bytes());
  return true;
}

bool SpillWriter::write_state(const SpillState &state) {
  std::string s = serialize_state(state);
  return write_chunk(kChunkState, s.data(), s.size());
}

void SpillWriter::close() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

bool SpillWriter::publish() {
  if (m_fd < 0 || m_path == m_final_path) return false;
  const bool ok = ::fsync(m_fd) == 0 && ::close(m_fd) == 0;
  m_fd = -1;
  if (!ok || ::rename(m_path.c_str(), m_final_path.c_str()) != 0) {
    ::unlink(m_path.c_str());
    return false;
  }
  m_path = m_final_path;
  return true;
}

void SpillWriter::discard() {
  close();
  if (m_path != m_final_path) ::unlink(m_path.c_str());
}

std::string serialize_state(const SpillState &st) {
  ByteWriter o;
  const RunInfo &r = st.run;
  o.pod(r.nranks);
  o.str(r.command);
  o.str(r.start_time);
  o.pod(r.start_epoch_ns);
  o.strs(r.counters_unavailable);
  o.strs(r.counters_recorded);
  o.str(r.collector_config);
  o.str(r.mpi_library);
  const RankTrace &t = st.profile_part;
  o.pod(t.rank);
  o.pod(static_cast<uint8_t>(t.complete));
  o.strs(t.region_paths);
  o.strs(t.metric_names);
  o.vec(t.profile);
  o.pod(static_cast<uint64_t>(t.comms.size()));
  for (const auto &c : t.comms) o.comm(c);
  o.pod(static_cast<uint64_t>(t.callsites.size()));
  for (const auto &c : t.callsites) o.callsite(c);
  o.pod(t.clock);
  o.pod(t.program_os);
  o.str(r.hostname_list);
  o.str(r.timer);
  o.pod(r.timer_read_ns);
  o.pod(r.collector_call_ns);
  o.pod(static_cast<uint64_t>(t.callsites.size()));
  for (const auto &c : t.callsites) o.frames(c.via);
  o.vec(r.rank_hosts);
  o.vec(r.network_probe.level);
  o.vec(r.network_probe.kind);
  o.vec(r.network_probe.bytes);
  o.vec(r.network_probe.ns);
  o.pod(r.network_probe.cost_ns);
  return o.take();
}

namespace {

constexpr size_t kCommMinBytes = 8 + 8 + 8;                  // key and two empty member lists
constexpr size_t kCallSiteMinBytes = 4 + 8 + 4 + 8 + 4 + 4;  // three empty strings, two offsets, a line

SpillState deserialize_state_view(std::string_view bytes) {
  ByteReader in(bytes);
  SpillState st;
  RunInfo &r = st.run;
  r.nranks = in.pod<int32_t>();
  r.command = in.str();
  r.start_time = in.str();
  r.start_epoch_ns = in.pod<int64_t>();
  r.counters_unavailable = in.strs("counter names");
  r.counters_recorded = in.strs("counter names");
  r.collector_config = in.str();
  r.mpi_library = in.str();
  RankTrace &t = st.profile_part;
  t.rank = in.pod<int32_t>();
  t.complete = in.pod<uint8_t>() != 0;
  t.region_paths = in.strs("region paths");
  t.metric_names = in.strs("metric names");
  t.profile = in.vec<double>("profile values");
  if (t.profile.size() != t.region_paths.size() * t.metric_names.size())
    in.fail("a profile of " + std::to_string(t.profile.size()) + " values for " +
            std::to_string(t.region_paths.size()) + " regions and " + std::to_string(t.metric_names.size()) +
            " metrics");
  const size_t ncomms = in.count(kCommMinBytes, "communicators");
  t.comms.reserve(ncomms);
  for (size_t i = 0; i < ncomms; ++i) t.comms.push_back(in.comm());
  const size_t nsites = in.count(kCallSiteMinBytes, "call sites");
  t.callsites.reserve(nsites);
  for (size_t i = 0; i < nsites; ++i) t.callsites.push_back(in.callsite());
  t.clock = in.pod<ClockRecord>();
  t.program_os = in.pod<ProgramOs>();
  r.hostname_list = in.str();
  if (in.more()) {  // spill files written before the timer was recorded end here
    r.timer = in.str();
    r.timer_read_ns = in.pod<double>();
    r.collector_call_ns = in.pod<double>();
  }
  if (in.more()) {  // the call sites' wrapper frames, in files written since they were kept
    if (in.pod<uint64_t>() != t.callsites.size()) in.fail("wrapper frames for a different number of call sites");
    for (auto &c : t.callsites) c.via = in.frames();
  }
  if (!in.more()) return st;  // files written before the ranks' nodes were kept end here
  r.rank_hosts = in.vec<int32_t>("rank nodes");
  NetworkProbe &probe = r.network_probe;
  probe.level = in.vec<int32_t>("probe levels");
  probe.kind = in.vec<int32_t>("probe kinds");
  probe.bytes = in.vec<int64_t>("probe sizes");
  probe.ns = in.vec<int64_t>("probe times");
  probe.cost_ns = in.pod<double>();
  const size_t n = probe.level.size();
  if (probe.kind.size() != n || probe.bytes.size() != n || probe.ns.size() != n)
    in.fail("network probe columns of " + std::to_string(n) + ", " + std::to_string(probe.kind.size()) + ", " +
            std::to_string(probe.bytes.size()) + " and " + std::to_string(probe.ns.size()) + " rows");
  return st;
}

const char *chunk_name(uint32_t type) {
  switch (type) {
    case kChunkEvents:
      return "events";
    case kChunkRequests:
      return "requests";
    case kChunkCompletions:
      return "completions";
    case kChunkSteps:
      return "steps";
    default:
      return "state";
  }
}

size_t record_size(uint32_t type) {
  switch (type) {
    case kChunkEvents:
      return sizeof(Event);
    case kChunkRequests:
      return sizeof(RequestRecord);
    case kChunkCompletions:
      return sizeof(CompletionRecord);
    case kChunkSteps:
      return sizeof(StepRecord);
    default:
      return 0;
  }
}

// Appends the whole records of `payload` (a torn chunk's tail is not one); returns how many.
template <class T>
size_t append_array(std::vector<T> &dst, std::string_view payload) {
  const size_t n = payload.size() / sizeof(T);
  const size_t old = dst.size();
  dst.resize(old + n);
  if (n > 0) std::memcpy(static_cast<void *>(dst.data() + old), payload.data(), n * sizeof(T));
  return n;
}

size_t append_records(RankTrace &t, uint32_t type, std::string_view payload) {
  switch (type) {
    case kChunkEvents:
      return append_array(t.events, payload);
    case kChunkRequests:
      return append_array(t.requests, payload);
    case kChunkCompletions:
      return append_array(t.completions, payload);
    default:
      return append_array(t.steps, payload);
  }
}

void take_state(SpillContents &out, SpillState &st) {
  out.run = std::move(st.run);
  auto &t = out.trace;
  t.complete = st.profile_part.complete;
  t.region_paths = std::move(st.profile_part.region_paths);
  t.metric_names = std::move(st.profile_part.metric_names);
  t.profile = std::move(st.profile_part.profile);
  t.comms = std::move(st.profile_part.comms);
  t.callsites = std::move(st.profile_part.callsites);
  t.clock = st.profile_part.clock;
  t.program_os = st.profile_part.program_os;
  out.has_state = true;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the spill file: " + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(path + ": cannot read the spill file");
  return data;
}

void check_header(const std::string &path, const std::string &data, SpillHeader &h) {
  if (data.empty())
    throw Error(path + ": empty (0 bytes): the rank ended before writing its spill header; it has no data");
  if (std::memcmp(data.data(), kSpillMagic, std::min(data.size(), sizeof kSpillMagic)) != 0)
    throw Error(path + ": not a perfsift spill file (it does not start with PSSPILL1)");
  if (data.size() < sizeof(SpillHeader))
    throw Error(path + ": " + std::to_string(data.size()) + " bytes, shorter than the " +
                std::to_string(sizeof(SpillHeader)) + "-byte spill header; it has no data");
  std::memcpy(&h, data.data(), sizeof h);
  if (h.version != kSpillVersion)  // docs/crashes.md, "Spill files"
    throw Error(path + ": spill format version " + std::to_string(h.version) + "; this perfsift reads spill version " +
                std::to_string(kSpillVersion) +
                ": the run's data in this file cannot be read by this perfsift; recover it with the perfsift that "
                "collected the run");
  if (h.nranks <= 0 || h.nranks > kSpillMaxRanks || h.rank < 0 || h.rank >= h.nranks)
    throw Error(path + ": damaged spill header: rank " + std::to_string(h.rank) + " of " + std::to_string(h.nranks) +
                " ranks");
}

}  // namespace

SpillState deserialize_state(const std::string &bytes) { return deserialize_state_view(bytes); }

SpillContents read_spill(const std::string &path, bool merge_threads) {
  const std::string data = slurp(path);
  SpillContents out;
  check_header(path, data, out.header);
  out.trace.rank = out.header.rank;
  const size_t size = data.size();
  size_t pos = sizeof(SpillHeader);
  // Damage past the first chunk keeps what came before it; in the first chunk it is an error.
  auto damaged = [&](const std::string &what) {
    if (pos == sizeof(SpillHeader)) throw Error(path + ": damaged at byte " + std::to_string(pos) + ": " + what);
    out.warning = path + ": damaged at byte " + std::to_string(pos) + " (" + what + "); kept the chunks before it, " +
                  "dropped the last " + std::to_string(size - pos) + " bytes";
  };
  while (pos < size) {
    const size_t left = size - pos;
    if (left < sizeof(ChunkHeader)) {
      out.warning = path + ": truncated at byte " + std::to_string(size) + " inside a chunk header; dropped its " +
                    std::to_string(left) + " bytes";
      break;
    }
    ChunkHeader h;
    std::memcpy(&h, data.data() + pos, sizeof h);
    if (h.type < kChunkEvents || h.type > kChunkState || h.reserved != 0) {
      damaged("unknown chunk type " + std::to_string(h.type));
      break;
    }
    const size_t body = left - sizeof h;
    const char *name = chunk_name(h.type);
    if (h.bytes > body) {  // torn: what a kill during a flush leaves
      out.warning = path + ": truncated at byte " + std::to_string(size) + " inside the " + name + " chunk of " +
                    std::to_string(h.bytes) + " bytes at byte " + std::to_string(pos);
      if (h.type == kChunkState) {
        out.warning += "; the rank's closing state (profile, communicators, call sites) is lost";
      } else {
        const size_t kept = append_records(out.trace, h.type, std::string_view(data).substr(pos + sizeof h, body));
        out.warning += "; kept its " + std::to_string(kept) + " complete records";
      }
      break;
    }
    const std::string_view payload = std::string_view(data).substr(pos + sizeof h, h.bytes);
    if (h.type == kChunkState) {
      SpillState st;
      try {
        st = deserialize_state_view(payload);
      } catch (const std::exception &e) {
        damaged(std::string("state chunk: ") + e.what());
        break;
      }
      take_state(out, st);
    } else {
      if (h.bytes % record_size(h.type) != 0) {
        damaged(std::string("a ") + name + " chunk of " + std::to_string(h.bytes) + " bytes is not a whole number of " +
                std::to_string(record_size(h.type)) + "-byte records");
        break;
      }
      append_records(out.trace, h.type, payload);
    }
    pos += sizeof h + payload.size();
  }
  if (merge_threads) merge_thread_streams(out.trace);
  return out;
}

void merge_thread_streams(RankTrace &t) {
  // Thread numbers as read (a damaged file may hold any): dense stream indices.
  auto thread_of = [](int64_t ev) { return ev < 0 ? 0 : static_cast<int32_t>(ev >> kThreadEventShift); };
  auto on_thread0 = [&](const auto &r) { return thread_of(r.event) == 0; };
  if (std::all_of(t.events.begin(), t.events.end(), [](const Event &e) { return e.thread == 0; }) &&
      std::all_of(t.requests.begin(), t.requests.end(), on_thread0) &&
      std::all_of(t.completions.begin(), t.completions.end(), on_thread0))
    return;  // one thread: indices are the rank's already
  std::vector<int32_t> ids;
  for (const auto &e : t.events) ids.push_back(e.thread);
  for (const auto &r : t.requests) ids.push_back(thread_of(r.event));
  for (const auto &c : t.completions) ids.push_back(thread_of(c.event));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.empty() || (ids.size() == 1 && ids[0] == 0)) return;  // one thread: indices are the rank's already
  auto stream = [&](int32_t thread) {
    return static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), thread) - ids.begin());
  };
  // Each thread's events in file order (their own order), then merged by entry time.
  std::vector<std::vector<int64_t>> of_thread(ids.size());
  for (size_t i = 0; i < t.events.size(); ++i) of_thread[stream(t.events[i].thread)].push_back(static_cast<int64_t>(i));
  std::vector<size_t> next(of_thread.size(), 0);
  std::vector<Event> merged;
  merged.reserve(t.events.size());
  std::vector<std::vector<int64_t>> global(of_thread.size());
  using Head = std::pair<int64_t, size_t>;  // (entry time, stream): earliest first, then lowest thread
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  auto push_head = [&](size_t k) {
    if (next[k] < of_thread[k].size()) heads.push({t.events[static_cast<size_t>(of_thread[k][next[k]])].t_enter, k});
  };
  for (size_t k = 0; k < of_thread.size(); ++k) {
    global[k].reserve(of_thread[k].size());
    push_head(k);
  }
  while (!heads.empty()) {
    const size_t k = heads.top().second;
    heads.pop();
    global[k].push_back(static_cast<int64_t>(merged.size()));
    merged.push_back(t.events[static_cast<size_t>(of_thread[k][next[k]++])]);
    push_head(k);
  }
  // A record's event beyond its thread's last (lost in a crash): past the rank's last.
  auto remap = [&](int64_t ev) -> int64_t {
    if (ev < 0) return ev;
    const auto &g = global[stream(thread_of(ev))];
    const int64_t local = ev & kThreadEventMask;
    if (local < static_cast<int64_t>(g.size())) return g[static_cast<size_t>(local)];
    return static_cast<int64_t>(merged.size());
  };
  for (auto &r : t.requests) r.event = remap(r.event);
  for (auto &c : t.completions) c.event = remap(c.event);
  std::stable_sort(t.requests.begin(), t.requests.end(),
                   [](const RequestRecord &a, const RequestRecord &b) { return a.event < b.event; });
  std::stable_sort(t.completions.begin(), t.completions.end(),
                   [](const CompletionRecord &a, const CompletionRecord &b) { return a.event < b.event; });
  t.events = std::move(merged);
}

}  // namespace perfsift::io
