// Numbers as the reports print them: seconds with a unit that fits, percentages.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "io/trace_model.h"

namespace perfsift::pipeline {

inline std::string format_seconds(double s) {
  char b[48];
  if (std::isnan(s)) return "-";
  const double a = std::fabs(s);
  if (a >= 100)
    std::snprintf(b, sizeof b, "%.0f s", s);
  else if (a >= 1)
    std::snprintf(b, sizeof b, "%.2f s", s);
  else if (a >= 1e-3)
    std::snprintf(b, sizeof b, "%.1f ms", s * 1e3);
  else
    std::snprintf(b, sizeof b, "%.0f us", s * 1e6);
  return b;
}

inline std::string format_percent(double ratio) {
  char b[48];
  std::snprintf(b, sizeof b, "%.0f%%", 100 * ratio);
  return b;
}

// Cut to n characters, marking the cut.
inline std::string clip(const std::string &s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

// Words of `text` in lines of at most `width` characters, at most `max_lines` of them; a
// cut text ends in "...". Words longer than a line are split.
inline std::vector<std::string> wrap(const std::string &text, size_t width, size_t max_lines) {
  std::vector<std::string> lines(1);
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    i = j;
    while (!word.empty()) {
      std::string &line = lines.back();
      const size_t room = width - std::min(width, line.size() + (line.empty() ? 0 : 1));
      if (word.size() <= room) {
        line += (line.empty() ? "" : " ") + word;
        word.clear();
      } else if (line.empty()) {
        line = word.substr(0, width);
        word = word.substr(width);
      } else {
        lines.emplace_back();
      }
      if (lines.size() > max_lines) {
        lines.pop_back();
        std::string &last = lines.back();
        last = last.substr(0, std::min(last.size(), width - 3)) + "...";
        return lines;
      }
    }
  }
  return lines;
}

// "LAMMPS_NS::CommBrick::reverse_comm(int)" -> "CommBrick::reverse_comm".
inline std::string short_function(const std::string &f) {
  std::string s = f.substr(0, f.find('('));
  const auto last = s.rfind("::");
  if (last != std::string::npos && last > 0) {
    const auto before = s.rfind("::", last - 1);
    if (before != std::string::npos) s = s.substr(before + 2);
  }
  const auto slash = s.rfind('/');  // a module path
  if (slash != std::string::npos) s = s.substr(slash + 1);
  return s.empty() ? "?" : s;
}

// A call site as Vetter prints it, function+offset, with the source line when known:
// "x_solve+7716 (x_solve.f:212)"; "(no call site)" when the store has none for it.
inline std::string site_label(const std::vector<io::CallSite> &sites, uint64_t id) {
  if (id >= sites.size()) return "(no call site)";
  const io::CallSite &c = sites[id];
  std::string s = short_function(c.function.empty() ? c.module : c.function);
  if (c.fn_offset > 0) s += "+" + std::to_string(c.fn_offset);
  if (c.line > 0)
    s += " (" + c.file.substr(c.file.rfind('/') == std::string::npos ? 0 : c.file.rfind('/') + 1) + ":" +
         std::to_string(c.line) + ")";
  return s;
}

}  // namespace perfsift::pipeline
