#include "pipeline/report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "pipeline/format.h"
#include "pipeline/json.h"

namespace perfsift::pipeline {

namespace {

using Attrs = std::vector<std::pair<std::string, io::AttrValue>>;

const io::AttrValue *find_attr(const Attrs &attrs, const std::string &name) {
  for (const auto &[k, v] : attrs)
    if (k == name) return &v;
  return nullptr;
}
template <class T>
T attr_or(const Attrs &attrs, const std::string &name, T fallback) {
  const auto *v = find_attr(attrs, name);
  if (v && std::holds_alternative<T>(*v)) return std::get<T>(*v);
  return fallback;
}

void write_attr_value(JsonWriter &j, const io::AttrValue &v) {
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::vector<std::string>> || std::is_same_v<T, std::vector<int64_t>>) j.values(x);
        else j.value(x);
      },
      v);
}

ReportLimits resolve(const io::ResultsStore &rs, ReportLimits l) {
  const auto root = rs.attributes("");
  if (l.top < 0) l.top = attr_or<int64_t>(root, "report_top", 10);
  if (l.json_max_rows < 0) l.json_max_rows = attr_or<int64_t>(root, "report_json_max_rows", 1000);
  return l;
}

void write_table_json(JsonWriter &j, const io::Table &t) {
  j.begin_array();
  for (size_t r = 0; r < t.rows(); ++r) {
    j.begin_object();
    for (const auto &c : t.columns) {
      j.key(c.name);
      std::visit([&](const auto &col) { j.value(col[r]); }, c.values);
    }
    j.end_object();
  }
  j.end_array();
}

void write_group_json(JsonWriter &j, const io::ResultsStore &rs, const std::string &group, int64_t max_rows) {
  j.begin_object();
  for (const auto &[k, v] : rs.attributes(group)) {
    if (k == "description") continue;
    j.key(k);
    write_attr_value(j, v);
  }
  for (const auto &c : rs.children(group)) {
    const std::string path = group + "/" + c.name;
    j.key(c.name);
    if (c.kind == io::ResultsStore::Kind::Group) {
      write_group_json(j, rs, path, max_rows);
    } else if (c.kind == io::ResultsStore::Kind::Table) {
      const auto t = rs.table(path);
      if (static_cast<int64_t>(t.rows()) <= max_rows) write_table_json(j, t);
      else {
        std::vector<std::string> cols;
        for (const auto &col : t.columns) cols.push_back(col.name);
        j.begin_object().key("rows").value(static_cast<int64_t>(t.rows())).key("columns").values(cols);
        j.key("hdf5").value("/" + path).end_object();
      }
    } else {
      const auto info = rs.matrix_info(path);
      j.begin_object();
      j.key("dims").values(std::vector<std::string>{info.row_dim, info.col_dim});
      j.key("shape").values(std::vector<int64_t>{info.rows, info.cols});
      j.key("units").value(info.units);
      j.key("columns").values(info.col_labels);
      j.key("hdf5").value("/" + path);
      if (info.rows <= max_rows) {
        const auto m = rs.matrix(path);
        j.key("values").begin_array();
        for (int64_t r = 0; r < info.rows; ++r)
          j.values(std::vector<double>(m.begin() + r * info.cols, m.begin() + (r + 1) * info.cols));
        j.end_array();
      }
      j.end_object();
    }
  }
  j.end_object();
}

std::string seconds(double s) { return format_seconds(s); }
std::string clip(const std::string &s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }
std::string join(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

template <class T>
const std::vector<T> &col(const io::Table &t, const std::string &name) {
  static const std::vector<T> empty;
  const auto *c = t.find(name);
  if (!c || !std::holds_alternative<std::vector<T>>(c->values)) return empty;
  return std::get<std::vector<T>>(c->values);
}

}  // namespace

std::string render_json(const io::ResultsStore &rs, const ReportLimits &lim) {
  const ReportLimits l = resolve(rs, lim);
  JsonWriter j;
  const auto root = rs.attributes("");
  j.begin_object();
  j.key("format").value(attr_or<std::string>(root, "format", ""));
  j.key("version").value(attr_or<int64_t>(root, "version", 0));
  j.key("source").begin_object();
  j.key("path").value(attr_or<std::string>(root, "source_store", ""));
  j.key("checksum").value(attr_or<std::string>(root, "source_checksum", ""));
  j.end_object();
  j.key("run");
  write_group_json(j, rs, "run", l.json_max_rows);
  j.key("warnings").values(attr_or<std::vector<std::string>>(root, "warnings", {}));
  j.key("configuration").value(attr_or<std::string>(root, "configuration_effective", ""));
  j.key("findings").begin_array();
  const auto f = rs.table("findings");
  for (size_t r = 0; r < f.rows(); ++r) {
    j.begin_object();
    for (const auto &c : f.columns) {
      j.key(c.name);
      std::visit([&](const auto &v) { j.value(v[r]); }, c.values);
    }
    j.end_object();
  }
  j.end_array();
  for (const auto &stage : attr_or<std::vector<std::string>>(root, "stages", {})) {
    j.key(stage);
    write_group_json(j, rs, stage, l.json_max_rows);
  }
  j.end_object();
  return j.take();
}

