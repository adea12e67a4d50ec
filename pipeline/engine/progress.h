// Progress of long work on stderr: stage, percent, ETA. Shown by analysis rank 0
// (its share is representative: blocks are balanced) when stderr is a terminal or
// when asked (--progress); silent otherwise so logs stay clean.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace perfsift::pipeline {

class Progress {
 public:
  Progress(bool enabled) : m_enabled(enabled) {}
  // Steps nest (a product built inside a stage may scan the events): each end() closes
  // the innermost begin() and names it, with this process's peak memory while it ran.
  void begin(const std::string &what);
  void update(double fraction);  // 0..1, throttled to a few lines per second
  void end();
  // A stage around its steps: its time and this process's peak memory while it ran
  // (the kernel's high-water mark, reset when the stage starts), on one line at its end.
  void stage_begin(const std::string &stage);
  void stage_end(const std::string &note = "");

 private:
  using Clock = std::chrono::steady_clock;
  bool m_enabled;
  bool m_tty = false;
  struct Step {
    std::string what;
    Clock::time_point start;
    long long peak = 0;  // bytes, as far as folded
  };
  // The high-water mark so far into every open step and the stage, before it is reset.
  void fold_peak();
  std::vector<Step> m_open;  // innermost last
  Clock::time_point m_last;
  int m_last_percent = -1;
  std::string m_stage;
  Clock::time_point m_stage_start;
  long long m_stage_peak = 0;
};

}  // namespace perfsift::pipeline
