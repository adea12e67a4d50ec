// The recorders behind each wrapper template: translate MPI arguments into event
// fields (world ranks, communicator indices, bytes, request linkage).
#include <new>

#include "recorder.h"
#include "runtime.h"

namespace perfsift::collect {

using io::CompletionRecord;
using io::EventFlag;

namespace bytes {

// Predefined types never change size, so their sizes are cached (a handle of a
// derived type may be freed and reused, so those are always asked).
int64_t type_size(MPI_Datatype type) {
  struct Entry {
    MPI_Datatype type;
    int64_t size;
  };
  static Entry cache[16];
  static int used = 0;
  if (type == MPI_DATATYPE_NULL) return 0;
  for (int i = 0; i < used; ++i)
    if (cache[i].type == type) return cache[i].size;
  MPI_Count size = 0;
  PMPI_Type_size_x(type, &size);
  const int64_t bytes = size == MPI_UNDEFINED ? 0 : static_cast<int64_t>(size);
  int ni = 0, na = 0, nd = 0, combiner = 0;
  PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner);
  if (combiner == MPI_COMBINER_NAMED && used < 16) cache[used++] = {type, bytes};
  return bytes;
}

int group_size(MPI_Comm comm) {
  int inter = 0, n = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter)
    PMPI_Comm_remote_size(comm, &n);
  else
    PMPI_Comm_size(comm, &n);
  return n;
}

int my_rank(MPI_Comm comm) {
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

bool is_root(MPI_Comm comm, int root) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) return root == MPI_ROOT;
  return my_rank(comm) == root;
}

static void degrees(MPI_Comm comm, int &in, int &out) {
  int topo = MPI_UNDEFINED;
  in = out = 0;
  PMPI_Topo_test(comm, &topo);
  if (topo == MPI_CART) {
    int nd = 0;
    PMPI_Cartdim_get(comm, &nd);
    in = out = 2 * nd;
  } else if (topo == MPI_GRAPH) {
    int n = 0;
    PMPI_Graph_neighbors_count(comm, my_rank(comm), &n);
    in = out = n;
  } else if (topo == MPI_DIST_GRAPH) {
    int weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
  }
}

int in_degree(MPI_Comm comm) {
  int in, out;
  degrees(comm, in, out);
  return in;
}

int out_degree(MPI_Comm comm) {
  int in, out;
  degrees(comm, in, out);
  return out;
}

int64_t vol_sum_n(const int *counts, MPI_Datatype type, int n) {
  if (!counts) return 0;
  int64_t total = 0;
  for (int i = 0; i < n; ++i) total += counts[i] > 0 ? counts[i] : 0;
  return total * type_size(type);
}

int64_t vol_sum_wn(const int *counts, const MPI_Datatype *types, int n) {
  if (!counts || !types) return 0;
  int64_t total = 0;
  for (int i = 0; i < n; ++i) total += counts[i] > 0 ? static_cast<int64_t>(counts[i]) * type_size(types[i]) : 0;
  return total;
}

}  // namespace bytes

// Fortran's MPI_IN_PLACE and MPI_BOTTOM are addresses of common blocks, not the C
// sentinels; map them so byte counts treat them alike. Weak: other MPIs lack them.
extern "C" {
extern char mpi_fortran_in_place_ __attribute__((weak));
extern char mpi_fortran_bottom_ __attribute__((weak));
}

const void *f2c_buffer(const void *b) {
  if (&mpi_fortran_in_place_ && b == &mpi_fortran_in_place_) return MPI_IN_PLACE;
  if (&mpi_fortran_bottom_ && b == &mpi_fortran_bottom_) return MPI_BOTTOM;
  return b;
}

