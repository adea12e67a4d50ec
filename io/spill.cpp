#include "io/spill.h"

#include "io/codec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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
  h.version = 1;
  h.rank = rank;
  h.nranks = nranks;
  h.start_ns = start_ns;
  return h;
}

SpillWriter::~SpillWriter() { close(); }

bool SpillWriter::open(const std::string &dir, const SpillHeader &header, std::string *error) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    if (error) *error = dir + ": cannot create spill directory: " + std::strerror(errno);
    return false;
  }
  m_path = spill_path(dir, header.rank);
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
  o.str(r.hostname_list);  // last: spills written before it was added end here
  return o.take();
}

SpillState deserialize_state(const std::string &bytes) {
  ByteReader in(bytes);
  SpillState st;
  RunInfo &r = st.run;
  r.nranks = in.pod<int32_t>();
  r.command = in.str();
  r.start_time = in.str();
  r.start_epoch_ns = in.pod<int64_t>();
  r.counters_unavailable = in.strs();
  r.counters_recorded = in.strs();
  r.collector_config = in.str();
  r.mpi_library = in.str();
  RankTrace &t = st.profile_part;
  t.rank = in.pod<int32_t>();
  t.complete = in.pod<uint8_t>() != 0;
  t.region_paths = in.strs();
  t.metric_names = in.strs();
  t.profile = in.vec<double>();
  for (auto n = in.pod<uint64_t>(); n > 0; --n) t.comms.push_back(in.comm());
  for (auto n = in.pod<uint64_t>(); n > 0; --n) t.callsites.push_back(in.callsite());
  t.clock = in.pod<ClockRecord>();
  if (in.more()) r.hostname_list = in.str();
  return st;
}

template <class T>
static void append_array(std::vector<T> &dst, const std::string &payload) {
  size_t n = payload.size() / sizeof(T);
  size_t old = dst.size();
  dst.resize(old + n);
  std::memcpy(dst.data() + old, payload.data(), n * sizeof(T));
}

SpillContents read_spill(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open spill file");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  SpillContents out;
  if (data.size() < sizeof(SpillHeader) || std::memcmp(data.data(), kSpillMagic, 8) != 0)
    throw std::runtime_error(path + ": not a perfsift spill file (bad header)");
  std::memcpy(&out.header, data.data(), sizeof(SpillHeader));
  out.trace.rank = out.header.rank;
  size_t pos = sizeof(SpillHeader);
  while (pos < data.size()) {
    if (pos + sizeof(ChunkHeader) > data.size()) {
      out.warning = path + ": torn chunk header at byte " + std::to_string(pos) + " dropped";
      break;
    }
    ChunkHeader h;
    std::memcpy(&h, data.data() + pos, sizeof h);
    pos += sizeof h;
    if (pos + h.bytes > data.size()) {
      out.warning = path + ": torn chunk at byte " + std::to_string(pos) + " dropped";
      break;
    }
    std::string payload = data.substr(pos, h.bytes);
    pos += h.bytes;
    switch (h.type) {
      case kChunkEvents:
        append_array(out.trace.events, payload);
        break;
      case kChunkRequests:
        append_array(out.trace.requests, payload);
        break;
      case kChunkCompletions:
        append_array(out.trace.completions, payload);
        break;
      case kChunkSteps:
        append_array(out.trace.steps, payload);
        break;
      case kChunkState: {
        SpillState st = deserialize_state(payload);
        out.run = st.run;
        auto &t = out.trace;
        t.complete = st.profile_part.complete;
        t.region_paths = std::move(st.profile_part.region_paths);
        t.metric_names = std::move(st.profile_part.metric_names);
        t.profile = std::move(st.profile_part.profile);
        t.comms = std::move(st.profile_part.comms);
        t.callsites = std::move(st.profile_part.callsites);
        t.clock = st.profile_part.clock;
        out.has_state = true;
        break;
      }
      default:
        throw std::runtime_error(path + ": unknown chunk type " + std::to_string(h.type) + " at byte " +
                                 std::to_string(pos - h.bytes - sizeof h));
    }
  }
  return out;
}

}  // namespace perfsift::io
