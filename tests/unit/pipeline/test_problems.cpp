// Merging findings into problems (pipeline/engine/finding.cpp) on their typed identity —
// kind, place, culprit ranks, fix — and the catalogue of kinds (problem_kinds.h).
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>

#include "pipeline/engine/finding.h"
#include "pipeline/engine/problem_kinds.h"

using namespace perfsift::pipeline;
using perfsift::kernels::parse_ranks;
using perfsift::kernels::to_ranges;

namespace {

using K = ProblemKind;

Place region(const std::string &path, int32_t id = 1) {
  return path == "(program)" ? Place::program(path) : Place::region(id, path);
}

Place model_cause(const std::string &cause, const std::string &shape, const std::string &model_ranks = "") {
  Place p;
  p.type = Place::Type::ModelCause;
  p.label = cause + " (" + shape + ")";
  p.model_cause = cause;
  if (!model_ranks.empty()) p.model_ranks = to_ranges(parse_ranks(model_ranks, 1000));
  return p;
}

// A call site named by its source, labelled as a store would print it (with its index).
Place call_site(const std::string &function, int64_t line, const std::string &label) {
  Place p;
  p.type = Place::Type::CallSite;
  p.label = label;
  p.site = {function, "app.c", line, 0};
  return p;
}

Culprits ranks(const std::string &text) {
  if (text == "all") return Culprits::every_rank();
  return {false, to_ranges(parse_ranks(text, 1000))};
}

Fix fix(Fix::Action action, Fix::Target target, const std::string &where, const std::string &question,
        double factor = 0) {
  Fix f;
  f.action = action;
  f.target = target;
  f.factor = factor;
  if (target == Fix::Target::Region) f.region_path = where;
  if (target == Fix::Target::CallSite) f.site = {where, "app.c", 0, 0};
  f.question = question;
  return f;
}
Fix balance_region(const std::string &path) {
  return fix(Fix::Action::Balance, Fix::Target::Region, path, "balance region " + path);
}
Fix zero_wait_at(const std::string &function) {
  return fix(Fix::Action::ZeroWait, Fix::Target::CallSite, function, "zero-wait callsite " + function);
}
Fix balance_at(const std::string &function) {
  return fix(Fix::Action::Balance, Fix::Target::CallSite, function, "balance callsite " + function);
}
Fix balance_all() { return fix(Fix::Action::Balance, Fix::Target::All, "", "balance all"); }

Finding finding(ProblemKind kind, Place place, const std::string &culprits, double lost, std::optional<Fix> f,
                double gain) {
  Finding x;
  x.kind = kind;
  x.place = std::move(place);
  x.culprits = ranks(culprits);
  x.lost_s = lost;
  x.fix = std::move(f);
  x.predicted_gain_s = gain;
  return x;
}

const double kUnpriced = std::nan("");

}  // namespace

// Hercule's master-worker causes master_bottleneck and master_setup are both priced by "a
// master twice as fast at setting tasks up": one change, one gain, one problem (the
// scorecard's task_farm cases reported the same 159 ms twice). The imbalance on another
// rank than the master is a problem of its own.
TEST(Problems, OneFixIsOneProblem) {
  const Fix faster_master = fix(Fix::Action::Scale, Fix::Target::CallSite, "reply", "scale 0.5 callsite 3", 0.5);
  const auto problems = merge_into_problems(
      {finding(K::MasterWorker, model_cause("master_bottleneck", "master rank 1", "1"), "5", 0.215, faster_master,
               0.159),
       finding(K::MasterWorker, model_cause("master_setup", "master rank 1", "1"), "5", 0.057, faster_master, 0.159),
       finding(K::LoadImbalance, region("(program)"), "0", 0.215, balance_all(), 0.143)},
      nullptr);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].head.place.label, "master_bottleneck (master rank 1)");
  EXPECT_EQ(problems[0].evidence.size(), 2u);
  EXPECT_EQ(problems[0].evidence[1].place.model_cause, "master_setup");
  EXPECT_DOUBLE_EQ(problems[0].head.lost_s, 0.215);
  EXPECT_EQ(problems[1].head.place.type, Place::Type::Program);
}