namespace {

// Fills peer/comm/flags for a point-to-point partner given in `comm`'s numbering.
void set_peer(Event &ev, MPI_Comm comm, int peer) {
  Runtime &rt = runtime();
  bool inter = false;
  ev.comm = rt.comms().index(comm, &inter);
  if (inter) ev.flags |= io::kInterComm;
  if (peer == MPI_PROC_NULL) {
    ev.peer = -1;
    ev.flags |= io::kProcNull;
  } else if (peer == MPI_ANY_SOURCE) {
    ev.peer = -2;
    ev.flags |= io::kWildcardSource;
  } else {
    ev.peer = rt.comms().world_rank(ev.comm, peer, inter);
  }
}

int64_t received_bytes(const MPI_Status *status, MPI_Datatype) {
  if (!status) return 0;
  int n = 0;
  PMPI_Get_count(status, MPI_BYTE, &n);
  if (n != MPI_UNDEFINED) return n;
  MPI_Count big = 0;  // over 2 GiB
  PMPI_Get_elements_x(status, MPI_BYTE, &big);
  return big == MPI_UNDEFINED ? 0 : static_cast<int64_t>(big);
}

// Sets the event's peer/tag from a receive status (wildcards resolved).
void apply_status(Event &ev, int requested_source, int requested_tag, const MPI_Status *status, MPI_Datatype type) {
  Runtime &rt = runtime();
  if (requested_source == MPI_PROC_NULL || !status) return;
  if (status->MPI_SOURCE == MPI_PROC_NULL) {
    ev.flags |= io::kProcNull;
    ev.peer = -1;
    return;
  }
  ev.peer = rt.comms().world_rank(ev.comm, status->MPI_SOURCE, ev.flags & io::kInterComm);
  if (requested_tag == MPI_ANY_TAG) ev.flags |= io::kWildcardTag;
  ev.tag = status->MPI_TAG;
  ev.bytes_recv = received_bytes(status, type);
  ev.bytes = ev.bytes_recv;
}

void start_request(Event &ev, MPI_Request request, int32_t kind, int64_t bytes, bool persistent) {
  if (request == MPI_REQUEST_NULL) return;
  Runtime &rt = runtime();
  RequestState st;
  st.peer = ev.peer;
  st.tag = ev.tag;
  st.comm = ev.comm;
  st.kind = kind;
  st.bytes = bytes;
  st.persistent = persistent;
  ev.request = rt.new_request(request, st, rt.next_event_index());
}

// The request `p` claimed for handle i reached completion inside this event.
void complete_one(Event &ev, Pending &p, int i, const MPI_Status *status) {
  Runtime &rt = runtime();
  const RequestState *found = p.request(i);
  if (!found) return;  // created before tracing started, or not by a traced call
  const RequestState state = *found;
  const RequestState *st = &state;
  p.completed(i);
  CompletionRecord c;
  c.event = rt.next_event_index();
  c.request = st->id;
  int cancelled = 0;
  if (status) PMPI_Test_cancelled(status, &cancelled);
  c.cancelled = cancelled;
  if (st->kind == io::kReqRecv && status && !cancelled) {
    if (status->MPI_SOURCE != MPI_PROC_NULL && status->MPI_SOURCE != MPI_ANY_SOURCE) {
      bool inter = st->comm >= 0 && (ev.flags & io::kInterComm);
      c.source = rt.comms().world_rank(st->comm, status->MPI_SOURCE, inter);
      c.tag = status->MPI_TAG;
      c.bytes = received_bytes(status, MPI_BYTE);
      ev.bytes_recv += c.bytes;
      ev.bytes += c.bytes;
    }
  }
  if (ev.request < 0) ev.request = st->id;
  rt.add_completion(c);
}

}  // namespace

// ---------------------------------------------------------------- point to point

void on_send(Event &ev, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  set_peer(ev, comm, dest);
  ev.tag = tag;
  if (!(ev.flags & io::kProcNull)) ev.bytes = bytes::vol(count, type);
}

void on_recv(Event &ev, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, const MPI_Status *status) {
  (void)count;
  set_peer(ev, comm, source);
  ev.tag = tag;
  apply_status(ev, source, tag, status, type);
}

void on_isend(Event &ev, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request request) {
  on_send(ev, count, type, dest, tag, comm);
  start_request(ev, request, io::kReqSend, ev.bytes, false);
}

void on_irecv(Event &ev, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request request) {
  set_peer(ev, comm, source);
  ev.tag = tag;
  if (tag == MPI_ANY_TAG) ev.flags |= io::kWildcardTag;
  start_request(ev, request, io::kReqRecv, bytes::vol(count, type), false);
}

void on_send_init(Event &ev, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request request) {
  set_peer(ev, comm, dest);
  ev.tag = tag;
  const int64_t b = (ev.flags & io::kProcNull) ? 0 : bytes::vol(count, type);
  // The template is remembered; each MPI_Start activates a new request id.
  RequestState st{-1, ev.peer, tag, ev.comm, io::kReqSend, b, true};
  runtime().new_request(request, st, runtime().next_event_index());
  ev.request = runtime().requests().find(request)->id;
}

void on_recv_init(Event &ev, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request request) {
  set_peer(ev, comm, source);
  ev.tag = tag;
  RequestState st{-1, ev.peer, tag, ev.comm, io::kReqRecv, bytes::vol(count, type), true};
  runtime().new_request(request, st, runtime().next_event_index());
  ev.request = runtime().requests().find(request)->id;
}

