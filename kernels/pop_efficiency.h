// The POP Centre of Excellence's efficiencies of a parallel run (Cube's cube_pop_metrics,
// the POP methodology): from each rank's useful time u_r (computation: time outside MPI in
// the program), the program's run time T and its time on an ideal network T_ideal,
//   load balance     LB   = mean(u) / max(u)
//   communication    CommE = max(u) / T          = SerE x TE
//   serialisation    SerE = max(u) / T_ideal
//   transfer         TE   = T_ideal / T
//   parallel         PE   = mean(u) / T          = LB x CommE
// Each lies in [0, 1] when the inputs are consistent. A replay that ends before the busiest
// rank's computation (T_ideal < max u) or after the measured run (T_ideal > T) is a replay
// miss: the factor is kept at 1 and the other takes the whole of CommE, so that the
// identities still hold, and `note` says so.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace perfsift::kernels {

struct PopInputs {
  double useful_sum_s = 0;   // sum over ranks of u_r
  double useful_max_s = 0;   // max over ranks of u_r
  int64_t ranks = 0;         // ranks with data
  double runtime_s = 0;      // T
  double ideal_runtime_s = std::numeric_limits<double>::quiet_NaN();  // T_ideal; NaN: not replayed
};

struct PopEfficiency {
  double load_balance, serialisation, transfer, communication, parallel;  // NaN: not computable
  std::string note;  // empty unless a factor was held at its bound (why, with the figures)
};

PopEfficiency pop_efficiency(const PopInputs &in);

}  // namespace perfsift::kernels
