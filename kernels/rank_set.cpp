#include "kernels/rank_set.h"

#include <algorithm>
#include <stdexcept>

namespace perfsift::kernels {

RankRanges merge_ranges(RankRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  RankRanges out;
  for (const auto &r : ranges) {
    if (!out.empty() && r.first <= out.back().second + 1)
      out.back().second = std::max(out.back().second, r.second);
    else
      out.push_back(r);
  }
  return out;
}

RankRanges to_ranges(std::vector<int32_t> ranks) {
  RankRanges r;
  for (int32_t x : ranks) r.emplace_back(x, x);
  return merge_ranges(std::move(r));
}

std::string format_ranges(const RankRanges &ranges) {
  std::string s;
  for (const auto &[a, b] : ranges) {
    if (!s.empty()) s += ',';
    s += std::to_string(a);
    if (b != a) s += (b == a + 1 ? "," : "-") + std::to_string(b);
  }
  return s;
}

int64_t count_ranks(const RankRanges &ranges) {
  int64_t n = 0;
  for (const auto &[a, b] : ranges) n += static_cast<int64_t>(b) - a + 1;
  return n;
}

std::vector<int32_t> parse_ranks(const std::string &text, int32_t nranks) {
  std::vector<int32_t> out;
  if (text == "all") {
    for (int32_t r = 0; r < nranks; ++r) out.push_back(r);
    return out;
  }
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    const std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    try {
      size_t used = 0;
      const auto dash = part.find('-');
      const int32_t a = std::stoi(part.substr(0, dash), &used);
      if (dash == std::string::npos && used != part.size()) throw std::invalid_argument(part);
      const int32_t b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
      if (a < 0 || b < a || b >= nranks) throw std::invalid_argument(part);
      for (int32_t r = a; r <= b; ++r) out.push_back(r);
    } catch (const std::exception &) {
      throw std::invalid_argument("bad rank list part '" + part + "' in '" + text +
                                  "' (write e.g. 0-3,7 with ranks below " + std::to_string(nranks) + ", or all)");
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_ranges_brief(const RankRanges &ranges, size_t max_chars) {
  const std::string full = format_ranges(ranges);
  if (full.size() <= max_chars) return full;
  const std::string tail = ",...(" + std::to_string(count_ranks(ranges)) + " ranks)";
  std::string out;
  for (const auto &[a, b] : ranges) {
    const std::string part =
        (out.empty() ? "" : ",") + (a == b ? std::to_string(a) : std::to_string(a) + "-" + std::to_string(b));
    if (out.size() + part.size() + tail.size() > max_chars) break;
    out += part;
  }
  return out + tail;
}

}  // namespace perfsift::kernels
