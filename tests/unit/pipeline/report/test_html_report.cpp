// The HTML page's data and the text report, rendered from small results stores written
// here: the call count of a binned timeline, the operations table without start-up and
// shut-down, a table a stage found nothing for said as a fact, the answer as paragraphs.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "io/results_store.h"
#include "pipeline/report/report.h"
#include "pipeline/report/views/efficiency.h"
#include "pipeline/report/views/stage_views.h"

namespace perfsift::pipeline {
namespace {

struct Problem {
  std::string kind = "load-imbalance", where = "solve", ranks = "1", cause = "computation in solve is uneven";
  double lost_s = 0.5, gain_s = 0.4;
};

// What a method saw of problem `problem` (1-based): role evidence or symptom.
struct Evidence {
  int64_t problem = 1;
  std::string role = "evidence", stage = "dissimilarity", kind = "dissimilarity", where = "solve", ranks = "1";
  double lost_s = 0.5;
};

// A results store with the tables every report reads, the run of `ranks` ranks, one
// problem (none when `problem` is empty), what the methods saw of them (`evidence`), and
// the groups `add` writes.
class Store {
 public:
  explicit Store(const std::string &name, std::vector<Evidence> evidence = {})
      : m_path(testing::TempDir() + name + "-" + std::to_string(getpid()) + ".h5"), m_evidence(std::move(evidence)) {}
  ~Store() { std::remove(m_path.c_str()); }
  template <class Add>
  const std::string &write(const std::vector<std::string> &stages, const std::vector<Problem> &problems, Add add) {
    io::ResultsWriter w(MPI_COMM_SELF, m_path);
    w.attribute("", "stages", stages);
    w.attribute("", "source_store", std::string("run.h5"));
    w.group("run", "the run");
    w.attribute("run", "ranks", int64_t{4});
    w.attribute("run", "wall_time_s", 31.0);
    w.attribute("run", "program_time_s", 30.0);
    w.attribute("run", "startup_s", 1.0);
    w.attribute("run", "shutdown_s", 0.0);
    w.table("problems", problems_table(problems));
    w.table("evidence", evidence_table(m_evidence));
    w.table("notes", notes_table());
    add(w);
    w.commit();
    return m_path;
  }