// The head is the member whose fix gains most; a later finding at a merged member's place
// joins the same problem; findings without a fix are merged by place only.
TEST(Problems, SameFixSamePlaceAndUnpriced) {
  const auto problems = merge_into_problems(
      {finding(K::Dissimilarity, region("solve"), "1-3", 0.05, balance_region("solve"), 0.04),
       finding(K::LoadImbalance, region("solve"), "3", 0.08, balance_region("solve"), 0.04),
       finding(K::Disparity, region("solve"), "3", 0.01, std::nullopt, kUnpriced),
       finding(K::Disparity, region("io"), "all", 0.02, std::nullopt, kUnpriced),
       finding(K::Wavefront, model_cause("fill_up", "2 x 2 pipeline"), "3", 0.02, std::nullopt, kUnpriced)},
      nullptr);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].head.culprits.text(), "1-3");  // first of equal gains
  EXPECT_EQ(problems[0].evidence.size(), 3u);
  EXPECT_DOUBLE_EQ(problems[0].head.lost_s, 0.08);
  EXPECT_EQ(problems[1].head.place.region_path, "io");
  EXPECT_EQ(problems[2].head.kind, K::Wavefront);
}

// A region-wide finding (disparity, every rank) at the region of a problem with culprits
// is that problem's evidence (scorecard case 1057: I/O injected in phase04/kernel02 on
// ranks 0,3,9 was a load imbalance there and, again, a disparity on all ranks).
TEST(Problems, RegionWideFindingJoinsTheCulpritsProblem) {
  const auto problems = merge_into_problems(
      {finding(K::Disparity, region("phase04/kernel02"), "all", 0.196, std::nullopt, kUnpriced),
       finding(K::LoadImbalance, region("phase04/kernel02"), "0,3,9", 0.457, balance_region("x"), 0.456),
       finding(K::Disparity, region("phase01"), "all", 0.05, std::nullopt, kUnpriced)},
      nullptr);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].head.kind, K::LoadImbalance);
  ASSERT_EQ(problems[0].evidence.size(), 2u);
  EXPECT_EQ(problems[0].evidence[1].kind, K::Disparity);
  EXPECT_EQ(problems[1].head.place.region_path, "phase01");  // no problem with culprits there: its own
}

// A recognised model's causes are one problem; the pipeline's waiting (late senders at
// its receives) and the master's own excess are its symptoms, the best priced of them
// bounding its gain (scorecard: sweep4 and master_worker reported the waiting first).
TEST(Problems, ModelCausesAreOneProblemWithTheirWaitingAsSymptoms) {
  const auto wave = merge_into_problems(
      {finding(K::LateSender, call_site("main", 32, "(program) > main (sweep4.c:32)"), "0-5", 0.30,
               zero_wait_at("main"), 0.21),
       finding(K::Wavefront, model_cause("fill_up", "2 x 3 pipeline"), "4", 0.12, std::nullopt, kUnpriced),
       finding(K::Wavefront, model_cause("direction_change", "2 x 3 pipeline"), "4", 0.08, std::nullopt, kUnpriced),
       finding(K::LoadImbalance, region("setup"), "1", 0.05, balance_region("setup"), 0.02)},
      nullptr);
  ASSERT_EQ(wave.size(), 2u);
  EXPECT_EQ(wave[0].head.kind, K::Wavefront);
  EXPECT_EQ(wave[0].head.place.model_cause, "fill_up");
  EXPECT_EQ(wave[0].evidence.size(), 2u);
  ASSERT_EQ(wave[0].symptoms.size(), 1u);
  EXPECT_EQ(wave[0].symptoms[0].kind, K::LateSender);
  EXPECT_DOUBLE_EQ(wave[0].head.predicted_gain_s, 0.21);
  ASSERT_TRUE(wave[0].head.fix);
  EXPECT_TRUE(wave[0].head.fix->same(zero_wait_at("main")));
  EXPECT_EQ(wave[0].head.question(), "zero-wait callsite main");
  EXPECT_EQ(wave[1].head.place.region_path, "setup");
  const auto mw =
      merge_into_problems({finding(K::MasterWorker, model_cause("master_bottleneck", "master rank 0", "0"), "3", 0.2,
                                   std::nullopt, kUnpriced),
                           finding(K::LoadImbalance, region("(program)"), "0", 0.15, balance_all(), 0.1),
                           finding(K::LoadImbalance, region("(program)"), "2", 0.01, balance_region("other"), 0.005)},
                          nullptr);
  ASSERT_EQ(mw.size(), 2u);
  EXPECT_EQ(mw[0].head.kind, K::MasterWorker);
  ASSERT_EQ(mw[0].symptoms.size(), 1u);
  EXPECT_EQ(mw[0].symptoms[0].culprits.text(), "0");
  EXPECT_EQ(mw[1].head.culprits.text(), "2");
}

