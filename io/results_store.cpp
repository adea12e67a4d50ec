#include "io/results_store.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <cstdio>

#include "io/atomic_file.h"
#include "io/global_heap.h"
#include "io/hdf5_util.h"

namespace perfsift::io {

using namespace h5;

size_t Column::size() const {
  return std::visit([](const auto &v) { return v.size(); }, values);
}

IntColumn &Table::ints(const std::string &name, const std::string &units, const std::string &desc) {
  columns.push_back({name, units, desc, IntColumn{}});
  return std::get<IntColumn>(columns.back().values);
}
FloatColumn &Table::floats(const std::string &name, const std::string &units, const std::string &desc) {
  columns.push_back({name, units, desc, FloatColumn{}});
  return std::get<FloatColumn>(columns.back().values);
}
StringColumn &Table::strings(const std::string &name, const std::string &desc) {
  columns.push_back({name, "", desc, StringColumn{}});
  return std::get<StringColumn>(columns.back().values);
}
const Column *Table::find(const std::string &name) const {
  for (const auto &c : columns)
    if (c.name == name) return &c;
  return nullptr;
}

namespace {

Handle creation_order_gcpl() {
  Handle p(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  H5Pset_link_creation_order(p, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_attr_creation_order(p, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  return p;
}

Handle collective_xfer() {
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
  return dxpl;
}

void write_int64_list_attr(const Ctx &ck, hid_t obj, const char *name, const std::vector<int64_t> &v) {
  hsize_t n = v.size();
  Handle space(ck(n ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_NULL), "H5Screate"), H5Sclose);
  Handle a(ck(H5Acreate2(obj, name, H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT),
              std::string("creating attribute ") + name),
           H5Aclose);
  if (n) ck.ok(H5Awrite(a, H5T_NATIVE_INT64, v.data()), std::string("writing attribute ") + name);
}

void write_attr(const Ctx &ck, hid_t obj, const std::string &name, const AttrValue &v) {
  if (H5Aexists(obj, name.c_str()) > 0) H5Adelete(obj, name.c_str());
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>)
          write_scalar_attr(ck, obj, name.c_str(), H5T_NATIVE_INT64, x);
        else if constexpr (std::is_same_v<T, double>)
          write_scalar_attr(ck, obj, name.c_str(), H5T_NATIVE_DOUBLE, x);
        else if constexpr (std::is_same_v<T, std::string>)
          write_string_attr(ck, obj, name.c_str(), x);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          write_string_list_attr(ck, obj, name.c_str(), x);
        else
          write_int64_list_attr(ck, obj, name.c_str(), x);
      },
      v);
}

// One column dataset; `first`/`total` place this process's rows (collective write).
// Every data write of the results store is collective: the first process whose write failed
// says why, and every process throws CollectiveError. Collective.
void agree_on_write(const Ctx &ck, herr_t rc, const std::string &what, MPI_Comm comm) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  const int mine = rc < 0 ? me : INT_MAX;
  int first = INT_MAX;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return;
  if (me != first)
    throw CollectiveError(ck.file() + ": " + what + " failed (said by analysis process " + std::to_string(first) + ")",
                          false);
  try {
    ck.ok(rc, what);
  } catch (const Error &e) {
    throw CollectiveError(e.what(), true);
  }
  throw CollectiveError(ck.file() + ": " + what + " failed", true);
}

