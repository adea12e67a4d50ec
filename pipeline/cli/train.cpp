// `perfsift train`: Vetter's modelling phase on this machine. The bundled microbenchmark
// (`train-worker`, run by the user's launcher under the collector) produces each class of
// transfer on purpose, one phase per class labelled with MPI_Pcontrol(1, "vetter.<class>"):
// rank pairs (0,1), (2,3), ... exchange messages of 1 ... max_elems ints; after a barrier
// the operation the class names is delayed by min_delay + delay_variance * drand48() us.
//
//   phase           sender                         receiver
//   normal          Send or Isend;Wait             Recv or Irecv;Wait   (all four pairings)
//   late_send       d; Send                        Recv or Irecv;Wait
//   late_recv       Send or Isend;Wait             d; Recv
//   late_send_post  d; Isend; Wait                 Recv or Irecv;Wait
//   late_send_wait  Isend; d; Wait                 Recv or Irecv;Wait
//   late_recv_post  Send or Isend;Wait             d; Irecv; Wait
//   late_recv_wait  Send or Isend;Wait             Irecv; d; Wait
//
// The trace is then matched (pipeline/replay/matched_messages.h), the normal phase's means per
// operation kind and size become the normalisation baselines, and a C4.5 tree is learnt
// from every labelled transfer. Resubstitution and 10-fold cross-validation figures per
// class are printed (with and without our post-gap feature) and kept in the model.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "io/trace_store.h"
#include "kernels/message_class.h"
#include "pipeline/cli/commands.h"
#include "pipeline/classifier/trained_classifier.h"
#include "pipeline/replay/matched_messages.h"
#include "pipeline/replay/replay_model.h"
#include "pipeline/stages/registry.h"

// The launcher of the MPI perfsift is built against (top CMakeLists.txt), for the messages.
#ifndef PERFSIFT_LAUNCHER
#define PERFSIFT_LAUNCHER "mpirun"
#endif