 private:
  static io::Table problems_table(const std::vector<Problem> &ps) {
    io::Table t;
    auto &kind = t.strings("kind", ""), &where = t.strings("where", ""), &ranks = t.strings("ranks", "");
    auto &cause = t.strings("cause", ""), &stage = t.strings("stage", ""), &question = t.strings("question", "");
    auto &lost = t.floats("lost_s", "s", ""), &gain = t.floats("predicted_gain_s", "s", "");
    for (const auto &p : ps) {
      kind.push_back(p.kind), where.push_back(p.where), ranks.push_back(p.ranks), cause.push_back(p.cause);
      stage.push_back("profile"), question.push_back(""), lost.push_back(p.lost_s), gain.push_back(p.gain_s);
    }
    return t;
  }
  static io::Table evidence_table(const std::vector<Evidence> &rows) {
    io::Table t;
    auto &problem = t.ints("problem", "", "");
    auto &role = t.strings("role", ""), &stage = t.strings("stage", ""), &kind = t.strings("kind", "");
    auto &where = t.strings("where", ""), &ranks = t.strings("ranks", ""), &cause = t.strings("cause", "");
    auto &lost = t.floats("lost_s", "s", "");
    for (const auto &e : rows) {
      problem.push_back(e.problem), role.push_back(e.role), stage.push_back(e.stage), kind.push_back(e.kind);
      where.push_back(e.where), ranks.push_back(e.ranks), cause.push_back(""), lost.push_back(e.lost_s);
    }
    return t;
  }
  static io::Table notes_table() {
    io::Table t;
    for (const char *c : {"kind", "where", "ranks", "reason", "stage"}) t.strings(c, "");
    t.floats("lost_s", "s", "");
    t.floats("predicted_gain_s", "s", "");
    return t;
  }
  std::string m_path;
  std::vector<Evidence> m_evidence;
};

// The JSON the page draws from: what the template's data marker was replaced with.
std::string page_data(const std::string &html) {
  const std::string open = "<script type=\"application/json\" id=\"data\">";
  const size_t a = html.find(open) + open.size();
  return html.substr(a, html.find("</script>", a) - a);
}

io::Table ops_table(const std::vector<std::pair<std::string, double>> &ops) {
  io::Table t;
  auto &name = t.strings("op", "");
  auto &calls = t.ints("calls", "count", "");
  auto &time = t.floats("time_s", "s", "");
  auto &bytes = t.ints("bytes", "bytes", "");
  double total = 0;
  for (const auto &o : ops) total += o.second;
  auto &share = t.floats("mpi_share", "ratio", "share of all MPI time, as the profile stage stores it");
  for (const auto &[op, s] : ops)
    name.push_back(op), calls.push_back(4), time.push_back(s), bytes.push_back(0), share.push_back(s / total);
  return t;
}

// The profile stage's group: one region, the operations given, two messages.
void write_profile(io::ResultsWriter &w, const std::vector<std::pair<std::string, double>> &ops) {
  w.group("profile", "profile");
  w.attribute("profile", "ranks_with_data", int64_t{4});
  io::Table r;
  r.strings("path", "").assign({"(program)", "solve"});
  r.floats("wall_mean_s", "s", "").assign({31, 20});
  r.floats("wall_max_s", "s", "").assign({31, 24});
  r.floats("mpi_share", "ratio", "").assign({0.4, 0.1});
  r.floats("comp_imbalance", "ratio", "").assign({0.1, 0.3});
  w.table("profile/regions", r);
  w.table("profile/ops", ops_table(ops));
  io::Table m;
  m.ints("sender", "rank", "").assign({0, 1});
  m.ints("receiver", "rank", "").assign({1, 0});
  m.ints("bytes", "bytes", "").assign({4096, 4096});
  m.ints("messages", "count", "").assign({2, 2});
  w.table("profile/messages", m);
  for (const auto &[path, cols] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"profile/rank_region_wall_s", {"(program)", "solve"}},
           {"profile/rank_op_calls", {"MPI_Send"}},
           {"profile/rank_op_bytes", {"MPI_Send"}}}) {
    io::MatrixBlock b;
    b.row_dim = "rank", b.col_dim = "column", b.col_labels = cols, b.rows_total = 4;
    b.values.assign(4 * cols.size(), 1.0);
    w.matrix(path, b);
  }
}

TEST(OperationsByTime, StartUpAndShutDownApartAndOutOfTheShares) {
  const auto ops = operations_by_time(
      ops_table({{"MPI_Init_thread", 30}, {"MPI_Allreduce", 40}, {"MPI_Finalize", 2}, {"MPI_Send", 60}}));
  ASSERT_EQ(ops.program.size(), 2u);
  EXPECT_EQ(ops.program[0].op, "MPI_Send");
  EXPECT_DOUBLE_EQ(ops.program[0].share, 0.6);
  EXPECT_EQ(ops.program[1].op, "MPI_Allreduce");
  EXPECT_DOUBLE_EQ(ops.program[1].share, 0.4);
  ASSERT_EQ(ops.lifecycle.size(), 2u);
  EXPECT_EQ(ops.lifecycle[0].op, "MPI_Init_thread");
  EXPECT_EQ(ops.lifecycle[1].op, "MPI_Finalize");
}

