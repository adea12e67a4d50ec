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
#include "pipeline/replay/replay_model.h"

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

}  // namespace

bool warn_if_cores_were_busy(const char *command, const char *what, const std::vector<double> &seconds) {
  if (seconds.empty()) return false;
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  const auto slow = std::count_if(seconds.begin(), seconds.end(), [&](double t) { return t > 10 * fastest && t > fastest + 100e-6; });
  if (slow * 10 <= static_cast<long>(seconds.size())) return false;
  std::fprintf(stderr,
               "perfsift: %s: warning: %ld of %zu %ss took over 100 us more than the fastest (%.1f us): the ranks shared their "
               "cores with other work, so the figures measure the scheduler; run it on idle cores, one rank per core\n",
               command, static_cast<long>(slow), seconds.size(), what, fastest * 1e6);
  return true;
}

int run_calibrate(const CalibrateOptions &o) {
  if (o.launch.empty()) throw std::runtime_error("calibrate: give the launcher after --, e.g. -- mpirun -n 2");
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
    std::fprintf(stderr, "perfsift: calibrate: the measurement run failed (exit code %d); it needs two ranks, e.g. -- mpirun -n 2\n", rc);
    return rc ? rc : 1;
  }
  const kernels::LogGPS p = pipeline::read_loggps(out);  // proves the file reads back
  std::printf("perfsift: wrote %s: L %.0f ns, os %.0f ns + %.3g ns/B, or %.0f ns + %.3g ns/B, g %.0f ns, G %.3g ns/B, S %lld B, s %lld B\n",
              out.c_str(), p.L, p.os0, p.os1, p.or0, p.or1, p.g, p.G, static_cast<long long>(p.S), static_cast<long long>(p.s));
  return 0;
}