// Several masters: the masters' own excess is the model's symptom when its culprits are
// exactly the masters, as a set.
TEST(Problems, TheMastersExcessIsASymptomByRankSet) {
  const auto mw =
      merge_into_problems({finding(K::MasterWorker, model_cause("master_bottleneck", "master ranks 0 and 1", "0,1"),
                                   "3", 0.2, std::nullopt, kUnpriced),
                           finding(K::Dissimilarity, region("serve"), "0-1", 0.15, balance_region("serve"), 0.1),
                           finding(K::LoadImbalance, region("work"), "0-2", 0.1, balance_region("work"), 0.05)},
                          nullptr);
  ASSERT_EQ(mw.size(), 2u);
  ASSERT_EQ(mw[0].symptoms.size(), 1u);
  EXPECT_EQ(mw[0].symptoms[0].place.region_path, "serve");
  EXPECT_EQ(mw[1].head.place.region_path, "work");
}

// A problem at an enclosing region naming the culprits of a problem in one of its
// subregions is that problem seen from outside: evidence of the inner one, whose time at
// stake stays its own (the outer region's holds other work too).
TEST(Problems, EnclosingRegionWithTheSameCulpritsIsEvidence) {
  const auto problems = merge_into_problems(
      {finding(K::Dissimilarity, region("phase00"), "0,1", 0.114, balance_region("phase00"), 0.115),
       finding(K::LoadImbalance, region("phase00/kernel03"), "0,1", 0.127, balance_region("k3"), 0.020),
       finding(K::LoadImbalance, region("phase00/kernel01"), "3", 0.095, balance_region("k1"), 0.094),
       finding(K::LoadImbalance, region("phase001"), "0,1", 0.01, balance_region("p1"), 0.01)},
      nullptr);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].head.place.region_path, "phase00/kernel03");
  ASSERT_EQ(problems[0].evidence.size(), 2u);
  EXPECT_EQ(problems[0].evidence[1].place.region_path, "phase00");
  EXPECT_DOUBLE_EQ(problems[0].head.lost_s, 0.127);
  EXPECT_EQ(problems[2].head.place.region_path, "phase001");  // a sibling whose name starts alike is not inside
}

// A program without regions (the mpi4py Jacobi solver with a 2:1 split): the profile's load
// imbalance at the program and the dissimilarity of the work before one call site name the
// same rank for the same excess, one problem headed by the call site, whose fix is the
// precise one. A call site holding under half the program's excess stays a problem of its own,
// and so does the program's excess on other ranks.
TEST(Problems, TheProgramsExcessAtOneCallSiteIsOneProblem) {
  Fix at_site = balance_at("sendrecv");
  auto problems =
      merge_into_problems({finding(K::Dissimilarity, call_site("sendrecv", 21, "compute before #1 sendrecv:21"), "0",
                                   13.95, at_site, 14.37),
                           finding(K::LoadImbalance, region("(program)"), "0", 15.64,
                                   fix(Fix::Action::Balance, Fix::Target::All, "", "balance all"), 12.42)},
                          nullptr);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].head.kind, K::Dissimilarity);
  ASSERT_EQ(problems[0].evidence.size(), 2u);
  EXPECT_EQ(problems[0].evidence[1].kind, K::LoadImbalance);
  EXPECT_DOUBLE_EQ(problems[0].head.lost_s, 13.95);
  problems = merge_into_problems(
      {finding(K::Dissimilarity, call_site("sendrecv", 21, "compute before #1 sendrecv:21"), "0", 3.0, at_site, 3.1),
       finding(K::LoadImbalance, region("(program)"), "0", 15.64,
               fix(Fix::Action::Balance, Fix::Target::All, "", "balance all"), 12.42),
       finding(K::Dissimilarity, call_site("allreduce", 30, "compute before #2 allreduce:30"), "1", 9.0,
               balance_at("allreduce"), 9.0),
       finding(K::LoadImbalance, region("(program)"), "2", 10.0, std::nullopt, kUnpriced)},
      nullptr);
  EXPECT_EQ(problems.size(), 4u);
  // Only the late sender calls its send: balancing the work before it among its callers buys
  // nothing, balancing the program 100 ms. One problem, answered by the fix that buys.
  problems = merge_into_problems(
      {finding(K::Dissimilarity, call_site("send", 15, "compute before #3 send:15"), "0", 0.2, balance_at("send"), 0.0),
       finding(K::LoadImbalance, region("(program)"), "0", 0.2,
               fix(Fix::Action::Balance, Fix::Target::All, "", "balance all"), 0.1)},
      nullptr);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].head.kind, K::LoadImbalance);
  EXPECT_DOUBLE_EQ(problems[0].head.predicted_gain_s, 0.1);
  EXPECT_EQ(problems[0].evidence.size(), 2u);
}