void write_column(const Ctx &ck, hid_t group, const Column &c, hsize_t first, hsize_t total, bool write_mine,
                  MPI_Comm comm) {
  Handle type;
  std::vector<char> strbuf;
  const void *data = nullptr;
  hsize_t count = write_mine ? c.size() : 0;
  if (const auto *s = std::get_if<StringColumn>(&c.values)) {
    // Fixed width, agreed by all processes: parallel HDF5 cannot write variable-length data.
    uint64_t width = 1;
    for (const auto &x : *s) width = std::max<uint64_t>(width, x.size() + 1);
    MPI_Allreduce(MPI_IN_PLACE, &width, 1, MPI_UINT64_T, MPI_MAX, comm);
    type = Handle(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type, width);
    H5Tset_cset(type, H5T_CSET_UTF8);
    strbuf.assign(std::max<size_t>(1, count * width), 0);
    for (size_t i = 0; i < count; ++i) std::memcpy(&strbuf[i * width], (*s)[i].data(), (*s)[i].size());
    data = strbuf.data();
  } else if (const auto *iv = std::get_if<IntColumn>(&c.values)) {
    type = Handle(H5Tcopy(H5T_NATIVE_INT64), H5Tclose);
    data = iv->data();
  } else {
    type = Handle(H5Tcopy(H5T_NATIVE_DOUBLE), H5Tclose);
    data = std::get<FloatColumn>(c.values).data();
  }
  Handle space(ck(total ? H5Screate_simple(1, &total, nullptr) : H5Screate(H5S_NULL), "H5Screate"), H5Sclose);
  Handle ds(ck(H5Dcreate2(group, c.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               "creating column " + c.name),
            H5Dclose);
  describe(ck, ds, c.units, c.description);
  if (!total) return;
  Handle fs(H5Dget_space(ds), H5Sclose);
  hsize_t mcount = std::max<hsize_t>(count, 1);
  Handle ms(H5Screate_simple(1, &mcount, nullptr), H5Sclose);
  if (count)
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &first, nullptr, &count, nullptr);
  else {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
  }
  agree_on_write(ck, H5Dwrite(ds, type, ms, fs, collective_xfer(), data), "writing column " + c.name, comm);
}

void check_columns(const std::string &path, const Table &t) {
  for (const auto &c : t.columns)
    if (c.size() != t.rows())
      throw Error("internal: table " + path + " column " + c.name + " has " + std::to_string(c.size()) + " rows, not " +
                  std::to_string(t.rows()));
}

}  // namespace

ResultsWriter::ResultsWriter(MPI_Comm comm, const std::string &path) : m_comm(comm), m_path(path) {
  // Past a file size limit a write fails (reported, the file removed) rather than the
  // signal killing the process with the file half-written; for the rest of the process.
  static const FileSizeSignalIgnored no_kill_on_file_size;
  SilenceHdf5 quiet;
  MPI_Comm_rank(comm, &m_me);
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".tmp-%d", static_cast<int>(getpid()));
  m_tmp = path + bcast_string(comm, suffix);
  Ctx ck(m_path);
  Handle fapl = parallel_write_fapl(comm);
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  H5Pset_link_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_attr_creation_order(fcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  hid_t f = H5Fcreate(m_tmp.c_str(), H5F_ACC_TRUNC, fcpl, fapl);
  if (f < 0) throw Error(m_path + ": cannot create the results file (check that the directory exists and is writable)");
  m_file = f;
  write_attr(ck, m_file, "format", std::string(kResultsFormat));
  write_attr(ck, m_file, "version", static_cast<int64_t>(kResultsVersion));
}

ResultsWriter::~ResultsWriter() {
  if (m_committed) return;
  // Reached on an error, possibly on one process only: closing would be a collective
  // call that the others never join. The caller aborts the job; the file goes now.
  std::remove(m_tmp.c_str());
}

void ResultsWriter::attribute(const std::string &object, const std::string &name, const AttrValue &v) {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle obj(ck(H5Oopen(m_file, object.empty() ? "/" : object.c_str(), H5P_DEFAULT), "opening " + object), H5Oclose);
  write_attr(ck, obj, name, v);
}

void ResultsWriter::group(const std::string &path, const std::string &desc) {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle gcpl = creation_order_gcpl();
  Handle g(ck(H5Gcreate2(m_file, path.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), "creating group " + path), H5Gclose);
  write_attr(ck, g, "description", desc);
}

