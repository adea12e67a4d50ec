// What the generated wrappers call: the per-call scope, the recorders for each
// wrapper template, and the small helpers that convert Fortran arguments.
//
// Error policy (collect layer): nothing here throws into the host application and
// nothing prints on the hot path; failures are counted and reported at finalize.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "io/trace_model.h"
#include "ops.h"

#define PERFSIFT_EXPORT __attribute__((visibility("default")))

namespace perfsift::collect {

using io::Event;

// ---------------------------------------------------------------- state the hot path reads
extern bool g_tracing;         // between our MPI_Init and MPI_Finalize, config valid
extern uint32_t g_group_mask;  // bit per Group
// Inside a traced MPI call (on this thread): nested calls are not traced. initial-exec:
// a preloaded library may use static TLS, and it spares the hot path a __tls_get_addr call;
// constinit spares the other files (the wrappers) a call to its TLS init wrapper.
extern thread_local constinit bool t_in_call __attribute__((tls_model("initial-exec")));
// MPI_THREAD_MULTIPLE: calls on several threads may overlap, and the recorders that
// update the rank's shared tables (requests, communicators, messages) take this mutex.
extern bool g_shared_lock;
extern std::mutex g_shared_mutex;

// Held while a recorder runs (generated wrappers); a no-op below MPI_THREAD_MULTIPLE.
class SharedTables {
 public:
  SharedTables() : m_locked(g_shared_lock) {
    if (m_locked) g_shared_mutex.lock();
  }
  ~SharedTables() {
    if (m_locked) g_shared_mutex.unlock();
  }
  SharedTables(const SharedTables &) = delete;
  SharedTables &operator=(const SharedTables &) = delete;

 private:
  bool m_locked;
};

inline bool tracing(Group g) { return g_tracing && !t_in_call && (g_group_mask >> static_cast<unsigned>(g) & 1u); }

// One traced call: stamps entry on construction, exit on exit(), commits on destruction.
// The event is written in place, in the next free slot of the calling thread's buffer.
struct Call {
  Event &ev;
  Call(Op op, void *site);
  void exit();
  ~Call();
};

// ---------------------------------------------------------------- request bookkeeping
struct RequestState {
  int64_t id = -1;
  int32_t peer = -1, tag = -1, comm = -1, kind = 0;
  int64_t bytes = 0;
  bool persistent = false;
  int32_t thread = 0;  // the thread that started it
};

// Handles captured before a completion call (which overwrites them with
// MPI_REQUEST_NULL), each with the live request it names, claimed from the rank's table
// before the call: once the call frees a request, MPI may hand its handle value to a
// request another thread starts, which must not be taken for this one. The claims no
// completion took go back to the table when the call is done. Below
// MPI_THREAD_MULTIPLE calls cannot overlap: the table is read when the call is done, as
// it ever was (no claims: a failed MPI_Test costs nothing).
class Pending {
 public:
  Pending(int count, const MPI_Request *requests);
  ~Pending();
  Pending(const Pending &) = delete;
  Pending &operator=(const Pending &) = delete;
  int count() const { return m_count; }
  MPI_Request operator[](int i) const { return m_data[i]; }
  // The request handle i named, or null (not started by a traced call).
  const RequestState *request(int i) const;
  void completed(int i);  // handle i's request is done: out of the table (unless persistent)

 private:
  struct Claim {
    RequestState st;
    bool has = false, taken = false;
  };
  int m_count;
  bool m_claimed;
  MPI_Request m_small[8];
  alignas(Claim) unsigned char m_small_claims[8 * sizeof(Claim)];  // constructed only when claiming
  std::vector<MPI_Request> m_large;
  std::vector<Claim> m_large_claims;
  const MPI_Request *m_data;
  Claim *m_claims = nullptr;
};

// A status array the wrapper can always write: the user's, or ours when ignored.
class StatusArray {
 public:
  // MPI_STATUSES_IGNORE is a null pointer in Open MPI, (MPI_Status *)1 in MPICH.
  StatusArray(int n, MPI_Status *user) : m_user(user == MPI_STATUSES_IGNORE ? nullptr : user) {
    if (!m_user) m_own.resize(n > 0 ? n : 1);
  }
  StatusArray(int n, const class FortranStatusArray &fortran);
  MPI_Status *data() { return m_user ? m_user : m_own.data(); }