void on_start(Event &ev, int count, const MPI_Request *requests) {
  Runtime &rt = runtime();
  for (int i = 0; i < count; ++i) {
    RequestState *st = rt.requests().find(requests[i]);
    if (!st) continue;
    RequestState tmpl = *st;
    int64_t id = rt.new_request(requests[i], tmpl, rt.next_event_index());
    if (ev.request < 0) {
      ev.request = id;
      ev.peer = tmpl.peer;
      ev.tag = tmpl.tag;
      ev.comm = tmpl.comm;
    }
    if (tmpl.kind == io::kReqSend) ev.bytes += tmpl.bytes;
  }
}

void on_sendrecv(Event &ev, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, int recvcount,
                 MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, const MPI_Status *status) {
  (void)recvcount;
  on_send(ev, sendcount, sendtype, dest, sendtag, comm);
  // The receive half is a completion row with request -1 (see docs/trace-store.md).
  CompletionRecord c;
  c.event = runtime().next_event_index();
  c.request = -1;
  if (source != MPI_PROC_NULL && status && status->MPI_SOURCE != MPI_PROC_NULL) {
    c.source = runtime().comms().world_rank(ev.comm, status->MPI_SOURCE, ev.flags & io::kInterComm);
    c.tag = status->MPI_TAG;
    c.bytes = received_bytes(status, recvtype);
    if (source == MPI_ANY_SOURCE) ev.flags |= io::kWildcardSource;
    if (recvtag == MPI_ANY_TAG) ev.flags |= io::kWildcardTag;
  }
  ev.bytes_recv = c.bytes;
  ev.bytes += c.bytes;
  runtime().add_completion(c);
}

// MPI_(I)mrecv name no communicator: it comes from the probe that matched the message.
void on_mrecv(Event &ev, MPI_Datatype type, MPI_Message matched, const MPI_Status *status) {
  ev.comm = runtime().requests().take_message(matched);
  if (matched == MPI_MESSAGE_NO_PROC) ev.flags |= io::kProcNull;
  if (status && status->MPI_SOURCE != MPI_PROC_NULL) {
    ev.peer = runtime().comms().world_rank(ev.comm, status->MPI_SOURCE, false);
    ev.tag = status->MPI_TAG;
    ev.bytes_recv = ev.bytes = received_bytes(status, type);
  }
}

void on_imrecv(Event &ev, int count, MPI_Datatype type, MPI_Message matched, MPI_Request request) {
  ev.comm = runtime().requests().take_message(matched);
  ev.peer = -2;  // resolved by the completion's status
  start_request(ev, request, io::kReqRecv, bytes::vol(count, type), false);
}

void on_mprobe(Event &ev, int source, int tag, MPI_Comm comm, int found, const MPI_Status *status,
               MPI_Message message) {
  on_probe(ev, source, tag, comm, found, status);
  if (found && message != MPI_MESSAGE_NULL) runtime().requests().remember_message(message, ev.comm);
}

void on_nothing_completed(Event &ev) { ev.flags |= io::kNoMatch; }

void on_probe(Event &ev, int source, int tag, MPI_Comm comm, int found, const MPI_Status *status) {
  set_peer(ev, comm, source);
  ev.tag = tag;
  if (!found) {
    ev.flags |= io::kNoMatch;
    return;
  }
  if (status && status->MPI_SOURCE != MPI_PROC_NULL) {
    ev.peer = runtime().comms().world_rank(ev.comm, status->MPI_SOURCE, ev.flags & io::kInterComm);
    ev.tag = status->MPI_TAG;
  }
}

// ---------------------------------------------------------------- completion

Pending::Pending(int count, const MPI_Request *requests) : m_count(count > 0 ? count : 0), m_claimed(g_shared_lock) {
  if (m_count <= 8) {
    for (int i = 0; i < m_count; ++i) m_small[i] = requests[i];
    m_data = m_small;
  } else {
    m_large.assign(requests, requests + m_count);
    m_data = m_large.data();
  }
  if (!m_claimed) return;
  if (m_count <= 8) {
    m_claims = reinterpret_cast<Claim *>(m_small_claims);
    for (int i = 0; i < m_count; ++i) new (&m_claims[i]) Claim{};
  } else {
    m_large_claims.resize(static_cast<size_t>(m_count));
    m_claims = m_large_claims.data();
  }
  const SharedTables shared;
  Runtime &rt = runtime();
  for (int i = 0; i < m_count; ++i) m_claims[i].has = rt.requests().claim(m_data[i], m_claims[i].st);
}

