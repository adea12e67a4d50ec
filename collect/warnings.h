// What the collector tells the user: each message once, by rank 0 (every rank meets the
// same configuration, and problems counted on every rank are summed to rank 0 first).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace perfsift::collect {

class Warnings {
 public:
  void set_rank(int rank) { m_rank = rank; }
  void say(const std::string &msg) {
    if (std::find(m_said.begin(), m_said.end(), msg) != m_said.end()) return;
    m_said.push_back(msg);
    if (m_rank == 0) std::fprintf(stderr, "perfsift: %s\n", msg.c_str());
  }

 private:
  int m_rank = 0;
  std::vector<std::string> m_said;
};

}  // namespace perfsift::collect