 private:
  MPI_Status *m_user = nullptr;
  std::vector<MPI_Status> m_own;
};

// ---------------------------------------------------------------- recorders, one per template
void on_send(Event &ev, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
void on_recv(Event &ev, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, const MPI_Status *status);
void on_isend(Event &ev, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request request);
void on_irecv(Event &ev, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request request);
void on_send_init(Event &ev, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request request);
void on_recv_init(Event &ev, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request request);
void on_start(Event &ev, int count, const MPI_Request *requests);
void on_sendrecv(Event &ev, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, int recvcount,
                 MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, const MPI_Status *status);
void on_mrecv(Event &ev, MPI_Datatype type, MPI_Message matched, const MPI_Status *status);
void on_imrecv(Event &ev, int count, MPI_Datatype type, MPI_Message matched, MPI_Request request);
void on_probe(Event &ev, int source, int tag, MPI_Comm comm, int found, const MPI_Status *status);
void on_mprobe(Event &ev, int source, int tag, MPI_Comm comm, int found, const MPI_Status *status, MPI_Message message);
void on_nothing_completed(Event &ev);
void on_completed(Event &ev, Pending &pending, int index, const MPI_Status *status);
void on_completed_all(Event &ev, Pending &pending, const MPI_Status *statuses);
void on_completed_index(Event &ev, Pending &pending, int index, const MPI_Status *status);
void on_completed_some(Event &ev, Pending &pending, int outcount, const int *indices, const MPI_Status *statuses);
void on_request_free(Event &ev, Pending &pending);
void on_cancel(Event &ev, Pending &pending);
void on_coll(Event &ev, MPI_Comm comm, int root, int64_t sent, int64_t recv);
void on_icoll(Event &ev, MPI_Comm comm, int root, int64_t sent, int64_t recv, MPI_Request request);
void on_comm_new(Event &ev, MPI_Comm parent, MPI_Comm created);
void on_comm_pending(Event &ev, MPI_Comm parent);
void on_comm_free(Event &ev, MPI_Comm freed);
void on_file_open(Event &ev, MPI_Comm comm);
void on_io(Event &ev, int count, MPI_Datatype type, bool write);

// ---------------------------------------------------------------- byte-count helpers
// Used by the `sent`/`recv` expressions of the spec. All counts are int64 bytes.
namespace bytes {
int64_t type_size(MPI_Datatype type);
inline int64_t vol(int count, MPI_Datatype type) {
  return count > 0 ? static_cast<int64_t>(count) * type_size(type) : 0;
}
// A send buffer of MPI_IN_PLACE contributes no separate send volume beyond the local block.
inline int64_t vol(int count, MPI_Datatype type, const void *buf) { return buf == MPI_IN_PLACE ? 0 : vol(count, type); }
int group_size(MPI_Comm comm);  // remote group size for intercommunicators
int my_rank(MPI_Comm comm);
bool is_root(MPI_Comm comm, int root);
int in_degree(MPI_Comm comm);
int out_degree(MPI_Comm comm);
int64_t vol_sum_n(const int *counts, MPI_Datatype type, int n);
inline int64_t vol_sum(const int *counts, MPI_Datatype type, MPI_Comm comm) {
  return vol_sum_n(counts, type, group_size(comm));
}
inline int64_t vol_sum(const int *counts, MPI_Datatype type, MPI_Comm comm, const void *buf) {
  return buf == MPI_IN_PLACE ? 0 : vol_sum(counts, type, comm);
}
int64_t vol_sum_wn(const int *counts, const MPI_Datatype *types, int n);
inline int64_t vol_sum_w(const int *counts, const MPI_Datatype *types, MPI_Comm comm, const void *buf = nullptr) {
  return buf == MPI_IN_PLACE ? 0 : vol_sum_wn(counts, types, group_size(comm));
}
}  // namespace bytes

// ---------------------------------------------------------------- Fortran argument views
static_assert(sizeof(MPI_Fint) == sizeof(int), "perfsift assumes MPI_Fint is a C int");
inline constexpr int kFortranStatusSize = sizeof(MPI_Status) / sizeof(MPI_Fint);

const void *f2c_buffer(const void *fortran_buffer);  // MPI_IN_PLACE / MPI_BOTTOM sentinels
inline void *f2c_buffer(void *b) { return const_cast<void *>(f2c_buffer(static_cast<const void *>(b))); }
inline int fortran_index(MPI_Fint index) { return index == MPI_UNDEFINED ? MPI_UNDEFINED : index - 1; }

class FortranStatus {
 public:
  explicit FortranStatus(MPI_Fint *user) : m_ptr(user == MPI_F_STATUS_IGNORE ? m_own : user) {}
  MPI_Fint *data() { return m_ptr; }
  MPI_Status to_c() const {
    MPI_Status s;
    PMPI_Status_f2c(m_ptr, &s);
    return s;
  }

 private:
  MPI_Fint m_own[kFortranStatusSize + 2] = {};
  MPI_Fint *m_ptr;
};

class FortranStatusArray {
 public:
  FortranStatusArray(int n, MPI_Fint *user) : m_n(n) {
    if (user == MPI_F_STATUSES_IGNORE) {
      m_own.assign(static_cast<size_t>(n > 0 ? n : 1) * kFortranStatusSize, 0);
      m_ptr = m_own.data();
    } else {
      m_ptr = user;
    }
  }
  MPI_Fint *data() const { return m_ptr; }
  int size() const { return m_n; }

 private:
  int m_n;
  MPI_Fint *m_ptr;
  std::vector<MPI_Fint> m_own;
};

inline StatusArray::StatusArray(int n, const FortranStatusArray &f) {
  m_own.resize(n > 0 ? n : 1);
  for (int i = 0; i < n; ++i) PMPI_Status_f2c(f.data() + static_cast<size_t>(i) * kFortranStatusSize, &m_own[i]);
}

template <class Handle>
class HandleArray {
 public:
  template <class Conv>
  HandleArray(int n, const MPI_Fint *f, Conv conv) : m_n(n > 0 ? n : 0), m_h(n > 0 ? n : 1) {
    for (int i = 0; i < m_n; ++i) m_h[i] = conv(f[i]);
  }
  template <class Conv>
  void refresh(const MPI_Fint *f, Conv conv) {
    for (int i = 0; i < m_n; ++i) m_h[i] = conv(f[i]);
  }
  Handle *data() { return m_h.data(); }

 private:
  int m_n;
  std::vector<Handle> m_h;
};

class IndexArray {
 public:
  explicit IndexArray(int n) : m_i(n > 0 ? n : 1) {}
  void from_fortran(const MPI_Fint *f, int outcount) {
    for (int i = 0; outcount != MPI_UNDEFINED && i < outcount; ++i) m_i[i] = f[i] - 1;
  }
  int *data() { return m_i.data(); }

 private:
  std::vector<int> m_i;
};

}  // namespace perfsift::collect
