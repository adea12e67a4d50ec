// The POP Centre of Excellence's efficiencies of a parallel run (Cube's cube_pop_metrics,
// the POP methodology): from each rank's useful time u_r (computation: time outside MPI in
// the program), the program's run time T and its time on an ideal network T_ideal,
//   load balance     LB    = mean(u) / max(u)
//   communication    CommE = max(u) / T          = SerE x TE
//   transfer         TE    = T_ideal / T
//   serialisation    SerE  = max(u) / T_ideal
//   parallel         PE    = mean(u) / T          = LB x CommE
// POP takes T_ideal from a Dimemas replay. Ours comes from the LogGPS replay, whose
// baseline (the run replayed as measured, T_base) misses the measured T by its error; the
// ideal network is taken relative to that baseline, T_ideal x T / T_base, so that the
// replay's own error does not count as transfer: TE = T_ideal / T_base, SerE = CommE / TE
// (T_base = T when not given).
// Each lies in [0, 1] when the inputs are consistent. An ideal network slower than the
// baseline, or one that saves more than all the time outside the busiest rank's
// computation, is a replay miss: the factor is held at 1, the other takes the whole of
// CommE (the identities still hold), and `note` says so.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace perfsift::kernels {

struct PopInputs {
  double useful_sum_s = 0;                                               // sum over ranks of u_r
  double useful_max_s = 0;                                               // max over ranks of u_r
  int64_t ranks = 0;                                                     // ranks with data
  double runtime_s = 0;                                                  // T
  double ideal_runtime_s = std::numeric_limits<double>::quiet_NaN();     // T_ideal; NaN: not replayed
  double baseline_runtime_s = std::numeric_limits<double>::quiet_NaN();  // T_base; NaN: taken as T
};

struct PopEfficiency {
  double load_balance, serialisation, transfer, communication, parallel;  // NaN: not computable
  std::string note;  // empty unless a factor was held at its bound (why, with the figures)
};

PopEfficiency pop_efficiency(const PopInputs &in);

}  // namespace perfsift::kernels
