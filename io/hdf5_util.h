// HDF5 plumbing shared by the trace store and the results store: checked calls that
// turn HDF5 failures into one-line io::Error messages, RAII handles, attributes,
// and row-block tables written collectively. Internal to io/.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "io/trace_store.h"

namespace perfsift::io::h5 {

// ---------------------------------------------------------------- checked HDF5 calls

// HDF5 prints its own error stack by default; we turn it into one io::Error line.
struct SilenceHdf5 {
  H5E_auto2_t func = nullptr;
  void *data = nullptr;
  SilenceHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~SilenceHdf5() { H5Eset_auto2(H5E_DEFAULT, func, data); }
};

inline std::string hdf5_reason() {
  std::string msg;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned n, const H5E_error2_t *e, void *out) -> herr_t {
        if (n == 0 && e->desc) *static_cast<std::string *>(out) = e->desc;
        return 0;
      },
      &msg);
  H5Eclear2(H5E_DEFAULT);
  return msg;
}

class Ctx {
 public:
  explicit Ctx(std::string file) : m_file(std::move(file)) {}
  hid_t operator()(hid_t id, const std::string &what) const {
    if (id < 0) fail(what);
    return id;
  }
  void ok(herr_t rc, const std::string &what) const {
    if (rc < 0) fail(what);
  }
  [[noreturn]] void fail(const std::string &what) const {
    const int err = errno;  // a full disk or a file size limit, under HDF5's own words
    std::string reason = hdf5_reason();
    if (err == ENOSPC || err == EFBIG || err == EDQUOT)
      reason += (reason.empty() ? "" : ": ") + std::string(std::strerror(err));
    throw Error(m_file + ": " + what + (reason.empty() ? "" : " (" + reason + ")"));
  }
  const std::string &file() const { return m_file; }

 private:
  std::string m_file;
};

// Owns an hid_t and closes it with the right function.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*closer)(hid_t)) : m_id(id), m_close(closer) {}
  Handle(Handle &&o) noexcept : m_id(o.m_id), m_close(o.m_close) { o.m_id = -1; }
  Handle &operator=(Handle &&o) noexcept {
    reset();
    m_id = o.m_id;
    m_close = o.m_close;
    o.m_id = -1;
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (m_id >= 0 && m_close) m_close(m_id);
    m_id = -1;
  }
  operator hid_t() const { return m_id; }
  hid_t release() {
    hid_t id = m_id;
    m_id = -1;
    return id;
  }

 private:
  hid_t m_id = -1;
  herr_t (*m_close)(hid_t) = nullptr;
};

// The file type keeps the memory layout: collective writes to compressed datasets
// cannot convert types, and shuffle+deflate removes the padding bytes anyway.
inline Handle file_type_of(hid_t mem) { return Handle(H5Tcopy(mem), H5Tclose); }

// ---------------------------------------------------------------- compound record types

// The HDF5 native type of a record member's C++ type.
template <class M>
hid_t native_type() {
  if constexpr (std::is_same_v<M, int32_t>)
    return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<M, uint16_t>)
    return H5T_NATIVE_UINT16;
  else if constexpr (std::is_same_v<M, int64_t>)
    return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<M, uint64_t>)
    return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<M, double>)
    return H5T_NATIVE_DOUBLE;
  else
    static_assert(sizeof(M) == 0, "no HDF5 native type for this member type");
}

// One member of an on-disk record: its name in the file, where it lies in the C++
// struct, and its HDF5 type (taken from the member's C++ type).
struct Field {
  const char *name;
  size_t offset, size;
  hid_t (*type)();
};

// A Field from a struct member: the file's member name is the C++ member's name.
#define PERFSIFT_H5_FIELD(Record, member)                            \
  ::perfsift::io::h5::Field {                                        \
#member, offsetof(Record, member), sizeof(Record::member),       \
        &::perfsift::io::h5::native_type < decltype(Record::member)> \
  }