// A call site is the same place when its function and file:line are, whatever its index in
// one store's table (labels differ between runs: "compute before #3 main:12" against #7);
// another line is another place, and a call site is never inside a region.
TEST(Problems, CallSitesAreNamedBySourceNotByIndex) {
  const Place before_run1 = call_site("main", 12, "compute before #3 main:12");
  Place before_run2 = call_site("main", 12, "compute before #7 main:12");
  EXPECT_TRUE(before_run1.same(before_run2));
  EXPECT_FALSE(before_run1.same(call_site("main", 13, "compute before #3 main:13")));
  before_run2.span = Place::Span::ComputationBefore;
  EXPECT_FALSE(before_run1.same(before_run2));                             // the call against the work before it
  EXPECT_TRUE(Place::region(4, "solve").same(Place::region(9, "solve")));  // region ids are one store's
  Place site_in_solve = call_site("main", 12, "solve/x");
  site_in_solve.region_path = "solve/x";
  EXPECT_FALSE(site_in_solve.strictly_inside(Place::region(4, "solve")));
  EXPECT_TRUE(Place::region(5, "solve/x").strictly_inside(Place::region(4, "solve")));
  EXPECT_FALSE(Place::region(5, "solve/x").strictly_inside(Place::program("(program)")));
  const auto problems = merge_into_problems(
      {finding(K::Dissimilarity, before_run1, "1", 0.01, std::nullopt, kUnpriced),
       finding(K::Dissimilarity, call_site("main", 12, "again #7"), "1", 0.02, std::nullopt, kUnpriced)},
      nullptr);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_DOUBLE_EQ(problems[0].head.lost_s, 0.02);
}

// A stripped binary (hpcc as Debian ships it) names no function: its call sites are the
// module and the offset into it, and two of them are two places with two fixes.
TEST(Problems, StrippedCallSitesDifferByTheirOffsetIntoTheModule) {
  std::vector<perfsift::io::CallSite> sites(2);
  sites[0].module = sites[1].module = "/usr/bin/hpcc";
  sites[0].offset = 83702;
  sites[1].offset = 85118;
  const Place first = Place::call_site(sites, 0, "compute before #31 hpcc", Place::Span::ComputationBefore);
  const Place second = Place::call_site(sites, 1, "compute before #32 hpcc", Place::Span::ComputationBefore);
  EXPECT_FALSE(first.same(second));
  EXPECT_EQ(first.site.function, "/usr/bin/hpcc");
  EXPECT_EQ(first.site.offset, 83702);
  Fix balance_first = balance_at("hpcc"), balance_second = balance_at("hpcc");
  balance_first.site = first.site;
  balance_second.site = second.site;
  const auto problems = merge_into_problems({finding(K::Dissimilarity, first, "1", 0.01, balance_first, kUnpriced),
                                             finding(K::Dissimilarity, second, "1", 0.02, balance_second, kUnpriced)},
                                            nullptr);
  EXPECT_EQ(problems.size(), 2u);
}