// A 30 s run whose MPI_Init takes 23 % of all MPI time: the text report's operations table
// and the page's share the program's MPI time without it, and name it apart.
TEST(OperationsTable, LeavesStartUpAndShutDownOutOfTheShares) {
  Store s("ops");
  const io::ResultsStore rs(s.write({"profile"}, {Problem{}}, [](io::ResultsWriter &w) {
    write_profile(w, {{"MPI_Init", 30}, {"MPI_Send", 60}, {"MPI_Allreduce", 40}, {"MPI_Finalize", 0.004}});
  }));
  const std::string text = render_text(rs);
  const size_t at = text.find("MPI operations by time");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string part = text.substr(at, text.find("\n\n", at) - at);
  std::vector<std::string> rows;
  for (size_t a = part.find('\n') + 1; a < part.size();) {
    const size_t e = std::min(part.find('\n', a), part.size());
    rows.push_back(part.substr(a, e - a));
    a = e + 1;
  }
  ASSERT_GE(rows.size(), 4u) << part;  // the header, two operations, start-up and shut-down
  EXPECT_NE(rows[1].find("MPI_Send"), std::string::npos) << part;
  EXPECT_NE(rows[1].find("60%"), std::string::npos) << part;
  EXPECT_NE(rows[2].find("MPI_Allreduce"), std::string::npos) << part;
  EXPECT_NE(rows[2].find("40%"), std::string::npos) << part;
  std::string apart;
  for (size_t i = 3; i < rows.size(); ++i) apart += rows[i];
  EXPECT_NE(apart.find("start-up and shut-down, per rank and not in the shares: MPI_Init 7.50 s, MPI_Finalize 1.0 ms"),
            std::string::npos)
      << part;
  const std::string data = page_data(render_html(rs));
  EXPECT_NE(data.find("\"operations\":{\"program\":[[\"MPI_Send\",4,15,0.6],[\"MPI_Allreduce\",4,10,0.4]],"
                      "\"lifecycle\":[[\"MPI_Init\",4,7.5,0],[\"MPI_Finalize\",4,0.001,0]]}"),
            std::string::npos)
      << data;
}

// A run without a problem says what it is: its MPI share of the program and the operation
// that takes most of it (start-up and shut-down left out), not "no problem crossed the
// reporting thresholds".
TEST(Answer, ARunWithoutAProblemSaysWhatItIs) {
  Store s("calm");
  const io::ResultsStore rs(s.write({"profile"}, {}, [](io::ResultsWriter &w) {
    write_profile(w, {{"MPI_Init", 30}, {"MPI_Allreduce", 12}, {"MPI_Send", 4}});
  }));
  const auto lines = answer_lines(rs, 100);
  std::string answer;
  for (const auto &l : lines) answer += l + " ";
  EXPECT_EQ(answer.rfind("Answer: no problem worth fixing: MPI is 13% of the program, mostly 4 MPI_Allreduce calls of "
                         "3.00 s",
                         0),
            0u)
      << answer;
}

// A problem one method saw at two places (dissimilarity at two call sites) is seen by one
// method, not "seen by dissimilarity (dissimilarity), dissimilarity (dissimilarity)"; two
// methods are named once each, and the waiting it causes still follows.
TEST(TopFindings, EachMethodThatSawAProblemIsNamedOnce) {
  const ReportLimits kWide{.width = 400};  // each finding's lines unwrapped
  const auto with_profile = [](io::ResultsWriter &w) { write_profile(w, {{"MPI_Send", 4}}); };
  const Evidence at_two = {1, "evidence", "dissimilarity", "dissimilarity", "compute before #3 solve:40", "0", 1.2};
  const Evidence waiting = {1, "symptom", "waitstates", "late-sender", "solve > MPI_Recv", "1", 0.9};
  Store one("one-method", {Evidence{}, at_two, waiting});
  const std::string text = render_text(io::ResultsStore(one.write({"profile"}, {Problem{}}, with_profile)), kWide);
  EXPECT_EQ(text.find("seen by"), std::string::npos) << text;
  EXPECT_NE(text.find("causes late-sender at solve > MPI_Recv on ranks 1"), std::string::npos) << text;
  const Evidence profile = {1, "evidence", "profile", "load-imbalance", "(program)", "1", 1.0};
  Store two("two-methods", {Evidence{}, at_two, profile});
  const std::string both = render_text(io::ResultsStore(two.write({"profile"}, {Problem{}}, with_profile)), kWide);
  EXPECT_NE(both.find("seen by dissimilarity (dissimilarity), profile (load-imbalance)"), std::string::npos) << both;
}