// True when the fields lie in Record in order, without overlapping or running past it.
template <class Record, size_t N>
constexpr bool fields_fit(const Field (&fields)[N]) {
  size_t end = 0;
  for (const Field &f : fields) {
    if (f.offset < end) return false;
    end = f.offset + f.size;
  }
  return end <= sizeof(Record);
}

// The compound type of Record (memory layout, padding included) with the fields in
// table order. Both writing and reading use it; file_type_of keeps it on disk.
template <class Record, size_t N>
Handle compound_type(const Field (&fields)[N]) {
  hid_t id = H5Tcreate(H5T_COMPOUND, sizeof(Record));
  for (const Field &f : fields) H5Tinsert(id, f.name, f.offset, f.type());
  return Handle(id, H5Tclose);
}

inline Handle string_type() {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  return Handle(t, H5Tclose);
}

// ---------------------------------------------------------------- MPI helpers

inline std::string bcast_string(MPI_Comm comm, std::string s) {
  uint64_t n = s.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, comm);
  s.resize(n);
  MPI_Bcast(s.data(), static_cast<int>(n), MPI_CHAR, 0, comm);
  return s;
}

// Gathers each process's byte string to process 0 (empty elsewhere).
inline std::vector<std::string> gather_strings(MPI_Comm comm, const std::string &mine) {
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  int n = static_cast<int>(mine.size());
  std::vector<int> sizes(np), displs(np);
  MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, comm);
  std::string all;
  if (me == 0) {
    std::partial_sum(sizes.begin(), sizes.end() - 1, displs.begin() + 1);
    all.resize(displs.back() + sizes.back());
  }
  MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), displs.data(), MPI_CHAR, 0, comm);
  std::vector<std::string> out;
  if (me == 0)
    for (int i = 0; i < np; ++i) out.push_back(all.substr(displs[i], sizes[i]));
  return out;
}

// ---------------------------------------------------------------- writing helpers

inline void write_string_attr(const Ctx &ck, hid_t obj, const char *name, const std::string &value) {
  Handle t = string_type();
  Handle space(ck(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose);
  Handle a(ck(H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT), std::string("creating attribute ") + name),
           H5Aclose);
  const char *p = value.c_str();
  ck.ok(H5Awrite(a, t, &p), std::string("writing attribute ") + name);
}

inline void write_string_list_attr(const Ctx &ck, hid_t obj, const char *name, const std::vector<std::string> &values) {
  Handle t = string_type();
  hsize_t n = values.size();
  Handle space(ck(n ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_NULL), "H5Screate"), H5Sclose);
  Handle a(ck(H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT), std::string("creating attribute ") + name),
           H5Aclose);
  if (n) {
    std::vector<const char *> p;
    for (const auto &v : values) p.push_back(v.c_str());
    ck.ok(H5Awrite(a, t, p.data()), std::string("writing attribute ") + name);
  }
}

template <class T>
inline void write_scalar_attr(const Ctx &ck, hid_t obj, const char *name, hid_t type, T value) {
  Handle space(ck(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose);
  Handle a(ck(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), std::string("creating attribute ") + name),
           H5Aclose);
  ck.ok(H5Awrite(a, type, &value), std::string("writing attribute ") + name);
}

inline void write_int_list_attr(const Ctx &ck, hid_t obj, const char *name, const std::vector<int32_t> &v) {
  hsize_t n = v.size();
  Handle space(ck(n ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_NULL), "H5Screate"), H5Sclose);
  Handle a(ck(H5Acreate2(obj, name, H5T_NATIVE_INT32, space, H5P_DEFAULT, H5P_DEFAULT),
              std::string("creating attribute ") + name),
           H5Aclose);
  if (n) ck.ok(H5Awrite(a, H5T_NATIVE_INT32, v.data()), std::string("writing attribute ") + name);
}

inline void describe(const Ctx &ck, hid_t ds, const std::string &units, const std::string &description) {
  write_string_attr(ck, ds, "units", units);
  write_string_attr(ck, ds, "description", description);
}