// Waiting that a fix removes in the replay is that fix's symptom only when the fix shortens
// the run measurably: a balance fix that removes the waiting but predicts no gain leaves the
// waiting a problem of its own, and is itself set aside as a note (the families app, where
// a 0 us dissimilarity fix once headed a problem over the late sender it "caused").
TEST(Problems, AFixWithoutGainCausesNothing) {
  FixEffects effects;
  effects.baseline_wait = {400'000, 300'000};  // ns at places 0 and 1
  effects.place_of.emplace(zero_wait_at("recv31"), 0);
  effects.place_of.emplace(zero_wait_at("recv41"), 1);
  effects.wait_under.emplace(balance_at("compute43"), std::vector<int64_t>{400'000, 0});
  effects.wait_under.emplace(balance_at("compute6"), std::vector<int64_t>{0, 300'000});
  const double run_s = 0.00025;  // 1 % of it is 2.5 us: each gain below is worth acting on
  auto problems = merge_into_problems(
      {finding(K::LateSender, call_site("recv31", 31, "main:31"), "0,3", 4.8e-4, zero_wait_at("recv31"), 4e-6),
       finding(K::LateSender, call_site("recv41", 41, "main:41"), "1", 3.6e-4, zero_wait_at("recv41"), 5e-6),
       finding(K::Dissimilarity, call_site("compute43", 43, "compute #43"), "1,3", 1.8e-4, balance_at("compute43"), 0),
       finding(K::Dissimilarity, call_site("compute6", 6, "compute #6"), "0,2", 1.8e-4, balance_at("compute6"), 3e-6)},
      &effects, run_s);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].head.place.label, "main:41");  // #43 removes its waiting but gains nothing
  EXPECT_TRUE(problems[0].symptoms.empty());
  EXPECT_EQ(problems[1].head.place.label, "compute #43");
  EXPECT_EQ(problems[2].head.place.label, "compute #6");  // 3 us > 0.1 % of 0.25 ms: a cause
  ASSERT_EQ(problems[2].symptoms.size(), 1u);
  EXPECT_EQ(problems[2].symptoms[0].place.label, "main:31");
  const auto notes = set_aside_non_problems(problems, run_s);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].finding.place.label, "compute #43");
  EXPECT_EQ(notes[0].reason,
            "the replay of its fix (balance the computation before compute43 across ranks) predicts no measurable "
            "gain (0 us)");
  for (const auto &p : problems) EXPECT_GT(p.head.predicted_gain_s, 0);
}

// One cause, one problem: the bundled binary swap's imbalance on rank 2 makes ranks 0 and 3
// wait in the exchange (a late sender, a late-send class) and Hercule's divide-and-conquer
// sees that waiting as rank 3's merge wait. The replay credits the balance fix with removing
// the waiting, so the wait state and the transfer class are its symptoms, and so is the
// unpriced model cause whose waiting they are.
TEST(Problems, AModelsWaitingAnotherFixRemovesIsThatProblemsSymptom) {
  FixEffects effects;
  effects.baseline_wait = {18'000'000};  // ns at the exchange's call site
  effects.place_of.emplace(zero_wait_at("exchange"), 0);
  effects.wait_under.emplace(balance_region("composite/blend"), std::vector<int64_t>{1'000'000});
  Place transfer = call_site("exchange", 30, "main:30 -> main:30");
  transfer.type = Place::Type::Transfer;
  transfer.peer = transfer.site;
  auto problems = merge_into_problems(
      {finding(K::LoadImbalance, region("composite/blend"), "2", 0.0152, balance_region("composite/blend"), 0.0151),
       finding(K::LateSender, call_site("exchange", 30, "composite > main:30"), "0,3", 0.0184, zero_wait_at("exchange"),
               0.002),
       finding(K::LateSend, transfer, "0-3", 0.02, zero_wait_at("exchange"), 0.002),
       finding(K::DivideAndConquer, model_cause("merge_wait", "2-level recursion"), "3", 0.0274, std::nullopt,
               kUnpriced)},
      &effects, 0.0439);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].head.kind, K::LoadImbalance);
  std::set<ProblemKind> symptoms;
  for (const auto &f : problems[0].symptoms) symptoms.insert(f.kind);
  EXPECT_EQ(symptoms, (std::set<ProblemKind>{K::LateSender, K::LateSend, K::DivideAndConquer}));
}

// A problem is worth acting on when its fix buys at least 1 % of the program (unpriced: when
// that much is at stake): a balanced run's 0.4 % "wait at nxn" is a note, said as such.
TEST(Problems, AFixThatBuysUnderOnePercentIsANote) {
  const double run_s = 17.0;
  auto problems =
      merge_into_problems({finding(K::WaitAtNxn, call_site("allreduce", 88, "solve > main:88"), "0-1", 0.218,
                                   zero_wait_at("allreduce"), 0.0696),
                           finding(K::LoadImbalance, region("solve"), "1", 0.9, balance_region("solve"), 0.5),
                           finding(K::LateRecv, call_site("send", 12, "main:12"), "0", 0.1, std::nullopt, kUnpriced)},
                          nullptr, run_s);
  const auto notes = set_aside_non_problems(problems, run_s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].head.place.label, "solve");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].reason,
            "its fix (remove the waiting at allreduce) is predicted to save 69.6 ms, under 1 % of the program: not "
            "worth acting on");
  EXPECT_EQ(notes[1].reason, "100.0 ms at stake, under 1 % of the program: not worth acting on");
}

