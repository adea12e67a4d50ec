// `perfsift export`: a predicted trace of the results store (the baseline replay or a
// user's what-if question) for viewers; the writers are io/trace_export. Given a trace
// store (a collected run), the measured run as Score-P lays out an OTF2 archive
// (io/otf2_export): `perfsift analyze` of the archive finds what the store gives.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "io/otf2_export.h"
#include "io/results_store.h"
#include "io/trace_model.h"
#include "pipeline/cli/commands.h"
#include "io/trace_export.h"
#include "pipeline/report/report.h"
#include "pipeline/format/results_view.h"

namespace perfsift::cli {

namespace fs = std::filesystem;
using pipeline::attr_or;
using pipeline::column;

namespace {

io::PredictedTrace load(const ExportOptions &o) {
  io::ResultsStore rs(o.results);
  const auto root = rs.attributes("");
  // A pipeline without whatif stores no /whatif group: say what is missing and how to get it.
  const auto stages = attr_or<std::vector<std::string>>(root, "stages", {});
  const bool ran = std::find(stages.begin(), stages.end(), "whatif") != stages.end();
  if (!ran || !pipeline::has_child(rs, "", "whatif"))
    throw std::runtime_error(o.results + ": no predicted traces: the whatif stage " +
                             (ran ? "ran but its group /whatif is missing" : "did not run") +
                             "; add whatif to pipeline.stages and analyse again");
  if (!pipeline::has_child(rs, "whatif", "trace") || !pipeline::has_child(rs, "whatif", "questions"))
    throw std::runtime_error(o.results +
                             ": no predicted traces: the run has more events than whatif.trace_max_events; "
                             "raise whatif.trace_max_events and analyse again");
  const auto questions = rs.table("whatif/questions");
  const auto &text = column<std::string>(questions, "question");
  const auto t = rs.table("whatif/trace");
  const auto &qi = column<int64_t>(t, "question");
  std::vector<int64_t> stored(qi.begin(), qi.end());
  std::sort(stored.begin(), stored.end());
  stored.erase(std::unique(stored.begin(), stored.end()), stored.end());
  // The question by row number or by its text.
  int64_t want = -2;
  if (o.question.empty())
    want = 0;
  else if (o.question == "measured")
    want = -1;  // the run as recorded
  else {
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == o.question) want = static_cast<int64_t>(i);
    if (want < -1 && !o.question.empty() && std::all_of(o.question.begin(), o.question.end(), ::isdigit))
      want = std::stoll(o.question);
  }
  if (want < -1 || !std::binary_search(stored.begin(), stored.end(), want)) {
    std::string avail;
    for (int64_t k : stored)
      avail += (avail.empty() ? "" : ", ") +
               (k < 0 ? std::string("\"measured\"") : std::to_string(k) + " \"" + text[static_cast<size_t>(k)] + "\"");
    throw std::runtime_error(o.results + ": no predicted trace for question '" + o.question + "'; stored: " + avail);
  }
  io::PredictedTrace p;
  p.question = want < 0 ? "measured run" : text[static_cast<size_t>(want)];
  const auto a = rs.attributes("whatif");
  p.ops = attr_or<std::vector<std::string>>(a, "trace_operations", {});
  p.regions = attr_or<std::vector<std::string>>(a, "trace_regions", {});
  const auto &rank = column<int64_t>(t, "rank"), &event = column<int64_t>(t, "event"),
             &enter = column<int64_t>(t, "enter_ns"), &exit = column<int64_t>(t, "exit_ns"),
             &wait = column<int64_t>(t, "wait_ns"), &op = column<int64_t>(t, "op"),
             &region = column<int64_t>(t, "region");
  for (size_t i = 0; i < t.rows(); ++i)
    if (qi[i] == want) {
      p.calls.push_back({rank[i], event[i], enter[i], exit[i], wait[i], op[i], region[i]});
      p.nranks = std::max(p.nranks, rank[i] + 1);
    }
  std::sort(p.calls.begin(), p.calls.end(), [](const io::PredictedCall &x, const io::PredictedCall &y) {
    return x.rank != y.rank ? x.rank < y.rank : x.event < y.event;
  });
  return p;
}

// The measured run of a trace store, as an OTF2 archive.
int export_measured(const ExportOptions &o) {
  if (o.format != "otf2")
    throw std::runtime_error(o.results + ": a trace store (a collected run) is exported with --format otf2; " +
                             o.format + " takes a results store written by perfsift analyze");
  if (!o.question.empty() && o.question != "measured")
    throw std::runtime_error(o.results + ": a trace store holds the measured run only; drop --question '" + o.question +
                             "', or export the results store of its analysis for a predicted trace");
  const io::Otf2Export x = io::write_store_otf2(o.results, o.output);
  const std::string warning = x.warning(o.results);
  if (!warning.empty()) std::fprintf(stderr, "perfsift: warning: %s\n", warning.c_str());
  std::fprintf(stderr,
               "perfsift: wrote %s/traces.otf2 (otf2, %lld MPI calls on %d ranks, %lld locations, measured run)\n",
               o.output.c_str(), static_cast<long long>(x.calls), x.ranks, static_cast<long long>(x.locations));
  return 0;
}

}  // namespace

int run_export(const ExportOptions &o) {
  // The input's kind by its content: a trace store's `format` attribute.
  if (io::hdf5_store_format(o.results) == io::kTraceStoreFormat) return export_measured(o);
  const io::PredictedTrace p = load(o);
  if (o.format == "chrome")
    io::write_chrome_trace(o.output, p);
  else
    io::write_otf2(o.output, p);
  std::fprintf(stderr, "perfsift: wrote %s (%s, %zu calls on %lld ranks, question \"%s\")\n", o.output.c_str(),
               o.format.c_str(), p.calls.size(), static_cast<long long>(p.nranks), p.question.c_str());
  return 0;
}

}  // namespace perfsift::cli