// A 1-D table whose rows are written as one block per owning process (collective).
// `rows` are this process's rows; `first` its first global row; `total` the global count.
template <class T>
inline void write_table(const Ctx &ck, hid_t parent, const char *name, hid_t mem_type, const std::vector<T> &rows,
                        hsize_t first, hsize_t total, bool compress, const std::string &units,
                        const std::string &description) {
  Handle file_type = file_type_of(mem_type);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  hsize_t dims = total;
  hsize_t maxdims = total;
  if (compress && total > 0) {
    hsize_t chunk = std::min<hsize_t>(total, 65536);
    ck.ok(H5Pset_chunk(dcpl, 1, &chunk), "H5Pset_chunk");
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 1);
  }
  Handle space(ck(H5Screate_simple(1, &dims, &maxdims), "H5Screate_simple"), H5Sclose);
  Handle ds(
      ck(H5Dcreate2(parent, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), std::string("creating /") + name),
      H5Dclose);
  describe(ck, ds, units, description);
  if (total == 0) return;  // every process agrees: nothing to write
  const hsize_t count = rows.size();
  // Filtered (chunked, compressed) data must be written collectively; plain data is each
  // process's own contiguous block, written independently: a collective write costs every
  // process a round of synchronisation per table, which dominates small stores on many ranks.
  if (!compress && count == 0) return;
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl, compress ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
  // A filtered write holds every chunk it touches uncompressed at once (a copy of the
  // rows): compressed tables go in windows of kWindowRows file rows, chunk-aligned, the
  // same windows on every process (each writes its rows inside, or nothing), so that the
  // copy is at most a window; 10^8 events then fit beside their rows.
  constexpr hsize_t kWindowRows = hsize_t{64} * 65536;
  const hsize_t window = compress ? kWindowRows : std::max<hsize_t>(total, 1);
  for (hsize_t at = 0; at < total; at += window) {
    const hsize_t lo = std::max(first, at), hi = std::min(first + count, std::min(total, at + window));
    const hsize_t n = hi > lo ? hi - lo : 0;
    if (!compress && n == 0) continue;
    Handle mspace(ck(H5Screate_simple(1, &count, nullptr), "H5Screate_simple"), H5Sclose);
    Handle fspace(ck(H5Dget_space(ds), "H5Dget_space"), H5Sclose);
    if (n) {
      const hsize_t from = lo - first;
      ck.ok(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &lo, nullptr, &n, nullptr), "selecting rows");
      ck.ok(H5Sselect_hyperslab(mspace, H5S_SELECT_SET, &from, nullptr, &n, nullptr), "selecting rows");
    } else {
      H5Sselect_none(fspace);
      H5Sselect_none(mspace);
    }
    ck.ok(H5Dwrite(ds, mem_type, mspace, fspace, dxpl, rows.data()), std::string("writing /") + name);
  }
}

// ---------------------------------------------------------------- reading helpers
// Every size a damaged file claims is checked before anything is allocated for it.

// Throws unless `elements` of `element_bytes` can come from the file `obj` lies in: at
// most its bytes inflated at deflate's best ratio (1032:1), plus room for a small file.
inline void check_claim(const Ctx &ck, hid_t obj, hsize_t elements, size_t element_bytes, const std::string &what) {
  hsize_t file_bytes = 0;
  const hid_t f = H5Iget_file_id(obj);
  if (f >= 0) {
    H5Fget_filesize(f, &file_bytes);
    H5Fclose(f);
  }
  const long double limit = (static_cast<long double>(file_bytes) + 65536) * 1100;
  if (static_cast<long double>(elements) * static_cast<long double>(std::max<size_t>(element_bytes, 1)) > limit)
    throw Error(ck.file() + ": " + what + " claims " + std::to_string(elements) + " elements of " +
                std::to_string(element_bytes) + " bytes, more than a file of " + std::to_string(file_bytes) +
                " bytes holds (corrupt file)");
}

