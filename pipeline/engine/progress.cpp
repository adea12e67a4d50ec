#include "pipeline/engine/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace perfsift::pipeline {

namespace {

// This process's peak resident memory in bytes (VmHWM), 0 when the kernel does not say.
long long peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

// Writing 5 to clear_refs resets the high-water mark to the current size (Linux 4.0+).
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace

void Progress::fold_peak() {
  const long long now = peak_rss_bytes();
  for (Step &s : m_open) s.peak = std::max(s.peak, now);
  m_stage_peak = std::max(m_stage_peak, now);
}

void Progress::begin(const std::string &what) {
  if (!m_enabled) return;
  m_tty = isatty(STDERR_FILENO);
  // Each step's own peak: the mark restarts here, what it held so far goes to the steps around.
  fold_peak();
  reset_peak_rss();
  m_open.push_back({what, Clock::now()});
  m_last = m_open.back().start;
  m_last_percent = -1;
  std::fprintf(stderr, m_tty ? "\rperfsift: %s ..." : "perfsift: %s ...\n", what.c_str());
}

void Progress::update(double fraction) {
  if (!m_enabled || m_open.empty()) return;
  const auto now = Clock::now();
  const int percent = static_cast<int>(fraction * 100);
  if (percent == m_last_percent || now - m_last < std::chrono::milliseconds(m_tty ? 200 : 2000)) return;
  m_last = now;
  m_last_percent = percent;
  const double elapsed = std::chrono::duration<double>(now - m_open.back().start).count();
  const double eta = fraction > 0.01 ? elapsed * (1 - fraction) / fraction : 0;
  std::fprintf(stderr, m_tty ? "\rperfsift: %s %3d%% ETA %.0f s   " : "perfsift: %s %d%% ETA %.0f s\n",
               m_open.back().what.c_str(), percent, eta);
}

void Progress::end() {
  if (!m_enabled || m_open.empty()) return;
  const double elapsed = std::chrono::duration<double>(Clock::now() - m_open.back().start).count();
  fold_peak();
  std::fprintf(
      stderr,
      m_tty ? "\rperfsift: %s done in %.1f s, peak %.0f MB        \n" : "perfsift: %s done in %.1f s, peak %.0f MB\n",
      m_open.back().what.c_str(), elapsed, static_cast<double>(m_open.back().peak) / 1048576.0);
  m_open.pop_back();
}

void Progress::stage_begin(const std::string &stage) {
  if (!m_enabled) return;
  m_stage = stage;
  m_stage_start = Clock::now();
  m_stage_peak = 0;
  reset_peak_rss();
}

void Progress::stage_end(const std::string &note) {
  if (!m_enabled) return;
  const double elapsed = std::chrono::duration<double>(Clock::now() - m_stage_start).count();
  fold_peak();
  std::fprintf(stderr, "perfsift: stage %s done in %.1f s, peak %.0f MB on analysis rank 0%s\n", m_stage.c_str(),
               elapsed, static_cast<double>(m_stage_peak) / 1048576.0, note.c_str());
}

}  // namespace perfsift::pipeline
