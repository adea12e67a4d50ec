// `perfsift calibrate`: LogGPS parameters of this machine, measured the way the LogGPS
// paper does it — with MPI itself, between two ranks placed by the user's launcher:
//   S       the largest size a send completes without a posted receive (eager), found by
//           delaying the receiver;
//   os(b)   time in MPI_Send of b bytes to a posted receive (linear fit over eager sizes;
//           below 4 KiB of eager range the per-byte part is not resolvable and goes to G);
//   or(b)   time in MPI_Recv of b bytes that have already arrived (linear fit);
//   L, G    from the ping-pong one-way time minus the overheads: intercept over eager
//           sizes (L; when negative, L = 0 and o_r shrinks so o_s + L + o_r is the
//           one-way time), slope over large sizes (G);
//   g       the issue interval of a long burst of small nonblocking sends;
//   s       where the per-byte cost changes slope (two-segment fit), else S.
// Medians of `--repetitions` trials; the worker writes a TOML file the whatif stage reads.
// The worker runs under the collector (its trace is discarded), so the overheads include
// what tracing adds to every call — as in the runs the replay reproduces.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "kernels/loggps.h"
#include "pipeline/cli/commands.h"
#include "pipeline/replay/loggps_file.h"

// The launcher of the MPI perfsift is built against (top CMakeLists.txt), for the messages.
#ifndef PERFSIFT_LAUNCHER
#define PERFSIFT_LAUNCHER "mpirun"
#endif

