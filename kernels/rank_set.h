// Sets of ranks as users write them: "0-3,7,12-15".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace perfsift::kernels {

using RankRanges = std::vector<std::pair<int32_t, int32_t>>;  // inclusive [first, last], sorted

// Sorted, merged ranges of `ranks` (any order, duplicates allowed).
RankRanges to_ranges(std::vector<int32_t> ranks);
// Merges range lists (e.g. gathered from several analysis ranks).
RankRanges merge_ranges(RankRanges ranges);
std::string format_ranges(const RankRanges &ranges);
// The same, cut to about max_chars for reports: "0,1,5-7,...(8118 ranks)" when longer.
std::string format_ranges_brief(const RankRanges &ranges, size_t max_chars = 60);
int64_t count_ranks(const RankRanges &ranges);
// Parses "0-3,7" (also "all" with `nranks`); throws std::invalid_argument naming the bad part.
std::vector<int32_t> parse_ranks(const std::string &text, int32_t nranks);

}  // namespace perfsift::kernels
