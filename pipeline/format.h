// Numbers as the reports print them: seconds with a unit that fits, percentages.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace perfsift::pipeline {

inline std::string format_seconds(double s) {
  char b[48];
  if (std::isnan(s)) return "-";
  const double a = std::fabs(s);
  if (a >= 100) std::snprintf(b, sizeof b, "%.0f s", s);
  else if (a >= 1) std::snprintf(b, sizeof b, "%.2f s", s);
  else if (a >= 1e-3) std::snprintf(b, sizeof b, "%.1f ms", s * 1e3);
  else std::snprintf(b, sizeof b, "%.0f us", s * 1e6);
  return b;
}

inline std::string format_percent(double ratio) {
  char b[48];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * ratio);
  return b;
}

// Cut to n characters, marking the cut.
inline std::string clip(const std::string &s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

}  // namespace perfsift::pipeline
