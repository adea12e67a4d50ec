#include "store_writers.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <string>

#include "io/spill.h"
#include "store_module.h"

namespace perfsift::collect {

StoreWriters::~StoreWriters() {
  if (writers != MPI_COMM_NULL) PMPI_Comm_free(&writers);
}

uint64_t record_bytes(const io::RankTrace &t) {
  return t.events.size() * sizeof(io::Event) + t.requests.size() * sizeof(io::RequestRecord) +
         t.completions.size() * sizeof(io::CompletionRecord) + t.steps.size() * sizeof(io::StepRecord);
}

void plan_store_writers(MPI_Comm comm, uint64_t my_record_bytes, uint64_t aggregate_bytes, StoreWriters &plan) {
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  plan.writer = true;
  plan.writer_rank = me;
  plan.members.clear();
  if (aggregate_bytes > 0) {
    MPI_Comm node = MPI_COMM_NULL;
    PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node);
    int node_size = 0;
    PMPI_Comm_size(node, &node_size);
    // Every rank of the node forms the same groups from the same list (node order is
    // rank order: the split's key).
    const std::array<int64_t, 2> mine{me, static_cast<int64_t>(my_record_bytes)};
    std::vector<int64_t> all(2 * static_cast<size_t>(node_size));
    PMPI_Allgather(mine.data(), 2, MPI_INT64_T, all.data(), 2, MPI_INT64_T, node);
    PMPI_Comm_free(&node);
    int64_t leader = -1, prev = -2;
    uint64_t group_bytes = 0;
    for (int i = 0; i < node_size; ++i) {
      const int64_t rank = all[2 * i];
      const auto bytes = static_cast<uint64_t>(all[2 * i + 1]);
      if (leader < 0 || rank != prev + 1 || group_bytes + bytes > aggregate_bytes) {
        leader = rank;
        group_bytes = 0;
      }
      group_bytes += bytes;
      prev = rank;
      if (rank == me) plan.writer_rank = static_cast<int>(leader);
      if (leader == me && rank != me) plan.members.push_back(static_cast<int>(rank));
    }
    plan.writer = plan.writer_rank == me;
  }
  int writers = plan.writer ? 1 : 0;
  PMPI_Allreduce(&writers, &plan.group_count, 1, MPI_INT, MPI_SUM, comm);
  if (plan.writers != MPI_COMM_NULL) PMPI_Comm_free(&plan.writers);
  PMPI_Comm_split(comm, plan.writer ? 0 : MPI_UNDEFINED, me, &plan.writers);
}

namespace {

// Large payloads go in pieces: MPI counts are ints.
constexpr size_t kPiece = size_t{1} << 30;

void send_bytes(const void *data, size_t n, int dest, int tag, MPI_Comm comm) {
  const char *p = static_cast<const char *>(data);
  for (size_t done = 0; done < n;) {
    const size_t k = std::min(kPiece, n - done);
    PMPI_Send(p + done, static_cast<int>(k), MPI_BYTE, dest, tag, comm);
    done += k;
  }
}

void recv_bytes(void *data, size_t n, int source, int tag, MPI_Comm comm) {
  char *p = static_cast<char *>(data);
  for (size_t done = 0; done < n;) {
    const size_t k = std::min(kPiece, n - done);
    PMPI_Recv(p + done, static_cast<int>(k), MPI_BYTE, source, tag, comm, MPI_STATUS_IGNORE);
    done += k;
  }
}

// Everything of a trace but its records: the spill state's encoding.
std::string encode_rest(const io::RankTrace &t) {
  io::SpillState st;
  io::RankTrace &r = st.profile_part;
  r.rank = t.rank;
  r.complete = t.complete;
  r.region_paths = t.region_paths;
  r.metric_names = t.metric_names;
  r.profile = t.profile;
  r.comms = t.comms;
  r.callsites = t.callsites;
  r.clock = t.clock;
  r.program_os = t.program_os;
  return io::serialize_state(st);
}

template <class T>
void recv_vector(std::vector<T> &v, uint64_t n, int source, int tag, MPI_Comm comm) {
  v.resize(n);
  recv_bytes(v.data(), n * sizeof(T), source, tag, comm);
}

}  // namespace

void gather_traces(MPI_Comm comm, const StoreWriters &plan, std::vector<io::RankTrace> &owned, int tag) {
  if (!plan.writer) {
    const io::RankTrace &t = owned.front();
    const std::string rest = encode_rest(t);
    const std::array<uint64_t, 5> sizes{rest.size(), t.events.size(), t.requests.size(), t.completions.size(),
                                        t.steps.size()};
    PMPI_Send(sizes.data(), 5, MPI_UINT64_T, plan.writer_rank, tag, comm);
    send_bytes(rest.data(), rest.size(), plan.writer_rank, tag, comm);
    send_bytes(t.events.data(), t.events.size() * sizeof(io::Event), plan.writer_rank, tag, comm);
    send_bytes(t.requests.data(), t.requests.size() * sizeof(io::RequestRecord), plan.writer_rank, tag, comm);
    send_bytes(t.completions.data(), t.completions.size() * sizeof(io::CompletionRecord), plan.writer_rank, tag, comm);
    send_bytes(t.steps.data(), t.steps.size() * sizeof(io::StepRecord), plan.writer_rank, tag, comm);
    return;
  }
  for (int member : plan.members) {
    std::array<uint64_t, 5> sizes{};
    PMPI_Recv(sizes.data(), 5, MPI_UINT64_T, member, tag, comm, MPI_STATUS_IGNORE);
    std::string rest(sizes[0], '\0');
    recv_bytes(rest.data(), rest.size(), member, tag, comm);
    io::RankTrace t = io::deserialize_state(rest).profile_part;
    recv_vector(t.events, sizes[1], member, tag, comm);
    recv_vector(t.requests, sizes[2], member, tag, comm);
    recv_vector(t.completions, sizes[3], member, tag, comm);
    recv_vector(t.steps, sizes[4], member, tag, comm);
    owned.push_back(std::move(t));
  }
}

WriteStoreFn load_store_writer(const void *anchor, std::string *error) {
  Dl_info info{};
  if (!dladdr(anchor, &info) || !info.dli_fname) {
    *error = "cannot locate the collector library to find " + std::string(kStoreModule) + " beside it";
    return nullptr;
  }
  std::string dir(info.dli_fname);
  const auto slash = dir.rfind('/');
  dir = slash == std::string::npos ? "." : dir.substr(0, slash);
  const std::string path = dir + "/" + kStoreModule;
  void *module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const char *why = dlerror();
    *error = "cannot load " + path + " (" + (why ? why : "unknown reason") + "); install it beside libperfsift_collect";
    return nullptr;
  }
  auto fn = reinterpret_cast<WriteStoreFn>(dlsym(module, kStoreSymbol));
  if (!fn) *error = path + " lacks " + kStoreSymbol + " (a module of another perfsift version?)";
  return fn;
}

}  // namespace perfsift::collect
