// Serial replays: one engine owning every rank.
#include "kernels/replay/serial.h"

#include <algorithm>
#include <limits>

#include "kernels/replay/engine.h"

namespace perfsift::kernels::replay {

Snapshot replay_snapshot(const std::vector<RankProgram> &programs, const Scenario &scenario) {
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  Engine engine(programs, scenario, nranks, true);
  while (true) {
    engine.advance();
    if (engine.finished()) break;
    engine.release_stuck();
  }
  return engine.take_snapshot();
}

SerialResult replay_serial(const std::vector<RankProgram> &programs, const Scenario &scenario, bool record_timings) {
  int32_t nranks = 0;
  for (const auto &p : programs) nranks = std::max(nranks, p.rank + 1);
  Engine engine(programs, scenario, nranks, record_timings);
  while (true) {
    engine.advance();
    if (engine.finished()) break;
    engine.release_stuck();
  }
  SerialResult r;
  r.end_times = engine.end_times();
  for (int64_t t : r.end_times) r.makespan = std::max(r.makespan, t);
  if (engine.converged()) r.makespan = engine.converged_makespan();
  if (engine.shifted()) r.makespan = engine.shifted_makespan();
  r.shifted = engine.shifted();
  if (engine.aborted()) r.makespan = std::numeric_limits<int64_t>::max();
  if (record_timings) r.timings = engine.take_timings();
  r.released = engine.released();
  if (engine.conflict()) {
    // A rested member's assumed arrival came otherwise: again, every member replayed.
    Scenario careful = scenario;
    careful.assume_resting_arrivals = false;
    r = replay_serial(programs, careful, record_timings);
    r.repeated = true;
  }
  return r;
}

}  // namespace perfsift::kernels::replay
