#include "comm_table.h"

namespace perfsift::collect {

namespace {

uint64_t fnv1a(const std::vector<int32_t> &a, const std::vector<int32_t> &b) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int32_t v) {
    for (int i = 0; i < 4; ++i) {
      h ^= static_cast<uint8_t>(v >> (8 * i));
      h *= 1099511628211ull;
    }
  };
  mix(static_cast<int32_t>(a.size()));
  for (auto v : a) mix(v);
  mix(static_cast<int32_t>(b.size()));
  for (auto v : b) mix(v);
  return h;
}

}  // namespace

void CommTable::add(MPI_Comm comm) {
  io::CommRecord rec;
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  MPI_Group world_group, group;
  PMPI_Comm_group(MPI_COMM_WORLD, &world_group);
  auto translate = [&](MPI_Group g, std::vector<int32_t> &out) {
    int n = 0;
    PMPI_Group_size(g, &n);
    std::vector<int> in(n), res(n);
    for (int i = 0; i < n; ++i) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in.data(), world_group, res.data());
    out.assign(res.begin(), res.end());
  };
  PMPI_Comm_group(comm, &group);
  translate(group, rec.members);
  PMPI_Group_free(&group);
  if (inter) {
    PMPI_Comm_remote_group(comm, &group);
    translate(group, rec.remote);
    PMPI_Group_free(&group);
    // Both sides must derive the same key: hash the two groups in a fixed order.
    if (!rec.remote.empty() && !rec.members.empty() && rec.remote.front() < rec.members.front()) {
      uint64_t h = fnv1a(rec.remote, rec.members);
      int32_t n = ++m_hash_seen[h];
      rec.key = h ^ (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull);
    }
  }
  PMPI_Group_free(&world_group);
  if (rec.key == 0) {
    uint64_t h = fnv1a(rec.members, rec.remote);
    int32_t n = ++m_hash_seen[h];
    rec.key = h ^ (static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull);
  }
  m_index_of_handle[comm] = static_cast<int32_t>(m_comms.size());
  m_comms.push_back(std::move(rec));
  m_inter.push_back(inter ? 1 : 0);
}

int32_t CommTable::index(MPI_Comm comm, bool *inter) {
  int32_t idx = -1;
  if (comm == MPI_COMM_NULL) {
    idx = -1;
  } else if (comm == m_last_comm) {
    idx = m_last_index;
  } else {
    auto it = m_index_of_handle.find(comm);
    if (it == m_index_of_handle.end()) {
      add(comm);  // created by a call we do not wrap, or by MPI_Comm_idup
      it = m_index_of_handle.find(comm);
    }
    idx = it->second;
    m_last_comm = comm;
    m_last_index = idx;
  }
  if (inter) *inter = idx >= 0 && m_inter[idx];
  return idx;
}

void CommTable::forget(MPI_Comm comm) {
  m_index_of_handle.erase(comm);
  if (comm == m_last_comm) m_last_comm = MPI_COMM_NULL;
}

int32_t CommTable::world_rank(int32_t idx, int peer, bool remote) const {
  if (idx < 0 || peer < 0) return -1;
  const auto &c = m_comms[idx];
  const auto &list = (remote && !c.remote.empty()) ? c.remote : c.members;
  return peer < static_cast<int>(list.size()) ? list[peer] : -1;
}

}  // namespace perfsift::collect
