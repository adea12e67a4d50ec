#include "kernels/pop_efficiency.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace perfsift::kernels {

namespace {

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g ms", s * 1e3);
  return b;
}

}  // namespace

PopEfficiency pop_efficiency(const PopInputs &in) {
  const double nan = std::nan("");
  PopEfficiency e{nan, nan, nan, nan, nan, {}};
  if (in.ranks <= 0 || !(in.runtime_s > 0) || !(in.useful_max_s >= 0) || !(in.useful_sum_s >= 0)) return e;
  const double mean = in.useful_sum_s / static_cast<double>(in.ranks);
  const double T = in.runtime_s, umax = in.useful_max_s;
  e.load_balance = umax > 0 ? std::min(1.0, mean / umax) : 1.0;
  e.communication = umax / T;
  if (e.communication > 1) {
    // A rank computing longer than the program window: its computation began before
    // MPI_Init or ended after MPI_Finalize's entry.
    e.note = "the busiest rank computes " + ms(umax) + ", longer than the program's " + ms(T) +
             " (computation before MPI_Init or after MPI_Finalize): communication efficiency held at 1";
    e.communication = 1;
  }
  e.parallel = e.load_balance * e.communication;
  const double ideal = in.ideal_runtime_s, base = in.baseline_runtime_s > 0 ? in.baseline_runtime_s : T;
  if (!(ideal > 0)) return e;
  e.transfer = ideal / base;
  e.serialisation = e.transfer > 0 ? e.communication / e.transfer : std::nan("");
  if (e.transfer > 1) {
    e.note += std::string(e.note.empty() ? "" : "; ") + "the ideal-network replay takes " + ms(ideal) +
              ", longer than the replay as measured, " + ms(base) +
              " (a replay miss): transfer held at 1, serialisation set to the communication efficiency";
    e.transfer = 1;
    e.serialisation = e.communication;
  } else if (e.serialisation > 1) {
    e.note += std::string(e.note.empty() ? "" : "; ") + "the ideal network saves more (" + ms(base - ideal) +
              " of the replayed " + ms(base) + ") than all the time outside the busiest rank's computation (" +
              ms(T - umax) + " of " + ms(T) +
              "; a replay miss): serialisation held at 1, transfer set to the communication efficiency";
    e.serialisation = 1;
    e.transfer = e.communication;
  }
  return e;
}

}  // namespace perfsift::kernels