void ResultsWriter::table(const std::string &path, const Table &t) {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  check_columns(path, t);
  Handle gcpl = creation_order_gcpl();
  Handle g(ck(H5Gcreate2(m_file, path.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), "creating table " + path), H5Gclose);
  write_attr(ck, g, "kind", std::string("table"));
  write_attr(ck, g, "description", t.description);
  write_attr(ck, g, "rows", static_cast<int64_t>(t.rows()));
  for (const auto &c : t.columns) write_column(ck, g, c, 0, t.rows(), m_me == 0, m_comm);
}

void ResultsWriter::table_rows(const std::string &path, const Table &mine) {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  check_columns(path, mine);
  int64_t n = static_cast<int64_t>(mine.rows()), first = 0, total = 0;
  MPI_Exscan(&n, &first, 1, MPI_INT64_T, MPI_SUM, m_comm);
  if (m_me == 0) first = 0;
  MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, m_comm);
  Handle gcpl = creation_order_gcpl();
  Handle g(ck(H5Gcreate2(m_file, path.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), "creating table " + path), H5Gclose);
  write_attr(ck, g, "kind", std::string("table"));
  write_attr(ck, g, "description", mine.description);
  write_attr(ck, g, "rows", total);
  for (const auto &c : mine.columns)
    write_column(ck, g, c, static_cast<hsize_t>(first), static_cast<hsize_t>(total), true, m_comm);
}

void ResultsWriter::matrix(const std::string &path, const MatrixBlock &m) {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  const hsize_t cols = m.col_labels.size();
  const hsize_t mine_rows = cols ? m.values.size() / cols : 0;
  if (mine_rows * cols != m.values.size()) throw Error("internal: matrix " + path + " block is not whole rows");
  hsize_t dims[2] = {static_cast<hsize_t>(m.rows_total), cols};
  const bool empty = dims[0] == 0 || dims[1] == 0;
  Handle space(ck(empty ? H5Screate(H5S_NULL) : H5Screate_simple(2, dims, nullptr), "H5Screate"), H5Sclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  Handle ds(
      ck(H5Dcreate2(m_file, path.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), "creating " + path),
      H5Dclose);
  describe(ck, ds, m.units, m.description);
  write_attr(ck, ds, "dims", std::vector<std::string>{m.row_dim, m.col_dim});
  write_attr(ck, ds, "column_labels", m.col_labels);
  if (empty) return;
  Handle fs(H5Dget_space(ds), H5Sclose);
  hsize_t start[2] = {static_cast<hsize_t>(m.row_first), 0}, count[2] = {mine_rows, cols};
  hsize_t mcount[2] = {std::max<hsize_t>(mine_rows, 1), cols};
  Handle ms(H5Screate_simple(2, mcount, nullptr), H5Sclose);
  if (mine_rows)
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, nullptr, count, nullptr);
  else {
    H5Sselect_none(fs);
    H5Sselect_none(ms);
  }
  agree_on_write(ck, H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, collective_xfer(), m.values.data()), "writing " + path,
                 m_comm);
}

void ResultsWriter::commit() {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  hid_t f = m_file;
  m_file = -1;
  if (H5Fclose(f) < 0) ck.fail("closing the results file");
  MPI_Barrier(m_comm);
  int rc = 0;
  if (m_me == 0 && std::rename(m_tmp.c_str(), m_path.c_str()) != 0) rc = errno;
  MPI_Bcast(&rc, 1, MPI_INT, 0, m_comm);
  if (rc) throw Error(m_path + ": cannot rename " + m_tmp + " into place: " + std::strerror(rc));
  m_committed = true;
}

// ---------------------------------------------------------------- reading