int run_calibrate_worker(const CalibrateOptions &o) {
  MPI_Init(nullptr, nullptr);
  int me = 0, np = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np < 2) {
    std::fprintf(stderr, "perfsift: calibrate needs two ranks (-- mpirun -n 2)\n");
    MPI_Finalize();
    return 2;
  }
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, me < 2 ? 0 : MPI_UNDEFINED, me, &pair);
  kernels::LogGPS p;
  if (me < 2) {
    const int reps = std::max(5, o.repetitions);
    const int peer = 1 - me;
    std::vector<char> buf(8 << 20), buf2(8 << 20);
    auto sync = [&] { MPI_Barrier(pair); };

    // S: a send that returns long before the delayed receive is posted is eager.
    const double delay = 0.005;
    int64_t S = 0;
    std::fill(buf.begin(), buf.end(), 1);  // first touch now, not inside a timed call
    std::fill(buf2.begin(), buf2.end(), 1);
    for (int64_t b = 64; b <= (int64_t{4} << 20); b *= 2) {
      std::vector<double> trials;
      for (int t = 0; t < 5; ++t) {
        sync();
        if (me == 0) {
          const double t0 = MPI_Wtime();
          MPI_Send(buf.data(), static_cast<int>(b), MPI_BYTE, peer, 1, pair);
          trials.push_back(MPI_Wtime() - t0);
        } else {
          sleep_s(delay);
          MPI_Recv(buf.data(), static_cast<int>(b), MPI_BYTE, peer, 1, pair, MPI_STATUS_IGNORE);
        }
      }
      double best = median(trials);  // a send blocked in most trials is synchronous
      MPI_Bcast(&best, 1, MPI_DOUBLE, 0, pair);
      if (me == 0 && std::getenv("PERFSIFT_CALIBRATE_VERBOSE")) std::fprintf(stderr, "S probe %lld B: send %.1f us\n", static_cast<long long>(b), best * 1e6);
      if (best > delay / 2) break;
      S = b;
    }
    p.S = std::max<int64_t>(S, 1);

    std::vector<double> eager_sizes, large_sizes;
    for (int64_t b = 8; b <= p.S; b *= 2) eager_sizes.push_back(static_cast<double>(b));
    for (int64_t b = std::max<int64_t>(p.S * 2, 65536); b <= (int64_t{8} << 20); b *= 2) large_sizes.push_back(static_cast<double>(b));

    // os(b) and or(b).
    std::vector<double> os, orr, one_way;
    for (double bd : eager_sizes) {
      const int b = static_cast<int>(bd);
      std::vector<double> ts, tr;
      for (int t = 0; t < reps; ++t) {
        MPI_Request rq = MPI_REQUEST_NULL;
        if (me == 1) MPI_Irecv(buf.data(), b, MPI_BYTE, peer, 2, pair, &rq);
        sync();
        if (me == 0) {
          const double t0 = MPI_Wtime();
          MPI_Send(buf.data(), b, MPI_BYTE, peer, 2, pair);
          ts.push_back(MPI_Wtime() - t0);
        } else {
          MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
        // Receive overhead: the message is already there when the receive starts.
        sync();
        if (me == 0) MPI_Send(buf.data(), b, MPI_BYTE, peer, 3, pair);
        else {
          // Spin, not sleep: a woken process pays cache and scheduler costs that are not o_r.
          for (const double until = MPI_Wtime() + 200e-6; MPI_Wtime() < until;) {
          }
          const double t0 = MPI_Wtime();
          MPI_Recv(buf.data(), b, MPI_BYTE, peer, 3, pair, MPI_STATUS_IGNORE);
          tr.push_back(MPI_Wtime() - t0);
        }
      }
      double ms = median(ts), mr = median(tr);
      MPI_Bcast(&ms, 1, MPI_DOUBLE, 0, pair);
      MPI_Bcast(&mr, 1, MPI_DOUBLE, 1, pair);
      os.push_back(ms * 1e9);
      orr.push_back(mr * 1e9);
    }
    // Ping-pong one-way time per size.
    std::vector<double> smallest_rt;  // the smallest message's round trips tell a busy machine
    auto pingpong = [&](int b) {
      std::vector<double> rt;
      sync();
      for (int t = 0; t < reps; ++t) {
        const double t0 = MPI_Wtime();
        if (me == 0) {
          MPI_Send(buf.data(), b, MPI_BYTE, peer, 4, pair);
          MPI_Recv(buf2.data(), b, MPI_BYTE, peer, 4, pair, MPI_STATUS_IGNORE);
          rt.push_back(MPI_Wtime() - t0);
        } else {
          MPI_Recv(buf2.data(), b, MPI_BYTE, peer, 4, pair, MPI_STATUS_IGNORE);
          MPI_Send(buf.data(), b, MPI_BYTE, peer, 4, pair);
        }
      }
      double m = median(rt) / 2;
      if (smallest_rt.empty()) smallest_rt = rt;
      MPI_Bcast(&m, 1, MPI_DOUBLE, 0, pair);
      return m * 1e9;
    };
    for (double b : eager_sizes) one_way.push_back(pingpong(static_cast<int>(b)));
    std::vector<double> large_one_way;
    for (double b : large_sizes) large_one_way.push_back(pingpong(static_cast<int>(b)));
    if (me == 0) warn_if_cores_were_busy("calibrate", "round trip", smallest_rt);

    const auto [os0, os1] = fit(eager_sizes, os);
    const auto [or0, or1] = fit(eager_sizes, orr);
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
    for (size_t i = 0; i < eager_sizes.size(); ++i) wire.push_back(one_way[i] - (p.os0 + p.os1 * eager_sizes[i]) - (p.or0 + p.or1 * eager_sizes[i]));
    const auto [L, G_eager] = fit(eager_sizes, wire);
    // The ping-pong's one-way time is what latency-bound codes feel. When the overheads
    // measured alone add up to more (a receive started cold pays a progress pass that
    // overlaps the flight in a real exchange), L is 0 and o_r gives up the excess.
    p.L = std::max(0.0, L);
    if (L < 0) p.or0 = std::max(0.0, p.or0 + L);
    // Long messages: per-byte slope of the one-way time, less the per-byte overheads.
    const auto [a_large, slope_large] = fit(large_sizes, large_one_way);
    (void)a_large;
    p.G = std::max(0.0, (large_sizes.size() >= 2 ? slope_large : G_eager) - p.os1 - p.or1);

    // g: the steady issue interval of a burst of small nonblocking sends.
    const int burst = 2000;
    std::vector<MPI_Request> rq(static_cast<size_t>(burst));
    std::vector<double> gaps;
    for (int t = 0; t < 5; ++t) {
      if (me == 1)
        for (int i = 0; i < burst; ++i) MPI_Irecv(buf.data() + static_cast<size_t>(i) * 8, 8, MPI_BYTE, peer, 5, pair, &rq[static_cast<size_t>(i)]);
      sync();
      const double t0 = MPI_Wtime();
      if (me == 0)
        for (int i = 0; i < burst; ++i) MPI_Isend(buf.data(), 8, MPI_BYTE, peer, 5, pair, &rq[static_cast<size_t>(i)]);
      const double t1 = MPI_Wtime();
      MPI_Waitall(burst, rq.data(), MPI_STATUSES_IGNORE);
      if (me == 0) gaps.push_back((t1 - t0) / burst * 1e9);
    }
    double g = median(gaps);
    MPI_Bcast(&g, 1, MPI_DOUBLE, 0, pair);
    p.g = std::max(0.0, g);

    // s: a clear change of slope of the one-way time across all sizes, else S.
    std::vector<double> xs = eager_sizes, ys = one_way;
    xs.insert(xs.end(), large_sizes.begin(), large_sizes.end());
    ys.insert(ys.end(), large_one_way.begin(), large_one_way.end());
    p.s = p.S;
    const double whole = sse(xs, ys, 0, xs.size());
    double best = whole;
    for (size_t k = 3; k + 3 <= xs.size(); ++k) {
      const double e = sse(xs, ys, 0, k) + sse(xs, ys, k, xs.size());
      if (e < best) {
        best = e;
        if (e < 0.5 * whole) p.s = static_cast<int64_t>(xs[k - 1]);
      }
    }
    MPI_Comm_free(&pair);
  }
  if (me == 0) {
    char host[256] = "?";
    gethostname(host, sizeof host);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string first_line;
    for (int i = 0; i < len && lib[i] != '\n' && lib[i] != '\0'; ++i)
      if (lib[i] >= ' ') first_line += lib[i];
    pipeline::write_loggps(o.output, p, std::string("measured on ") + host + " with " + first_line + ", " +
                                            std::to_string(o.repetitions) + " repetitions per size");
  }
  MPI_Finalize();
  return 0;
}

}  // namespace perfsift::cli
