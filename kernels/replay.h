// PerWiz's replay: a discrete-event simulation of the run's message DAG on LogGPS.
//
// Each application rank is a sequence of events (MPI calls) separated by computation.
// Computation and local calls keep their measured time; communication follows LogGPS
// (kernels/loggps.h), synchronous above S; collectives synchronise per their flow and
// cost rounds of small messages plus their bytes. A scenario (what-if question) changes
// computation gaps, message sizes, the network, or lets events skip waiting.
//
// The engine advances the ranks it owns as far as their dependencies allow. Dependencies
// on ranks another process owns arrive through `apply` and leave through `take_outbox`,
// so the same code replays serially (one engine owns every rank) or distributed (the
// pipeline exchanges outboxes between MPI processes in rounds). Results do not depend
// on the split: every time is a function of its inputs only, and stuck dependencies are
// released together at the global fixpoint.
//
// Cost: O(events + items) per replay; memory per event is stated by bench_replay.
//
// The parts, one concept each, under kernels/replay/:
//   program.h              a rank's program: events, items, messages, collective calls
//   program_builder.h      assembling programs event by event
//   completion_formulas.h  the LogGPS completion of a send, a receive, a collective call
//   columns.h              compressed per-event columns (bounds, recorded timings)
//   scenario.h             a what-if question as the engine applies it
//   event_sink.h           per-event reports while replaying
//   rounds.h               traffic between engines that split a replay, and their rounds
//   snapshot.h             a finished replay's state, to resume others from
//   engine.h               the engine
//   serial.h               a replay on one engine owning every rank
// engine_core.h is the engine's state, the kernel's own.
#pragma once

#include "kernels/replay/columns.h"
#include "kernels/replay/completion_formulas.h"
#include "kernels/replay/engine.h"
#include "kernels/replay/event_sink.h"
#include "kernels/replay/program.h"
#include "kernels/replay/program_builder.h"
#include "kernels/replay/rounds.h"
#include "kernels/replay/scenario.h"
#include "kernels/replay/serial.h"
#include "kernels/replay/snapshot.h"