namespace perfsift::cli {

namespace fs = std::filesystem;
namespace vt = kernels::vetter;

namespace {

constexpr const char *kPhasePrefix = "vetter.";

// One transfer of the microbenchmark: who delays what.
void transfer(int cls, bool sender, int peer, int iteration, std::vector<int> &buf, int elems, double delay_s) {
  auto delay = [&] { std::this_thread::sleep_for(std::chrono::duration<double>(delay_s)); };
  const int tag = 7;
  MPI_Request req;
  // Which pairing of blocking and nonblocking calls this iteration uses.
  const bool alt = iteration % 2, alt2 = (iteration / 2) % 2;
  if (sender) {
    bool nonblocking = false, late_post = false, late_wait = false;
    switch (cls) {
      case vt::kNormal:
        nonblocking = alt;
        break;
      case vt::kLateSend:
        late_post = true;
        break;
      case vt::kLateSendPost:
        nonblocking = late_post = true;
        break;
      case vt::kLateSendWait:
        nonblocking = late_wait = true;
        break;
      default:
        nonblocking = alt;
        break;  // the receiver is the late one
    }
    if (late_post) delay();
    if (!nonblocking) {
      MPI_Send(buf.data(), elems, MPI_INT, peer, tag, MPI_COMM_WORLD);
      return;
    }
    MPI_Isend(buf.data(), elems, MPI_INT, peer, tag, MPI_COMM_WORLD, &req);
    if (late_wait) delay();
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return;
  }
  bool nonblocking = false, late_post = false, late_wait = false;
  switch (cls) {
    case vt::kNormal:
      nonblocking = alt2;
      break;
    case vt::kLateRecv:
      late_post = true;
      break;
    case vt::kLateRecvPost:
      nonblocking = late_post = true;
      break;
    case vt::kLateRecvWait:
      nonblocking = late_wait = true;
      break;
    default:
      nonblocking = alt;
      break;  // the sender is the late one
  }
  if (late_post) delay();
  if (!nonblocking) {
    MPI_Recv(buf.data(), elems, MPI_INT, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return;
  }
  MPI_Irecv(buf.data(), elems, MPI_INT, peer, tag, MPI_COMM_WORLD, &req);
  if (late_wait) delay();
  MPI_Wait(&req, MPI_STATUS_IGNORE);
}

std::string percent(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%5.1f%%", 100 * x);
  return b;
}

// Accuracy, then per class recall, precision and the confusion row (predicted classes
// in the order of the header, as the paper's Table 2).
void print_figures(const char *title, const vt::ConfusionMatrix &m) {
  std::printf("  %-34s %s of %lld\n", title, percent(m.accuracy()).c_str(), static_cast<long long>(m.total()));
  std::printf("    %-16s %8s %9s %7s   predicted as: n ls lr lsp lsw lrp lrw\n", "class", "recall", "precision",
              "cases");
  for (size_t c = 0; c < vt::kClasses; ++c) {
    std::printf("    %-16s %8s %9s %7lld  ", vt::class_keys()[c], percent(m.recall(c)).c_str(),
                percent(m.precision(c)).c_str(), static_cast<long long>(m.row_total(c)));
    for (size_t p = 0; p < vt::kClasses; ++p) std::printf(" %lld", static_cast<long long>(m.n[c][p]));
    std::printf("\n");
  }
}

// The class a phase label names (the last component of the region path), or -1.
int32_t phase_class(const std::string &path) {
  const std::string last = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  if (last.rfind(kPhasePrefix, 0) != 0) return -1;
  for (int32_t c = 0; c < vt::kClasses; ++c)
    if (last.substr(std::string(kPhasePrefix).size()) == vt::class_keys()[static_cast<size_t>(c)]) return c;
  return -1;
}

// Learns the model from a collected training store (in this process, MPI initialised).
pipeline::TrainedClassifier fit(const std::string &trace, const TrainOptions &o) {
  io::TraceStore store(trace, MPI_COMM_SELF);
  const config::Values cfg =
      pipeline::load_pipeline("", [](const std::string &) { return std::optional<std::string>{}; });
  pipeline::Progress progress(false);
  pipeline::Context ctx(MPI_COMM_SELF, store, cfg, progress);
  const auto model = pipeline::build_replay_model(ctx, kernels::LogGPS{});
  const auto messages = pipeline::match_messages(ctx, model);
  std::vector<int32_t> label_of_region;
  for (const auto &r : store.regions()) label_of_region.push_back(phase_class(r.path));
  auto label = [&](const pipeline::MatchedMessage &m) {
    const int32_t a = m.recv_region >= 0 && static_cast<size_t>(m.recv_region) < label_of_region.size()
                          ? label_of_region[static_cast<size_t>(m.recv_region)]
                          : -1;
    const int32_t b = m.send_region >= 0 && static_cast<size_t>(m.send_region) < label_of_region.size()
                          ? label_of_region[static_cast<size_t>(m.send_region)]
                          : -1;
    return a == b ? a : -1;
  };
  pipeline::TrainedClassifier out;
  std::vector<double> small_normal_s;  // receive durations (one clock) of normal transfers up to 256 B
  for (const auto &m : messages)
    if (label(m) == vt::kNormal) {
      const auto raw = vt::raw_features(m.timing);
      out.normalizer.add_normal(raw);
      if (raw[vt::kMsgSize] <= 256) small_normal_s.push_back(raw[vt::kRecvDur] * 1e-9);
    }
  warn_if_cores_were_busy("train", "normal receive", small_normal_s);
  out.normalizer.finish();
  if (out.normalizer.empty())
    throw std::runtime_error(trace + ": no labelled normal transfers; did the microbenchmark run (vetter.* phases)?");
  kernels::c45::Dataset d = vt::empty_dataset();
  out.cases_per_class.assign(vt::kClasses, 0);
  for (const auto &m : messages) {
    const int32_t c = label(m);
    if (c < 0) continue;
    const auto f = out.normalizer.normalise(vt::raw_features(m.timing));
    d.x.insert(d.x.end(), f.begin(), f.end());
    d.y.push_back(c);
    ++out.cases_per_class[static_cast<size_t>(c)];
  }
  out.tree = kernels::c45::train(d);
  out.platform = pipeline::platform_of(store.run());
  out.trained_at = store.run().start_time;
  for (const auto &a : o.launch) out.launcher += (out.launcher.empty() ? "" : " ") + a;
  const auto resub = vt::evaluate(out.tree, d);
  const auto cv = vt::cross_validate(d, o.folds);
  // The paper's eight features alone, for comparison.
  kernels::c45::Dataset paper = vt::empty_dataset(vt::kPaperFeatures);
  for (size_t c = 0; c < d.cases(); ++c) {
    paper.x.insert(paper.x.end(), d.x.begin() + static_cast<long>(c * vt::kFeatures),
                   d.x.begin() + static_cast<long>(c * vt::kFeatures + vt::kPaperFeatures));
    paper.y.push_back(d.y[c]);
  }
  const auto paper_cv = vt::cross_validate(paper, o.folds);
  out.training_accuracy = resub.accuracy();
  out.cross_validation_accuracy = cv.accuracy();
  std::printf("perfsift: %lld labelled transfers (%lld matched); tree of %d leaves, depth %d\n",
              static_cast<long long>(d.cases()), static_cast<long long>(messages.size()), out.tree.leaves(),
              out.tree.depth());
  print_figures("training data (resubstitution)", resub);
  const std::string cv_title = std::to_string(o.folds) + "-fold cross-validation";
  print_figures(cv_title.c_str(), cv);
  print_figures((cv_title + ", paper's 8 features").c_str(), paper_cv);
  return out;
}

}  // namespace

int run_train(const TrainOptions &o) {
  if (o.launch.empty())
    throw std::runtime_error("train: give the launcher after --, e.g. -- " PERFSIFT_LAUNCHER " -n 2");
  const std::string out = fs::absolute(o.output).string();
  const std::string trace = o.trace.empty() ? out + ".training-trace.h5" : fs::absolute(o.trace).string();
  std::vector<std::string> argv = o.launch;
  argv.push_back(fs::read_symlink("/proc/self/exe").string());
  for (const std::string &a : std::vector<std::string>{
           "train-worker", "--max-elems", std::to_string(o.max_elems), "--iterations", std::to_string(o.iterations),
           "--min-delay-us", std::to_string(o.min_delay_us), "--delay-variance-us", std::to_string(o.delay_variance_us),
           "--seed", std::to_string(o.seed)})
    argv.push_back(a);
  CollectOptions co;
  co.output = trace;
  co.launch = argv;
  const int rc = run_collect(co);
  auto discard = [&] {
    if (!o.trace.empty()) return;
    std::error_code ec;
    fs::remove(trace, ec);
    fs::remove_all(trace + ".spill", ec);
  };
  if (rc != 0 || !fs::exists(trace)) {
    std::fprintf(stderr,
                 "perfsift: train: the microbenchmark run failed (exit code %d); it needs at least two ranks, e.g. "
                 "-- " PERFSIFT_LAUNCHER " -n 2\n",
                 rc);
    discard();
    return rc ? rc : 1;
  }
  ensure_mpi();
  pipeline::TrainedClassifier m;
  try {
    m = fit(trace, o);
  } catch (...) {
    discard();
    throw;
  }
  discard();
  pipeline::save_classifier(out, m);
  pipeline::load_classifier(out);  // proves the file reads back
  std::printf("perfsift: wrote %s (platform: %s on %s); give it to the classify stage as classify.model\n", out.c_str(),
              m.platform.mpi_library.c_str(), m.platform.host_pattern.c_str());
  return 0;
}

int run_train_worker(const TrainOptions &o) {
  int me = 0, np = 1;
  if (!start_pair_worker("train", me, np)) return 2;
  const bool paired = me < np - np % 2;
  const bool sender = me % 2 == 0;
  const int peer = sender ? me + 1 : me - 1;
  std::vector<int> buf(static_cast<size_t>(o.max_elems), me);
  srand48(o.seed + me);
  for (int32_t cls = 0; cls < vt::kClasses; ++cls) {
    const std::string label = std::string(kPhasePrefix) + vt::class_keys()[static_cast<size_t>(cls)];
    MPI_Pcontrol(1, label.c_str());
    // Normal transfers define the baselines of all four pairings: twice the iterations.
    const int iterations = cls == vt::kNormal ? 2 * o.iterations : o.iterations;
    for (int64_t elems = 1; elems <= o.max_elems; elems *= 2)
      for (int i = 0; i < iterations; ++i) {
        const double delay_s = (o.min_delay_us + o.delay_variance_us * drand48()) * 1e-6;
        MPI_Barrier(MPI_COMM_WORLD);
        if (paired) transfer(cls, sender, peer, i, buf, static_cast<int>(elems), delay_s);
      }
    MPI_Pcontrol(-1, label.c_str());
  }
  MPI_Finalize();
  return 0;
}

}  // namespace perfsift::cli