ResultsStore::ResultsStore(const std::string &path) : m_path(path) {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  if (access(path.c_str(), R_OK) != 0) throw Error(path + ": cannot read the file (" + std::strerror(errno) + ")");
  if (H5Fis_hdf5(path.c_str()) <= 0)
    throw Error(path + ": not an HDF5 file (a results file is written by `perfsift analyze -o`)");
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw Error(path + ": HDF5 cannot open it (truncated or corrupt)");
  m_file = f;
  if (const std::string bad = damaged_global_heap(path, f); !bad.empty())
    throw Error(path + ": corrupt: " + bad + "; write it again with `perfsift analyze -o`");
  const std::string format = read_string_attr(ck, f, "format");
  if (format != kResultsFormat)
    throw Error(path + ": not a perfsift results file (format is '" + format +
                "'; `perfsift report` reads the output of `perfsift analyze`)");
  const auto version = read_scalar_attr<int64_t>(ck, f, "version", H5T_NATIVE_INT64, 0);
  if (version != kResultsVersion)  // docs/results.md, "Compatibility"
    throw Error(path + ": results version " + std::to_string(version) + "; this perfsift reads results version " +
                std::to_string(kResultsVersion) + ": analyse the trace store again with `perfsift analyze`");
}

ResultsStore::~ResultsStore() {
  if (m_file >= 0) H5Fclose(m_file);
}

std::vector<ResultsStore::Child> ResultsStore::children(const std::string &group) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle g(ck(H5Gopen2(m_file, group.empty() ? "/" : group.c_str(), H5P_DEFAULT), "missing group " + group), H5Gclose);
  // Each hard link's name and object address: objects are opened by address, since a
  // second look-up of a damaged link by name crashes inside HDF5 1.10 (H5G_traverse).
  std::vector<std::pair<std::string, haddr_t>> links;
  auto collect = [](hid_t, const char *name, const H5L_info_t *info, void *out) -> herr_t {
    if (name && info && info->type == H5L_TYPE_HARD)
      static_cast<std::vector<std::pair<std::string, haddr_t>> *>(out)->emplace_back(name, info->u.address);
    return 0;
  };
  if (H5Literate(g, H5_INDEX_CRT_ORDER, H5_ITER_INC, nullptr, collect, &links) < 0) {
    links.clear();
    H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &links);
  }
  std::vector<Child> out;
  for (const auto &[n, addr] : links) {
    const hid_t obj = H5Oopen_by_addr(g, addr);
    if (obj < 0) continue;
    Handle c(obj, H5Oclose);
    Kind k = Kind::Matrix;
    if (H5Iget_type(c) == H5I_GROUP)
      k = read_string_attr(ck, c, "kind") == "table" ? Kind::Table : Kind::Group;
    else if (H5Iget_type(c) != H5I_DATASET)
      continue;
    out.push_back({n, k});
  }
  return out;
}

std::vector<std::pair<std::string, AttrValue>> ResultsStore::attributes(const std::string &object) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle obj(ck(H5Oopen(m_file, object.empty() ? "/" : object.c_str(), H5P_DEFAULT), "missing object " + object),
             H5Oclose);
  std::vector<std::string> names;
  auto collect = [](hid_t, const char *name, const H5A_info_t *, void *out) -> herr_t {
    static_cast<std::vector<std::string> *>(out)->push_back(name);
    return 0;
  };
  if (H5Aiterate2(obj, H5_INDEX_CRT_ORDER, H5_ITER_INC, nullptr, collect, &names) < 0) {
    names.clear();
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
  }
  std::vector<std::pair<std::string, AttrValue>> out;
  for (const auto &n : names) {
    Handle a(ck(H5Aopen(obj, n.c_str(), H5P_DEFAULT), "opening attribute " + n), H5Aclose);
    Handle t(H5Aget_type(a), H5Tclose);
    Handle space(H5Aget_space(a), H5Sclose);
    const bool scalar = H5Sget_simple_extent_type(space) == H5S_SCALAR;
    const hssize_t npts = H5Sget_simple_extent_type(space) == H5S_NULL ? 0 : H5Sget_simple_extent_npoints(space);
    switch (H5Tget_class(t)) {
      case H5T_STRING:
        if (scalar)
          out.emplace_back(n, read_string_attr(ck, obj, n.c_str()));
        else
          out.emplace_back(n, read_string_list_attr(ck, obj, n.c_str()));
        break;
      case H5T_FLOAT:
        out.emplace_back(n, read_scalar_attr<double>(ck, obj, n.c_str(), H5T_NATIVE_DOUBLE, 0.0));
        break;
      case H5T_INTEGER:
        if (scalar)
          out.emplace_back(n, read_scalar_attr<int64_t>(ck, obj, n.c_str(), H5T_NATIVE_INT64, 0));
        else {
          check_claim(ck, a, static_cast<hsize_t>(std::max<hssize_t>(npts, 0)), sizeof(int64_t), "attribute " + n);
          std::vector<int64_t> v(static_cast<size_t>(std::max<hssize_t>(npts, 0)));
          if (npts) ck.ok(H5Aread(a, H5T_NATIVE_INT64, v.data()), "reading attribute " + n);
          out.emplace_back(n, v);
        }
        break;
      default:
        break;
    }
  }
  return out;
}

