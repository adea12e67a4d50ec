// The profile stage in the reports: regions by mean wall time and MPI operations by time (text); its group as stored
// (JSON).
#include <algorithm>
#include <cstdio>
#include <ostream>

#include "pipeline/engine/op_traits.h"
#include "pipeline/format/results_view.h"
#include "pipeline/format/text.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {

namespace {

void profile_text(std::ostream &os, const io::ResultsStore &rs) {
  {
    const auto t = rs.table("profile/regions");
    const auto &path = column<std::string>(t, "path");
    const auto &mean = column<double>(t, "wall_mean_s"), &mx = column<double>(t, "wall_max_s"),
               &share = column<double>(t, "mpi_share"), &cimb = column<double>(t, "comp_imbalance");
    std::vector<size_t> order(t.rows());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return mean[a] > mean[b]; });
    os << "\nRegions by mean wall time (inclusive):\n";
    char line[512];
    std::snprintf(line, sizeof line, "  %-32s %10s %10s %10s %12s\n", "region", "mean", "max", "MPI share",
                  "comp. imbal.");
    os << line;
    for (size_t i = 0; i < order.size() && i < 8; ++i) {
      const size_t r = order[i];
      std::snprintf(line, sizeof line, "  %-32s %10s %10s %9.0f%% %11.0f%%\n", clip(path[r], 32).c_str(),
                    format_seconds(mean[r]).c_str(), format_seconds(mx[r]).c_str(), 100 * share[r], 100 * cimb[r]);
      os << line;
    }
    if (order.size() > 8) os << "  ... " << order.size() - 8 << " more in profile/regions\n";
    const auto ops = operations_by_time(rs.table("profile/ops"));
    const double nr =
        std::max<double>(1, static_cast<double>(attr_or<int64_t>(rs.attributes("profile"), "ranks_with_data", 1)));
    os << "\nMPI operations by time (start-up and shut-down apart):\n";
    std::snprintf(line, sizeof line, "  %-24s %12s %12s %10s\n", "operation", "calls", "per rank", "MPI share");
    os << line;
    for (size_t i = 0; i < ops.program.size() && i < 5; ++i) {
      const auto &o = ops.program[i];
      std::snprintf(line, sizeof line, "  %-24s %12lld %12s %9.0f%%\n", clip(o.op, 24).c_str(),
                    static_cast<long long>(o.calls), format_seconds(o.time_s / nr).c_str(), 100 * o.share);
      os << line;
    }
    std::string apart;
    for (const auto &o : ops.lifecycle)
      apart += (apart.empty() ? "" : ", ") + o.op + " " + format_seconds(o.time_s / nr);
    if (!apart.empty())
      for (const auto &w : wrap("start-up and shut-down, per rank and not in the shares: " + apart, 96, 2))
        os << "  " << w << "\n";
  }
}

}  // namespace

OperationsByTime operations_by_time(const io::Table &t) {
  const auto &name = column<std::string>(t, "op");
  const auto &calls = column<int64_t>(t, "calls");
  const auto &time = column<double>(t, "time_s");
  OperationsByTime out;
  double program_s = 0;
  for (size_t i = 0; i < t.rows(); ++i) {
    (is_lifecycle_op(name[i]) ? out.lifecycle : out.program).push_back({name[i], calls[i], time[i], 0});
    if (!is_lifecycle_op(name[i])) program_s += time[i];
  }
  for (auto *side : {&out.program, &out.lifecycle})
    std::stable_sort(side->begin(), side->end(), [](const auto &a, const auto &b) { return a.time_s > b.time_s; });
  for (auto &o : out.program) o.share = program_s > 0 ? o.time_s / program_s : 0;
  return out;
}

StageView profile_view() { return {"profile", profile_text}; }

}  // namespace perfsift::pipeline