namespace perfsift::cli {

namespace fs = std::filesystem;

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Least squares y = a + b x.
std::pair<double, double> fit(const std::vector<double> &x, const std::vector<double> &y) {
  const double n = static_cast<double>(x.size());
  if (x.size() < 2) return {y.empty() ? 0 : y[0], 0};
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double d = n * sxx - sx * sx;
  const double b = d != 0 ? (n * sxy - sx * sy) / d : 0;
  return {(sy - b * sx) / n, b};
}

double sse(const std::vector<double> &x, const std::vector<double> &y, size_t from, size_t to) {
  std::vector<double> xs(x.begin() + static_cast<long>(from), x.begin() + static_cast<long>(to)),
      ys(y.begin() + static_cast<long>(from), y.begin() + static_cast<long>(to));
  const auto [a, b] = fit(xs, ys);
  double e = 0;
  for (size_t i = 0; i < xs.size(); ++i) e += (ys[i] - a - b * xs[i]) * (ys[i] - a - b * xs[i]);
  return e;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// The two measuring ranks: their communicator and buffers.
struct Pair {
  MPI_Comm comm;
  int me, peer, reps;
  std::vector<char> buf = std::vector<char>(8 << 20), buf2 = std::vector<char>(8 << 20);
  std::vector<double> smallest_rt{};  // the smallest message's round trips tell a busy machine

  void sync() const { MPI_Barrier(comm); }
};

// What the pair measured, per message size.
struct Timings {
  std::vector<double> eager_sizes, large_sizes;  // bytes
  std::vector<double> os, orr;                   // send and receive overheads per eager size, ns
  std::vector<double> one_way, large_one_way;    // ping-pong one-way times, ns
};

// S: a send that returns long before the delayed receive is posted is eager.
int64_t measure_eager_limit(Pair &pr) {
  const double delay = 0.005;
  int64_t S = 0;
  std::fill(pr.buf.begin(), pr.buf.end(), 1);  // first touch now, not inside a timed call
  std::fill(pr.buf2.begin(), pr.buf2.end(), 1);
  for (int64_t b = 64; b <= (int64_t{4} << 20); b *= 2) {
    std::vector<double> trials;
    for (int t = 0; t < 5; ++t) {
      pr.sync();
      if (pr.me == 0) {
        const double t0 = MPI_Wtime();
        MPI_Send(pr.buf.data(), static_cast<int>(b), MPI_BYTE, pr.peer, 1, pr.comm);
        trials.push_back(MPI_Wtime() - t0);
      } else {
        sleep_s(delay);
        MPI_Recv(pr.buf.data(), static_cast<int>(b), MPI_BYTE, pr.peer, 1, pr.comm, MPI_STATUS_IGNORE);
      }
    }
    double best = median(trials);  // a send blocked in most trials is synchronous
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, pr.comm);
    if (pr.me == 0 && std::getenv("PERFSIFT_CALIBRATE_VERBOSE"))
      std::fprintf(stderr, "S probe %lld B: send %.1f us\n", static_cast<long long>(b), best * 1e6);
    if (best > delay / 2) break;
    S = b;
  }
  return S;
}

// os(b) and or(b) of every eager size.
void measure_overheads(Pair &pr, Timings &tm) {
  for (double bd : tm.eager_sizes) {
    const int b = static_cast<int>(bd);
    std::vector<double> ts, tr;
    for (int t = 0; t < pr.reps; ++t) {
      MPI_Request rq = MPI_REQUEST_NULL;
      if (pr.me == 1) MPI_Irecv(pr.buf.data(), b, MPI_BYTE, pr.peer, 2, pr.comm, &rq);
      pr.sync();
      if (pr.me == 0) {
        const double t0 = MPI_Wtime();
        MPI_Send(pr.buf.data(), b, MPI_BYTE, pr.peer, 2, pr.comm);
        ts.push_back(MPI_Wtime() - t0);
      } else {
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
      }
      // Receive overhead: the message is already there when the receive starts.
      pr.sync();
      if (pr.me == 0)
        MPI_Send(pr.buf.data(), b, MPI_BYTE, pr.peer, 3, pr.comm);
      else {
        // Spin, not sleep: a woken process pays cache and scheduler costs that are not o_r.
        for (const double until = MPI_Wtime() + 200e-6; MPI_Wtime() < until;) {}
        const double t0 = MPI_Wtime();
        MPI_Recv(pr.buf.data(), b, MPI_BYTE, pr.peer, 3, pr.comm, MPI_STATUS_IGNORE);
        tr.push_back(MPI_Wtime() - t0);
      }
    }
    double ms = median(ts), mr = median(tr);
    MPI_Bcast(&ms, 1, MPI_DOUBLE, 0, pr.comm);
    MPI_Bcast(&mr, 1, MPI_DOUBLE, 1, pr.comm);
    tm.os.push_back(ms * 1e9);
    tm.orr.push_back(mr * 1e9);
  }
}

// Ping-pong one-way time of b bytes, ns.
double pingpong(Pair &pr, int b) {
  std::vector<double> rt;
  pr.sync();
  for (int t = 0; t < pr.reps; ++t) {
    const double t0 = MPI_Wtime();
    if (pr.me == 0) {
      MPI_Send(pr.buf.data(), b, MPI_BYTE, pr.peer, 4, pr.comm);
      MPI_Recv(pr.buf2.data(), b, MPI_BYTE, pr.peer, 4, pr.comm, MPI_STATUS_IGNORE);
      rt.push_back(MPI_Wtime() - t0);
    } else {
      MPI_Recv(pr.buf2.data(), b, MPI_BYTE, pr.peer, 4, pr.comm, MPI_STATUS_IGNORE);
      MPI_Send(pr.buf.data(), b, MPI_BYTE, pr.peer, 4, pr.comm);
    }
  }
  double m = median(rt) / 2;
  if (pr.smallest_rt.empty()) pr.smallest_rt = rt;
  MPI_Bcast(&m, 1, MPI_DOUBLE, 0, pr.comm);
  return m * 1e9;
}

// os, or, L and G from the overheads and one-way times (p.S set).
void fit_overheads_and_wire(kernels::LogGPS &p, const Timings &tm) {
  const auto &eager_sizes = tm.eager_sizes;
  const auto [os0, os1] = fit(eager_sizes, tm.os);
  const auto [or0, or1] = fit(eager_sizes, tm.orr);
  p.os0 = std::max(0.0, os0);
  p.or0 = std::max(0.0, or0);
  // Over an eager range below 4 KiB a per-byte overhead drowns in noise: all per-byte
  // cost is then G's (the long-message slope), and the overheads are constants.
  const bool resolvable = p.S >= 4096;
  p.os1 = resolvable ? std::max(0.0, os1) : 0.0;
  p.or1 = resolvable ? std::max(0.0, or1) : 0.0;
  if (!resolvable) {
    p.os0 = std::max(0.0, os0 + os1 * eager_sizes.back() / 2);  // the mean over the range
    p.or0 = std::max(0.0, or0 + or1 * eager_sizes.back() / 2);
  }
  std::vector<double> wire;
  for (size_t i = 0; i < eager_sizes.size(); ++i)
    wire.push_back(tm.one_way[i] - (p.os0 + p.os1 * eager_sizes[i]) - (p.or0 + p.or1 * eager_sizes[i]));
  const auto [L, G_eager] = fit(eager_sizes, wire);
  // The ping-pong's one-way time is what latency-bound codes feel. When the overheads
  // measured alone add up to more (a receive started cold pays a progress pass that
  // overlaps the flight in a real exchange), L is 0 and o_r gives up the excess.
  p.L = std::max(0.0, L);
  if (L < 0) p.or0 = std::max(0.0, p.or0 + L);
  // Long messages: per-byte slope of the one-way time, less the per-byte overheads.
  const auto [a_large, slope_large] = fit(tm.large_sizes, tm.large_one_way);
  (void)a_large;
  p.G = std::max(0.0, (tm.large_sizes.size() >= 2 ? slope_large : G_eager) - p.os1 - p.or1);
}

// g: the steady issue interval of a burst of small nonblocking sends, ns.
double measure_gap(Pair &pr) {
  const int burst = 2000;
  std::vector<MPI_Request> rq(static_cast<size_t>(burst));
  std::vector<double> gaps;
  for (int t = 0; t < 5; ++t) {
    if (pr.me == 1)
      for (int i = 0; i < burst; ++i)
        MPI_Irecv(pr.buf.data() + static_cast<size_t>(i) * 8, 8, MPI_BYTE, pr.peer, 5, pr.comm,
                  &rq[static_cast<size_t>(i)]);
    pr.sync();
    const double t0 = MPI_Wtime();
    if (pr.me == 0)
      for (int i = 0; i < burst; ++i)
        MPI_Isend(pr.buf.data(), 8, MPI_BYTE, pr.peer, 5, pr.comm, &rq[static_cast<size_t>(i)]);
    const double t1 = MPI_Wtime();
    MPI_Waitall(burst, rq.data(), MPI_STATUSES_IGNORE);
    if (pr.me == 0) gaps.push_back((t1 - t0) / burst * 1e9);
  }
  double g = median(gaps);
  MPI_Bcast(&g, 1, MPI_DOUBLE, 0, pr.comm);
  return g;
}

// s: a clear change of slope of the one-way time across all sizes, else S.
int64_t slope_change(const Timings &tm, int64_t S) {
  std::vector<double> xs = tm.eager_sizes, ys = tm.one_way;
  xs.insert(xs.end(), tm.large_sizes.begin(), tm.large_sizes.end());
  ys.insert(ys.end(), tm.large_one_way.begin(), tm.large_one_way.end());
  int64_t s = S;
  const double whole = sse(xs, ys, 0, xs.size());
  double best = whole;
  for (size_t k = 3; k + 3 <= xs.size(); ++k) {
    const double e = sse(xs, ys, 0, k) + sse(xs, ys, k, xs.size());
    if (e < best) {
      best = e;
      if (e < 0.5 * whole) s = static_cast<int64_t>(xs[k - 1]);
    }
  }
  return s;
}

// Every parameter, measured by the pair (collective over it).
kernels::LogGPS measure_loggps(Pair &pr) {
  kernels::LogGPS p;
  p.S = std::max<int64_t>(measure_eager_limit(pr), 1);
  Timings tm;
  for (int64_t b = 8; b <= p.S; b *= 2) tm.eager_sizes.push_back(static_cast<double>(b));
  for (int64_t b = std::max<int64_t>(p.S * 2, 65536); b <= (int64_t{8} << 20); b *= 2)
    tm.large_sizes.push_back(static_cast<double>(b));
  measure_overheads(pr, tm);
  for (double b : tm.eager_sizes) tm.one_way.push_back(pingpong(pr, static_cast<int>(b)));
  for (double b : tm.large_sizes) tm.large_one_way.push_back(pingpong(pr, static_cast<int>(b)));
  if (pr.me == 0) warn_if_cores_were_busy("calibrate", "round trip", pr.smallest_rt);
  fit_overheads_and_wire(p, tm);
  p.g = std::max(0.0, measure_gap(pr));
  p.s = slope_change(tm, p.S);
  return p;
}

// The parameter file, with where and how it was measured.
void write_calibration(const CalibrateOptions &o, const kernels::LogGPS &p) {
  char host[256] = "?";
  gethostname(host, sizeof host);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string first_line;
  for (int i = 0; i < len && lib[i] != '\n' && lib[i] != '\0'; ++i)
    if (lib[i] >= ' ') first_line += lib[i];
  pipeline::write_loggps(o.output, p,
                         std::string("measured on ") + host + " with " + first_line + ", " +
                             std::to_string(o.repetitions) + " repetitions per size");
}

}  // namespace