std::string render_text(const io::ResultsStore &rs, const ReportLimits &lim) {
  const ReportLimits l = resolve(rs, lim);
  std::ostringstream os;
  const auto root = rs.attributes("");
  const auto run = rs.attributes("run");
  os << "perfsift analysis of " << attr_or<std::string>(root, "source_store", "?") << "\n";
  os << "run: " << attr_or<int64_t>(run, "ranks", 0) << " ranks, " << seconds(attr_or<double>(run, "wall_time_s", 0))
     << " wall, started " << attr_or<std::string>(run, "start_time", "?") << "\n";
  const auto cmd = attr_or<std::string>(run, "command", "");
  if (!cmd.empty()) os << "command: " << clip(cmd, 100) << "\n";
  const auto unavailable = attr_or<std::vector<std::string>>(run, "counters_unavailable", {});
  if (!unavailable.empty())
    os << "counters not recorded: " << join(unavailable) << " (analyses that need them fall back and say so)\n";
  for (const auto &w : attr_or<std::vector<std::string>>(root, "warnings", {})) os << "warning: " << w << "\n";

  const auto f = rs.table("findings");
  const auto &kind = col<std::string>(f, "kind"), &where = col<std::string>(f, "where"), &ranks = col<std::string>(f, "ranks"),
             &cause = col<std::string>(f, "cause");
  const auto &lost = col<double>(f, "lost_s"), &gain = col<double>(f, "predicted_gain_s");
  os << "\n";
  if (f.rows() == 0) os << "No findings: no region, rank or operation crossed the reporting thresholds.\n";
  else {
    os << "Top findings (" << std::min<int64_t>(l.top, static_cast<int64_t>(f.rows())) << " of " << f.rows()
       << "; lost = time at stake, gain = simulated payoff of a fix):\n";
    char line[512];
    std::snprintf(line, sizeof line, "  %2s  %-15s %-24s %-12s %9s %9s\n", "#", "kind", "where", "ranks", "lost", "gain");
    os << line;
    for (size_t r = 0; r < f.rows() && static_cast<int64_t>(r) < l.top; ++r) {
      std::snprintf(line, sizeof line, "  %2zu  %-15s %-24s %-12s %9s %9s\n", r + 1, clip(kind[r], 15).c_str(),
                    clip(where[r], 24).c_str(), clip(ranks[r], 12).c_str(), seconds(lost[r]).c_str(),
                    std::isnan(gain[r]) ? "n/a" : seconds(gain[r]).c_str());
      os << line << "      " << cause[r] << "\n";
    }
  }
  const auto stages = attr_or<std::vector<std::string>>(root, "stages", {});
  if (std::find(stages.begin(), stages.end(), "profile") != stages.end()) {
    const auto t = rs.table("profile/regions");
    const auto &path = col<std::string>(t, "path");
    const auto &mean = col<double>(t, "wall_mean_s"), &mx = col<double>(t, "wall_max_s"), &share = col<double>(t, "mpi_share"),
               &cimb = col<double>(t, "comp_imbalance");
    std::vector<size_t> order(t.rows());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mean[a] > mean[b]; });
    os << "\nRegions by mean wall time (inclusive):\n";
    char line[512];
    std::snprintf(line, sizeof line, "  %-32s %10s %10s %10s %12s\n", "region", "mean", "max", "MPI share", "comp. imbal.");
    os << line;
    for (size_t i = 0; i < order.size() && i < 8; ++i) {
      const size_t r = order[i];
      std::snprintf(line, sizeof line, "  %-32s %10s %10s %9.0f%% %11.0f%%\n", clip(path[r], 32).c_str(), seconds(mean[r]).c_str(),
                    seconds(mx[r]).c_str(), 100 * share[r], 100 * cimb[r]);
      os << line;
    }
    if (order.size() > 8) os << "  ... " << order.size() - 8 << " more in profile/regions\n";
    const auto o = rs.table("profile/ops");
    const auto &name = col<std::string>(o, "op");
    const auto &calls = col<int64_t>(o, "calls");
    const auto &time = col<double>(o, "time_s"), &oshare = col<double>(o, "mpi_share");
    std::vector<size_t> ord(o.rows());
    for (size_t i = 0; i < ord.size(); ++i) ord[i] = i;
    std::stable_sort(ord.begin(), ord.end(), [&](size_t a, size_t b) { return time[a] > time[b]; });
    const double nr = std::max<double>(1, static_cast<double>(attr_or<int64_t>(rs.attributes("profile"), "ranks_with_data", 1)));
    os << "\nMPI operations by time:\n";
    std::snprintf(line, sizeof line, "  %-24s %12s %12s %10s\n", "operation", "calls", "per rank", "MPI share");
    os << line;
    for (size_t i = 0; i < ord.size() && i < 6; ++i) {
      const size_t r = ord[i];
      std::snprintf(line, sizeof line, "  %-24s %12lld %12s %9.0f%%\n", clip(name[r], 24).c_str(), static_cast<long long>(calls[r]),
                    seconds(time[r] / nr).c_str(), 100 * oshare[r]);
      os << line;
    }
  }
  os << "\nDetails: " << rs.path() << " (HDF5; see docs/results.md), or perfsift report " << rs.path() << " --format json\n";
  return os.str();
}

void write_file_atomically(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error(path + ": cannot create the file (check that the directory exists and is writable)");
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": write failed (disk full?)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " into place: " + std::strerror(e));
  }
}

}  // namespace perfsift::pipeline