// The ranks waited for a core and the replay misses the run (CP2K on a machine shared with
// other jobs: 83 s of a 91 s program descheduled, the replay 87 % short): the answer says so,
// with the measured descheduled time, where a user reads first; a replay within 5 % does not.
TEST(Answer, ADisturbedRunSaysSo) {
  const auto answer_of = [](double error) {
    Store s("disturbed");
    const io::ResultsStore rs(s.write({"profile", "whatif"}, {Problem{}}, [&](io::ResultsWriter &w) {
      write_profile(w, {{"MPI_Allreduce", 12}});
      w.group("whatif", "whatif");
      w.attribute("whatif", "baseline_error", error);
      w.attribute("whatif", "program_measured_s", 91.0);
      w.attribute("whatif", "descheduled_ranks", int64_t{2});
      w.attribute("whatif", "descheduled_s", 166.6);
      w.attribute("whatif", "descheduled_max_s", 83.3);
      w.attribute("whatif", "descheduled_max_rank", int64_t{0});
      w.attribute("whatif", "error_within_descheduled", int64_t{1});
    }));
    std::string answer;
    for (const auto &l : answer_lines(rs, 400)) answer += l + "\n";
    return answer;
  };
  const std::string disturbed = answer_of(-0.875);
  EXPECT_NE(disturbed.find("  Disturbed run: rank 0 waited 83.30 s of the 91.00 s program for a core (runnable but "
                           "descheduled; all ranks together 167 s) and the replay misses the run by -88%"),
            std::string::npos)
      << disturbed;
  const std::string calm = answer_of(-0.008);
  EXPECT_EQ(calm.find("Disturbed"), std::string::npos) << calm;
}

// More calls than the page draws one by one: the count it gives is the run's calls, not
// the sum over the measured run and each replay of the same calls.
TEST(HtmlPage, BinnedTimelineCountsTheRunsCalls) {
  constexpr int64_t kCalls = 60004;  // above the page's limit of 60,000 drawn calls
  Store s("binned");
  const io::ResultsStore rs(s.write({"whatif"}, {Problem{}}, [](io::ResultsWriter &w) {
    w.group("whatif", "what-if");
    w.attribute("whatif", "traces_stored", int64_t{1});
    w.attribute("whatif", "trace_operations", std::vector<std::string>{"MPI_Send"});
    w.attribute("whatif", "trace_regions", std::vector<std::string>{"solve"});
    io::Table q;
    q.strings("question", "").assign({"baseline", "balance region solve"});
    q.floats("predicted_s", "s", "").assign({30, 29.6});
    q.floats("gain_s", "s", "").assign({0, 0.4});
    q.strings("origin", "").assign({"baseline", "profile"});
    q.ints("selected", "", "").assign({0, 1});
    q.ints("released", "", "").assign({0, 0});
    w.table("whatif/questions", q);
    io::Table t;
    auto &question = t.ints("question", "", ""), &rank = t.ints("rank", "", ""), &event = t.ints("event", "", "");
    auto &enter = t.ints("enter_ns", "ns", ""), &exit = t.ints("exit_ns", "ns", "");
    auto &op = t.ints("op", "", ""), &region = t.ints("region", "", "");
    for (int64_t k : {-1, 0, 1})  // the measured run, then the replays of both questions
      for (int64_t i = 0; i < kCalls; ++i) {
        question.push_back(k), rank.push_back(i % 4), event.push_back(i / 4), enter.push_back(i * 1000);
        exit.push_back(i * 1000 + 500), op.push_back(0), region.push_back(0);
      }
    w.table("whatif/trace", t);
  }));
  const std::string data = page_data(render_html(rs));
  EXPECT_NE(data.find("\"binned\":{"), std::string::npos);
  EXPECT_NE(data.find("\"calls\":" + std::to_string(kCalls) + ","), std::string::npos) << data.substr(0, 2000);
}

// A diagnosis that recognised no model stores no causes table: the page says so in its
// place as a fact, not among the views absent; a stage that did not run stays absent.
TEST(HtmlPage, NothingFoundIsNotAnAbsence) {
  Store s("none");
  const io::ResultsStore rs(s.write({"diagnosis"}, {}, [](io::ResultsWriter &w) {
    w.group("diagnosis", "model diagnosis");
    w.attribute("diagnosis", "model", std::string("none"));
  }));
  const std::string data = page_data(render_html(rs));
  const size_t absent = data.find("\"tables_absent\":["), none = data.find("\"tables_none\":[");
  ASSERT_NE(absent, std::string::npos);
  ASSERT_NE(none, std::string::npos);
  const std::string absent_list = data.substr(absent, data.find(']', absent) - absent);
  EXPECT_EQ(absent_list.find("diagnosis"), std::string::npos) << absent_list;
  EXPECT_NE(absent_list.find("the whatif stage did not run"), std::string::npos) << absent_list;
  EXPECT_NE(data.find("{\"title\":\"Model diagnosis causes (Hercule)\",\"why\":\"none: no master-worker, wavefront "
                      "or divide-and-conquer structure recognised\"}",
                      none),
            std::string::npos)
      << data.substr(none, 400);
  EXPECT_EQ(data.find("stored no /diagnosis/causes"), std::string::npos);
  EXPECT_NE(data.find("\"domino\":\"no domino path in the predicted timeline: the domino stage did not run"),
            std::string::npos);
}