bool warn_if_cores_were_busy(const char *command, const char *what, const std::vector<double> &seconds) {
  if (seconds.empty()) return false;
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  const auto slow =
      std::count_if(seconds.begin(), seconds.end(), [&](double t) { return t > 10 * fastest && t > fastest + 100e-6; });
  if (slow * 10 <= static_cast<long>(seconds.size())) return false;
  std::fprintf(
      stderr,
      "perfsift: %s: warning: %ld of %zu %ss took over 100 us more than the fastest (%.1f us): the ranks shared their "
      "cores with other work, so the figures measure the scheduler; run it on idle cores, one rank per core\n",
      command, static_cast<long>(slow), seconds.size(), what, fastest * 1e6);
  return true;
}

int run_calibrate(const CalibrateOptions &o) {
  if (o.launch.empty())
    throw std::runtime_error("calibrate: give the launcher after --, e.g. -- " PERFSIFT_LAUNCHER " -n 2");
  const std::string out = fs::absolute(o.output).string();
  std::vector<std::string> argv = o.launch;
  argv.push_back(fs::read_symlink("/proc/self/exe").string());
  for (const char *a : {"calibrate-worker", "-o"}) argv.emplace_back(a);
  argv.push_back(out);
  argv.push_back("--repetitions");
  argv.push_back(std::to_string(o.repetitions));
  // Measured under the collector, like the runs the replay reproduces: a traced call
  // costs what the trace recorded, tracing included.
  CollectOptions co;
  co.output = out + ".calibration-trace.h5";
  co.launch = argv;
  const int rc = run_collect(co);
  std::error_code ec;
  fs::remove(co.output, ec);
  fs::remove_all(co.output + ".spill", ec);
  if (rc != 0 || !fs::exists(out)) {
    std::fprintf(
        stderr,
        "perfsift: calibrate: the measurement run failed (exit code %d); it needs two ranks, e.g. -- " PERFSIFT_LAUNCHER
        " -n 2\n",
        rc);
    return rc ? rc : 1;
  }
  const kernels::LogGPS p = pipeline::read_loggps(out);  // proves the file reads back
  std::printf(
      "perfsift: wrote %s: L %.0f ns, os %.0f ns + %.3g ns/B, or %.0f ns + %.3g ns/B, g %.0f ns, G %.3g ns/B, S %lld "
      "B, s %lld B\n",
      out.c_str(), p.L, p.os0, p.os1, p.or0, p.or1, p.g, p.G, static_cast<long long>(p.S), static_cast<long long>(p.s));
  return 0;
}

int run_calibrate_worker(const CalibrateOptions &o) {
  int me = 0, np = 1;
  if (!start_pair_worker("calibrate", me, np)) return 2;
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, me < 2 ? 0 : MPI_UNDEFINED, me, &pair);
  kernels::LogGPS p;
  if (me < 2) {
    Pair pr{pair, me, 1 - me, std::max(5, o.repetitions)};
    p = measure_loggps(pr);
    MPI_Comm_free(&pair);
  }
  if (me == 0) write_calibration(o, p);
  MPI_Finalize();
  return 0;
}

}  // namespace perfsift::cli
