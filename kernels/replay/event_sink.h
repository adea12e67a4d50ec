// What a replay reports per event as it goes, besides recording its timings.
#pragma once

#include <cstdint>
#include <functional>

#include "kernels/replay/columns.h"

namespace perfsift::kernels::replay {

// Each replayed event of an owned rank: its slot, its index, its timing. For sums over
// events (the waiting per call site) without recording every timing (12.5 B per event).
using EventSink = std::function<void(int32_t slot, int64_t event, const EventTiming &)>;
// Which replayed events a sink sees: every one, or those that waited (exit != nowait_exit):
// a sum of waiting skips the call for the others, most of a run's events.
enum class SinkEvents : uint8_t { All, Waited };
// A sink with the events it sees: what an engine calls for each replayed event.
struct SinkOf {
  EventSink sink;
  SinkEvents which = SinkEvents::All;
  void see(int32_t slot, int64_t event, const EventTiming &t) const {
    if (sink && (which == SinkEvents::All || t.exit != t.nowait_exit)) sink(slot, event, t);
  }
};

}  // namespace perfsift::kernels::replay