// Elements of a dataspace (0 for a null one); throws unless it has `rank` dimensions
// (-1: any rank; a scalar is rank 0).
inline hsize_t space_elements(const Ctx &ck, hid_t space, int rank, const std::string &what) {
  const H5S_class_t c = H5Sget_simple_extent_type(space);
  if (c == H5S_NULL) return 0;
  const int ndims = H5Sget_simple_extent_ndims(space);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (c == H5S_NO_CLASS || ndims < 0 || n < 0 || (rank >= 0 && ndims != rank && !(rank == 1 && ndims == 0)))
    throw Error(ck.file() + ": " + what + " has " + std::to_string(ndims) + " dimensions, expected " +
                std::to_string(rank) + " (corrupt file)");
  return static_cast<hsize_t>(n);
}

// An attribute read into one value: it must hold exactly one element.
inline void check_single(const Ctx &ck, hid_t attr, const char *name) {
  Handle space(H5Aget_space(attr), H5Sclose);
  if (space_elements(ck, space, -1, std::string("attribute ") + name) != 1)
    throw Error(ck.file() + ": attribute " + name + " holds " + std::to_string(space_elements(ck, space, -1, name)) +
                " values, expected one (corrupt file)");
}

inline std::string read_string_attr(const Ctx &ck, hid_t obj, const char *name) {
  if (H5Aexists(obj, name) <= 0) return "";
  Handle a(ck(H5Aopen(obj, name, H5P_DEFAULT), std::string("opening attribute ") + name), H5Aclose);
  Handle t(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(t) != H5T_STRING) throw Error(ck.file() + ": attribute " + name + " is not a string (corrupt file)");
  check_single(ck, a, name);
  if (H5Tis_variable_str(t) > 0) {
    Handle mt = string_type();
    char *p = nullptr;
    ck.ok(H5Aread(a, mt, &p), std::string("reading attribute ") + name);
    std::string s = p ? p : "";
    Handle space(H5Aget_space(a), H5Sclose);
    H5Dvlen_reclaim(mt, space, H5P_DEFAULT, &p);
    return s;
  }
  size_t n = H5Tget_size(t);
  check_claim(ck, a, n, 1, std::string("attribute ") + name);
  std::string s(n, '\0');
  ck.ok(H5Aread(a, t, s.data()), std::string("reading attribute ") + name);
  s.resize(std::strlen(s.c_str()));
  return s;
}

inline std::vector<std::string> read_string_list_attr(const Ctx &ck, hid_t obj, const char *name) {
  std::vector<std::string> out;
  if (H5Aexists(obj, name) <= 0) return out;
  Handle a(ck(H5Aopen(obj, name, H5P_DEFAULT), std::string("opening attribute ") + name), H5Aclose);
  Handle space(H5Aget_space(a), H5Sclose);
  Handle t(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) <= 0)
    throw Error(ck.file() + ": attribute " + name + " is not a list of strings (corrupt file)");
  const hsize_t n = space_elements(ck, space, -1, std::string("attribute ") + name);
  if (n == 0) return out;
  check_claim(ck, a, n, sizeof(char *), std::string("attribute ") + name);
  Handle mt = string_type();
  std::vector<char *> p(n);
  ck.ok(H5Aread(a, mt, p.data()), std::string("reading attribute ") + name);
  for (auto *x : p) out.push_back(x ? x : "");
  H5Dvlen_reclaim(mt, space, H5P_DEFAULT, p.data());
  return out;
}

template <class T>
inline T read_scalar_attr(const Ctx &ck, hid_t obj, const char *name, hid_t type, T fallback) {
  if (H5Aexists(obj, name) <= 0) return fallback;
  Handle a(ck(H5Aopen(obj, name, H5P_DEFAULT), std::string("opening attribute ") + name), H5Aclose);
  Handle t(H5Aget_type(a), H5Tclose);
  const H5T_class_t c = H5Tget_class(t);
  if (c != H5T_INTEGER && c != H5T_FLOAT)
    throw Error(ck.file() + ": attribute " + name + " is not a number (corrupt file)");
  check_single(ck, a, name);
  T v{};
  ck.ok(H5Aread(a, type, &v), std::string("reading attribute ") + name);
  return v;
}

