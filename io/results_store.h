// The results store: what `perfsift analyze` found, in one HDF5 file (contract in
// docs/results.md). Stages hand plain tables and matrices to the writer and never
// see the HDF5 API; `perfsift report` reads the file back through ResultsStore.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace perfsift::io {

inline constexpr const char *kResultsFormat = "perfsift-results";
inline constexpr int kResultsVersion = 4;

using IntColumn = std::vector<int64_t>;
using FloatColumn = std::vector<double>;  // NaN means "no value" (JSON null)
using StringColumn = std::vector<std::string>;

struct Column {
  std::string name, units, description;
  std::variant<IntColumn, FloatColumn, StringColumn> values;
  size_t size() const;
};

// A table: named columns of equal length. Stored as an HDF5 group (attribute
// kind = "table") holding one 1-D dataset per column.
struct Table {
  std::string description;
  std::deque<Column> columns;  // deque: references returned by ints/floats/strings stay valid
  size_t rows() const { return columns.empty() ? 0 : columns.front().size(); }
  IntColumn &ints(const std::string &name, const std::string &units, const std::string &description);
  FloatColumn &floats(const std::string &name, const std::string &units, const std::string &description);
  StringColumn &strings(const std::string &name, const std::string &description);
  const Column *find(const std::string &name) const;
};

// One process's block of rows of a dense float64 matrix [rows_total][labels.size()].
struct MatrixBlock {
  std::string units, description;
  std::string row_dim, col_dim;         // e.g. "rank", "region"
  std::vector<std::string> col_labels;  // one per column
  int64_t rows_total = 0;
  int64_t row_first = 0;       // this process's first row
  std::vector<double> values;  // its rows, row-major
};

using AttrValue = std::variant<int64_t, double, std::string, std::vector<std::string>, std::vector<int64_t>>;

// Collective writer. Every call is made by all processes of `comm` in the same order.
// The file appears under its name only at commit(); until then it is PATH.tmp-PID,
// removed if the writer is destroyed without commit (an error part-way).
class ResultsWriter {
 public:
  ResultsWriter(MPI_Comm comm, const std::string &path);
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter &) = delete;
  ResultsWriter &operator=(const ResultsWriter &) = delete;

  // `object` is "" for the root or a group path such as "profile".
  void attribute(const std::string &object, const std::string &name, const AttrValue &v);
  void group(const std::string &path, const std::string &description);
  // Identical on every process; process 0 writes it.
  void table(const std::string &path, const Table &t);
  // Each process passes its rows; the file holds them in process order.
  void table_rows(const std::string &path, const Table &mine);
  void matrix(const std::string &path, const MatrixBlock &mine);
  void commit();

 private:
  MPI_Comm m_comm;
  int m_me = 0;
  std::string m_path, m_tmp;
  int64_t m_file = -1;
  bool m_committed = false;
};

// Serial reader for reports. It reads results version kResultsVersion only: a store of
// another version is refused at open (io::Error, one line; docs/results.md, "Compatibility").
class ResultsStore {
 public:
  explicit ResultsStore(const std::string &path);
  ~ResultsStore();
  ResultsStore(const ResultsStore &) = delete;
  ResultsStore &operator=(const ResultsStore &) = delete;

  enum class Kind { Group, Table, Matrix };
  struct Child {
    std::string name;
    Kind kind;
  };
  const std::string &path() const { return m_path; }
  // Children in creation order.
  std::vector<Child> children(const std::string &group) const;
  std::vector<std::pair<std::string, AttrValue>> attributes(const std::string &object) const;
  std::string description(const std::string &object) const;
  Table table(const std::string &path) const;
  struct MatrixInfo {
    int64_t rows = 0, cols = 0;
    std::string units, description, row_dim, col_dim;
    std::vector<std::string> col_labels;
  };
  MatrixInfo matrix_info(const std::string &path) const;
  std::vector<double> matrix(const std::string &path) const;

 private:
  std::string m_path;
  int64_t m_file = -1;
};

}  // namespace perfsift::io