const RequestState *Pending::request(int i) const {
  if (!m_claimed) return runtime().requests().find_completing(m_data[i]);
  return m_claims[i].has ? &m_claims[i].st : nullptr;
}

void Pending::completed(int i) {
  if (m_claimed) {
    m_claims[i].taken = true;
  } else {
    runtime().requests().drop_completing(m_data[i]);
  }
}

Pending::~Pending() {
  if (!m_claimed) return;
  bool left = false;
  for (int i = 0; i < m_count; ++i) left |= m_claims[i].has && !m_claims[i].taken && !m_claims[i].st.persistent;
  if (!left) return;
  const SharedTables shared;
  Runtime &rt = runtime();
  for (int i = m_count - 1; i >= 0; --i)  // back in their order, first in line
    if (m_claims[i].has && !m_claims[i].taken && !m_claims[i].st.persistent)
      rt.requests().give_back(m_data[i], m_claims[i].st);
}

void on_completed(Event &ev, Pending &p, int index, const MPI_Status *status) {
  if (index >= 0 && index < p.count()) complete_one(ev, p, index, status);
}

void on_completed_all(Event &ev, Pending &p, const MPI_Status *statuses) {
  for (int i = 0; i < p.count(); ++i) complete_one(ev, p, i, statuses ? &statuses[i] : nullptr);
}

void on_completed_index(Event &ev, Pending &p, int index, const MPI_Status *status) {
  if (index == MPI_UNDEFINED) {
    ev.flags |= io::kNoMatch;
    return;
  }
  on_completed(ev, p, index, status);
}

void on_completed_some(Event &ev, Pending &p, int outcount, const int *indices, const MPI_Status *statuses) {
  if (outcount == MPI_UNDEFINED || outcount == 0) {
    ev.flags |= io::kNoMatch;
    return;
  }
  for (int i = 0; i < outcount; ++i) on_completed(ev, p, indices[i], statuses ? &statuses[i] : nullptr);
}

void on_request_free(Event &ev, Pending &p) {
  const RequestState *st = p.count() > 0 ? p.request(0) : nullptr;
  if (!st) return;
  ev.request = st->id;
  const bool persistent = st->persistent;
  p.completed(0);
  if (persistent) runtime().requests().drop(p[0]);  // freed: completion leaves persistent ones in the table
}

void on_cancel(Event &ev, Pending &p) {
  if (p.count() > 0 && p.request(0)) ev.request = p.request(0)->id;  // still to be completed: returned
}

// ---------------------------------------------------------------- collectives

void on_coll(Event &ev, MPI_Comm comm, int root, int64_t sent, int64_t recv) {
  Runtime &rt = runtime();
  bool inter = false;
  ev.comm = rt.comms().index(comm, &inter);
  if (inter) ev.flags |= io::kInterComm;
  if (root >= 0) ev.peer = rt.comms().world_rank(ev.comm, root, inter);
  ev.bytes = sent + recv;
  ev.bytes_recv = recv;
}

void on_icoll(Event &ev, MPI_Comm comm, int root, int64_t sent, int64_t recv, MPI_Request request) {
  on_coll(ev, comm, root, sent, recv);
  start_request(ev, request, io::kReqCollective, ev.bytes, false);
}

void on_comm_new(Event &ev, MPI_Comm parent, MPI_Comm created) {
  Runtime &rt = runtime();
  ev.comm = rt.comms().index(parent);
  if (created != MPI_COMM_NULL) {
    rt.comms().forget(created);  // a reused handle value must not keep an old comm's identity
    ev.peer = -1;
    ev.tag = rt.comms().index(created);
    ev.flags |= io::kTagIsComm;
  }
}

void on_comm_pending(Event &ev, MPI_Comm parent) { ev.comm = runtime().comms().index(parent); }

void on_comm_free(Event &ev, MPI_Comm freed) {
  Runtime &rt = runtime();
  ev.comm = rt.comms().index(freed);
  rt.comms().forget(freed);
}

void on_file_open(Event &ev, MPI_Comm comm) { ev.comm = runtime().comms().index(comm); }

void on_io(Event & /*ev: the volume goes to the region profile*/, int count, MPI_Datatype type, bool write) {
  const int64_t b = bytes::vol(count, type);
  runtime().add_io_bytes(b, write);
}

}  // namespace perfsift::collect