// The answer is two paragraphs however long the cause: the page reflows them.
TEST(HtmlPage, AnswerIsParagraphsNotTheTextReportsLines) {
  Problem p;
  p.cause.clear();
  for (int i = 0; i < 30; ++i) p.cause += "rank " + std::to_string(i) + " waits for its neighbour; ";
  p.cause += "the end";
  Store s("answer");
  const io::ResultsStore rs(s.write({}, {p}, [](io::ResultsWriter &) {}));
  const std::string data = page_data(render_html(rs));
  const size_t a = data.find("\"answer\":[\"Answer: ");
  ASSERT_NE(a, std::string::npos) << data.substr(0, 600);
  const size_t why = data.find("\",\"  Why: " + p.cause + "\"]", a);
  EXPECT_NE(why, std::string::npos) << data.substr(a, 900);
  EXPECT_EQ(data.substr(a, why - a).find("\",\""), std::string::npos) << data.substr(a, 900);
}

// Communication is serialisation x transfer: when its problem is serialisation's, the
// report names it once, under serialisation; parallel's is load balance's, named there.
TEST(Efficiency, AProductsProblemIsNamedOnceUnderItsFactor) {
  Store s("pop");
  const Problem waiting{"late-sender", "solve > MPI_Recv", "0", "receivers wait", 0.3, 0.2};
  const io::ResultsStore rs(s.write({"profile", "efficiency"}, {Problem{}, waiting}, [](io::ResultsWriter &w) {
    write_profile(w, {{"MPI_Recv", 4}});
    w.group("efficiency", "POP efficiencies");
    for (const auto &[key, value] : std::vector<std::pair<const char *, double>>{{"parallel", 0.45},
                                                                                 {"load_balance", 0.6},
                                                                                 {"communication", 0.75},
                                                                                 {"serialisation", 0.75},
                                                                                 {"transfer", 1.0}})
      w.attribute("efficiency", key, value);
  }));
  std::string text;
  for (const auto &l : efficiency_lines(rs, 200)) text += l + "\n";
  EXPECT_NE(text.find("  load balance 0.60: #1 load imbalance in solve on rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("  serialisation 0.75: #2 late sender in solve > MPI_Recv on rank 0"), std::string::npos) << text;
  EXPECT_EQ(text.find("communication 0.75: #2"), std::string::npos) << text;
  EXPECT_EQ(text.find("parallel 0.45: #1"), std::string::npos) << text;
}

// A fix that buys 8x its time at stake (NWChem: 3.05 s for 381 ms): the answer's three
// lines of why say that first, however long the rest of the cause.
TEST(Answer, AGainFarAboveTheStakeIsExplainedFirst) {
  Store s("gain");
  const Problem far{"dissimilarity",
                    "compute before #12 nwchem",
                    "0",
                    std::string(400, 'x') +
                        "; the fix gains more than the time at stake: ranks that wait for these "
                        "ranks finish earlier too",
                    0.381,
                    3.05};
  const io::ResultsStore rs(s.write({"profile"}, {far}, [](io::ResultsWriter &w) {
    write_profile(w, {{"MPI_Allreduce", 4}});
  }));
  std::string answer;
  for (const auto &l : answer_lines(rs, 100)) answer += l + "\n";
  EXPECT_NE(answer.find("Why: the fix gains more than the time at stake: ranks that wait for these"), std::string::npos)
      << answer;
}

}  // namespace
}  // namespace perfsift::pipeline

// The results store is written through MPI-IO: MPI on this process alone.
// MPI only to run the tests: listing them (test discovery at build time, before the
// sanitizers' suppressions of the MPI library's own leaks apply) starts no MPI.
int main(int argc, char **argv) {
  testing::InitGoogleTest(&argc, argv);
  if (testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  MPI_Init(&argc, &argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