// A note's figures read as the report's others: a balance fix of a master-worker run (HyPhy)
// whose replay predicts a loss of 18.3 s says "18.30 s", not "1.83e+04 ms".
TEST(Problems, ANotesFiguresReadAsTheReportsOthers) {
  const double run_s = 28.0;
  auto problems = merge_into_problems(
      {finding(K::LoadImbalance, region("(program)"), "0", 4.0,
               fix(Fix::Action::Balance, Fix::Target::All, "", "balance all"), -18.3),
       finding(K::Dissimilarity, call_site("send", 12, "main:12"), "1", 0.0032, std::nullopt, kUnpriced)},
      nullptr, run_s);
  const auto notes = set_aside_non_problems(problems, run_s);
  EXPECT_TRUE(problems.empty());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].reason, "the replay of its fix (balance the computation across ranks) predicts a loss of 18.30 s");
  EXPECT_EQ(notes[1].reason, "3.2 ms at stake, under 1 % of the program: not worth acting on");
}

// Fixes are said as things to do in the program's terms, never as a store's call-site index;
// a stripped binary's call sites keep the module and the offset into it, so they stay apart.
TEST(Problems, FixesAreNamedInTheProgramsTerms) {
  Fix at_line = balance_at("solve");
  at_line.site = {"LAMMPS_NS::CommBrick::reverse_comm(int)", "/src/comm_brick.cpp", 612, 0x2bb};
  EXPECT_EQ(fix_words(at_line),
            "balance the computation before CommBrick::reverse_comm (comm_brick.cpp:612) across ranks");
  Fix stripped = zero_wait_at("x");
  stripped.site = {"/usr/bin/cp2k.psmp", "", 0, 0x1d2f3a};
  EXPECT_EQ(fix_words(stripped), "remove the waiting at cp2k.psmp+0x1d2f3a");
  Fix faster = fix(Fix::Action::Scale, Fix::Target::CallSite, "reply", "scale 0.5 callsite 3", 0.5);
  EXPECT_EQ(fix_words(faster), "make the computation before reply 2x faster");
  EXPECT_EQ(fix_words(balance_region("solve/smooth")), "balance the computation in region solve/smooth across ranks");
  EXPECT_EQ(fix_words(balance_all()), "balance the computation across ranks");
  for (const Fix &f : {at_line, stripped, faster, balance_all()})
    EXPECT_EQ(fix_words(f).find("callsite"), std::string::npos);
}

// Culprit ranks print as ranges only at the edges; every rank prints as "all".
TEST(Problems, CulpritsPrintAsRanges) {
  EXPECT_EQ(ranks("0,1,2,3,7").text(), "0-3,7");
  EXPECT_EQ(ranks("all").text(), "all");
  EXPECT_FALSE(ranks("0-3") == ranks("0-2"));
}

// One definition per kind: identifiers and names unique, each kind found by its
// identifier, the kernels' patterns and classes mapped in order.
TEST(ProblemKinds, OneDefinitionEach) {
  std::set<std::string_view> ids, names;
  for (size_t k = 0; k < problem_kinds().size(); ++k) {
    const auto &info = problem_kinds()[k];
    EXPECT_EQ(static_cast<size_t>(info.kind), k);
    EXPECT_TRUE(ids.insert(info.id).second) << info.id;
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_FALSE(info.stage.empty());
    EXPECT_FALSE(info.description.empty());
    EXPECT_EQ(find_problem_kind(info.id), info.kind);
  }
  EXPECT_FALSE(find_problem_kind("late_sender"));  // one spelling
  EXPECT_EQ(kind_id(wait_state_kind(0)), "late-sender");
  EXPECT_EQ(kind_id(wait_state_kind(5)), "early-reduce");
  EXPECT_THROW(wait_state_kind(6), std::out_of_range);
  EXPECT_EQ(kind_id(transfer_class_kind(1)), "late-send");
  EXPECT_EQ(kind_id(transfer_class_kind(6)), "late-recv-wait");
  EXPECT_THROW(transfer_class_kind(0), std::out_of_range);  // normal transfers are no problem
  EXPECT_EQ(kind_info(K::MpiTime).name, "time in MPI");
  EXPECT_TRUE(is_model_kind(K::DivideAndConquer));
  EXPECT_FALSE(is_model_kind(K::Disparity));
}