std::string ResultsStore::description(const std::string &object) const {
  for (auto &[k, v] : attributes(object))
    if (k == "description" && std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  return "";
}

Table ResultsStore::table(const std::string &path) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Table t;
  Handle g(ck(H5Gopen2(m_file, path.c_str(), H5P_DEFAULT), "missing table " + path), H5Gclose);
  t.description = read_string_attr(ck, g, "description");
  for (const auto &c : children(path)) {
    Handle ds(ck(H5Dopen2(g, c.name.c_str(), H5P_DEFAULT), "opening column " + c.name), H5Dclose);
    Handle type(H5Dget_type(ds), H5Tclose);
    const std::string units = read_string_attr(ck, ds, "units"), desc = read_string_attr(ck, ds, "description");
    const std::string where = path + "/" + c.name;
    switch (H5Tget_class(type)) {
      case H5T_STRING:
        t.strings(c.name, desc) = read_strings(ck, g, c.name);
        break;
      case H5T_INTEGER:
        t.ints(c.name, units, desc) = read_rows<int64_t>(ck, g, c.name, H5T_NATIVE_INT64);
        break;
      default:
        t.floats(c.name, units, desc) = read_rows<double>(ck, g, c.name, H5T_NATIVE_DOUBLE);
        break;
    }
  }
  return t;
}

ResultsStore::MatrixInfo ResultsStore::matrix_info(const std::string &path) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  Handle ds(ck(H5Dopen2(m_file, path.c_str(), H5P_DEFAULT), "missing matrix " + path), H5Dclose);
  MatrixInfo info;
  Handle fs(H5Dget_space(ds), H5Sclose);
  if (H5Sget_simple_extent_type(fs) != H5S_NULL) {
    hsize_t dims[2] = {0, 1};
    const int ndims = H5Sget_simple_extent_ndims(fs);
    if (ndims < 1 || ndims > 2)
      throw Error(m_path + ": matrix " + path + " has " + std::to_string(ndims) + " dimensions (corrupt file)");
    H5Sget_simple_extent_dims(fs, dims, nullptr);
    check_claim(ck, ds, dims[0], static_cast<size_t>(std::min<hsize_t>(dims[1], SIZE_MAX / 8)) * sizeof(double),
                "matrix " + path);
    info.rows = static_cast<int64_t>(dims[0]);
    info.cols = static_cast<int64_t>(dims[1]);
  }
  info.units = read_string_attr(ck, ds, "units");
  info.description = read_string_attr(ck, ds, "description");
  auto dims = read_string_list_attr(ck, ds, "dims");
  if (dims.size() == 2) info.row_dim = dims[0], info.col_dim = dims[1];
  info.col_labels = read_string_list_attr(ck, ds, "column_labels");
  return info;
}

std::vector<double> ResultsStore::matrix(const std::string &path) const {
  SilenceHdf5 quiet;
  Ctx ck(m_path);
  auto info = matrix_info(path);
  std::vector<double> out(static_cast<size_t>(info.rows * info.cols));
  if (out.empty()) return out;
  Handle ds(ck(H5Dopen2(m_file, path.c_str(), H5P_DEFAULT), "missing matrix " + path), H5Dclose);
  ck.ok(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "reading " + path);
  return out;
}

}  // namespace perfsift::io
