// libFuzzer target for what-if questions (`--whatif`, whatif.questions): any text must
// parse against the store's region paths or throw QuestionError naming the question,
// the word and the fix, never crash, hang or allocate by a number in the text. An input
// "QUESTION\0NAME\0NAME..." brings its own regions (names below the previous one or at
// the top, paths as the collector writes them; else a fixed set with spaces, quotes and
// repeated leaf names). Every path also round-trips through quote_region.
// Seeds (corpus/questions/): the grammar's forms (pipeline/whatif/questions.h).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/region_path.h"
#include "pipeline/whatif/questions.h"
#include "tests/fuzz/fuzz_util.h"

using namespace perfsift::pipeline;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input(reinterpret_cast<const char *>(data), size);
  const size_t nul = input.find('\0');
  const std::string text = input.substr(0, nul);
  std::vector<std::string> paths = {"(program)", "main",         "main/solve", "main/solve/halo exchange",
                                    "io/solve",  "say \"hi\"\\", "and"};
  if (nul != std::string::npos) {
    // Region names, as a store holds them: each below the previous region or at the top
    // (its first byte decides), paths written as the collector writes them.
    paths = {"(program)"};
    for (size_t p = nul + 1; p <= input.size() && paths.size() < 16;) {
      const size_t end = std::min(input.find('\0', p), input.size());
      const std::string name = input.substr(p, end - p);
      const bool top = paths.size() == 1 || name.empty() || (name[0] & 1);
      paths.push_back(perfsift::io::child_region_path(paths.back(), top, name));
      p = end + 1;
    }
  }
  try {
    const Question q = parse_question(text, paths);
    for (const Clause &c : q.clauses) {
      const Selector &s = c.sel;
      if (s.kind == Selector::Kind::Region || s.kind == Selector::Kind::Step || s.kind == Selector::Kind::Steps)
        PERFSIFT_FUZZ_CHECK(s.region_id >= 0 && static_cast<size_t>(s.region_id) < paths.size());
      if (s.kind == Selector::Kind::Event) PERFSIFT_FUZZ_CHECK(s.rank >= 0 && s.index >= 0);
      for (const auto &[a, b] : s.ranks) PERFSIFT_FUZZ_CHECK(0 <= a && a <= b);
    }
  } catch (const QuestionError &) {}
  // A region as a question names it reads back to the same region (first of equal paths).
  for (size_t k = 1; k < paths.size(); ++k) {
    try {
      const Question q = parse_question("zero-wait region " + quote_region(paths[k]), paths);
      PERFSIFT_FUZZ_CHECK(q.clauses.size() == 1 && paths[static_cast<size_t>(q.clauses[0].sel.region_id)] == paths[k]);
    } catch (const QuestionError &) {  // an empty path, or a leaf shared by several
    }
  }
  return 0;
}
