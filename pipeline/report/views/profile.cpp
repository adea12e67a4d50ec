// The profile stage in the reports: regions by mean wall time and MPI operations by time (text); its group as stored
// (JSON).
#include <algorithm>
#include <cstdio>
#include <ostream>

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
    const auto o = rs.table("profile/ops");
    const auto &name = column<std::string>(o, "op");
    const auto &calls = column<int64_t>(o, "calls");
    const auto &time = column<double>(o, "time_s"), &oshare = column<double>(o, "mpi_share");
    std::vector<size_t> ord(o.rows());
    for (size_t i = 0; i < ord.size(); ++i) ord[i] = i;
    std::stable_sort(ord.begin(), ord.end(), [&](size_t a, size_t b) { return time[a] > time[b]; });
    const double nr =
        std::max<double>(1, static_cast<double>(attr_or<int64_t>(rs.attributes("profile"), "ranks_with_data", 1)));
    os << "\nMPI operations by time:\n";
    std::snprintf(line, sizeof line, "  %-24s %12s %12s %10s\n", "operation", "calls", "per rank", "MPI share");
    os << line;
    for (size_t i = 0; i < ord.size() && i < 5; ++i) {
      const size_t r = ord[i];
      std::snprintf(line, sizeof line, "  %-24s %12lld %12s %9.0f%%\n", clip(name[r], 24).c_str(),
                    static_cast<long long>(calls[r]), format_seconds(time[r] / nr).c_str(), 100 * oshare[r]);
      os << line;
    }
  }
}

}  // namespace

StageView profile_view() { return {"profile", profile_text}; }

}  // namespace perfsift::pipeline