inline std::vector<int32_t> read_int_list_attr(const Ctx &ck, hid_t obj, const char *name) {
  std::vector<int32_t> out;
  if (H5Aexists(obj, name) <= 0) return out;
  Handle a(ck(H5Aopen(obj, name, H5P_DEFAULT), std::string("opening attribute ") + name), H5Aclose);
  Handle space(H5Aget_space(a), H5Sclose);
  Handle t(H5Aget_type(a), H5Tclose);
  if (H5Tget_class(t) != H5T_INTEGER)
    throw Error(ck.file() + ": attribute " + name + " is not integers (corrupt file)");
  const hsize_t n = space_elements(ck, space, -1, std::string("attribute ") + name);
  check_claim(ck, a, n, sizeof(int32_t), std::string("attribute ") + name);
  out.resize(n);
  if (!out.empty()) ck.ok(H5Aread(a, H5T_NATIVE_INT32, out.data()), std::string("reading attribute ") + name);
  return out;
}

// Reads rows [first, last) of a 1-D dataset (all rows when last < 0) into `out`, its
// rows replaced (its capacity reused: a series of reads faults its pages in once).
template <class T>
void read_rows_into(const Ctx &ck, hid_t parent, const std::string &name, hid_t mem_type, hsize_t first, int64_t last,
                    std::vector<T> &out) {
  out.clear();
  Handle ds(ck(H5Dopen2(parent, name.c_str(), H5P_DEFAULT),
               "missing dataset " + name + " (file from another tool or truncated)"),
            H5Dclose);
  Handle fs(H5Dget_space(ds), H5Sclose);
  if (H5Sget_simple_extent_type(fs) == H5S_NULL) return;
  hsize_t total = space_elements(ck, fs, 1, name);
  hsize_t end = last < 0 ? total : static_cast<hsize_t>(last);
  if (end > total || first > end)
    throw Error(ck.file() + ": " + name + " has " + std::to_string(total) +
                " rows, fewer than its offsets say (truncated store?)");
  hsize_t count = end - first;
  check_claim(ck, ds, count, sizeof(T), name);
  out.resize(count);
  if (!count) return;
  if (H5Sget_simple_extent_ndims(fs) == 1)
    ck.ok(H5Sselect_hyperslab(fs, H5S_SELECT_SET, &first, nullptr, &count, nullptr), "selecting rows of " + name);
  Handle ms(H5Screate_simple(1, &count, nullptr), H5Sclose);
  ck.ok(H5Dread(ds, mem_type, ms, fs, H5P_DEFAULT, out.data()), "reading " + name + " (truncated or corrupt store?)");
}

// Reads rows [first, last) of a 1-D dataset (all rows when last < 0).
template <class T>
std::vector<T> read_rows(const Ctx &ck, hid_t parent, const std::string &name, hid_t mem_type, hsize_t first = 0,
                         int64_t last = -1) {
  std::vector<T> out;
  read_rows_into(ck, parent, name, mem_type, first, last, out);
  return out;
}

inline std::vector<std::string> read_strings(const Ctx &ck, hid_t parent, const std::string &name) {
  Handle ds(ck(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "missing dataset " + name), H5Dclose);
  Handle fs(H5Dget_space(ds), H5Sclose);
  if (H5Sget_simple_extent_type(fs) == H5S_NULL) return {};
  hsize_t n = space_elements(ck, fs, 1, name);
  Handle t(H5Dget_type(ds), H5Tclose);
  if (H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) > 0)
    throw Error(ck.file() + ": " + name + " is not a table of fixed-width strings (corrupt file)");
  size_t width = H5Tget_size(t);
  check_claim(ck, ds, n, width, name);
  std::vector<char> buf(n * width + 1, 0);
  if (n) ck.ok(H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()), "reading " + name);
  std::vector<std::string> out;
  for (hsize_t i = 0; i < n; ++i) out.emplace_back(std::string(&buf[i * width], width).c_str());
  return out;
}

// File access for collective writing: MPI-IO, collective metadata, HDF5 1.8+ format.
inline Handle parallel_write_fapl(MPI_Comm comm) {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  H5Pset_all_coll_metadata_ops(fapl, true);
  H5Pset_coll_metadata_write(fapl, true);
  H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_LATEST);
  return fapl;
}

}  // namespace perfsift::io::h5
