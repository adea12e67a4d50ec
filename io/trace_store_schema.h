// The trace store's on-disk records: the compound rows of /events, /requests,
// /completions, /steps, /clocks and /program_os (docs/trace-store.md), with the field tables that give
// their HDF5 types. Shared by the store's writer and reader; internal to io/.
#pragma once

#include <cstdint>
#include <cstring>

#include "io/hdf5_util.h"
#include "io/trace_model.h"

namespace perfsift::io::trace_schema {

using h5::compound_type;
using h5::Field;
using h5::fields_fit;
using h5::Handle;

struct DiskEvent {
  int32_t rank;
  uint16_t op, flags;
  int64_t t_enter, t_exit;
  int32_t peer, tag, comm, region, step, callsite;
  int64_t bytes, bytes_recv, request;
};

struct DiskRequest {
  int32_t rank;
  int32_t kind;
  int64_t id, event;
  int32_t peer, tag, comm;
  int64_t bytes;
};

struct DiskCompletion {
  int32_t rank;
  int32_t cancelled;
  int64_t event, request;
  int32_t source, tag;
  int64_t bytes;
};

struct DiskStep {
  int32_t rank, region, step;
  int64_t t_begin, t_end;
};

struct DiskClock {
  int32_t rank;
  int64_t offset_init_ns, offset_fin_ns, local_init_ns, local_fin_ns, error_init_ns, error_fin_ns;
};

struct DiskProgramOs {
  int32_t rank;
  double thread_cpu_s, run_delay_s, ctx_switches_involuntary, ctx_switches_voluntary;
};

// One field table per record: the member names, order and types of its compound
// type in the file (docs/trace-store.md), for writing and reading alike.
template <class Record>
struct Fields;  // specialised for each on-disk record below

// Inside Fields<R>: the member of R of that name, with its offset and C++ type.
#define PS_FIELD(member) PERFSIFT_H5_FIELD(R, member)

template <>
struct Fields<DiskEvent> {
  using R = DiskEvent;
  static constexpr Field list[] = {
      PS_FIELD(rank),     PS_FIELD(op),    PS_FIELD(flags),      PS_FIELD(t_enter), PS_FIELD(t_exit),
      PS_FIELD(peer),     PS_FIELD(tag),   PS_FIELD(comm),       PS_FIELD(region),  PS_FIELD(step),
      PS_FIELD(callsite), PS_FIELD(bytes), PS_FIELD(bytes_recv), PS_FIELD(request),
  };
};

template <>
struct Fields<DiskRequest> {
  using R = DiskRequest;
  static constexpr Field list[] = {
      PS_FIELD(rank), PS_FIELD(kind), PS_FIELD(id),   PS_FIELD(event),
      PS_FIELD(peer), PS_FIELD(tag),  PS_FIELD(comm), PS_FIELD(bytes),
  };
};

template <>
struct Fields<DiskCompletion> {
  using R = DiskCompletion;
  static constexpr Field list[] = {
      PS_FIELD(rank),   PS_FIELD(cancelled), PS_FIELD(event), PS_FIELD(request),
      PS_FIELD(source), PS_FIELD(tag),       PS_FIELD(bytes),
  };
};

template <>
struct Fields<DiskStep> {
  using R = DiskStep;
  static constexpr Field list[] = {
      PS_FIELD(rank), PS_FIELD(region), PS_FIELD(step), PS_FIELD(t_begin), PS_FIELD(t_end),
  };
};

template <>
struct Fields<DiskClock> {
  using R = DiskClock;
  static constexpr Field list[] = {
      PS_FIELD(rank),         PS_FIELD(offset_init_ns), PS_FIELD(offset_fin_ns), PS_FIELD(local_init_ns),
      PS_FIELD(local_fin_ns), PS_FIELD(error_init_ns),  PS_FIELD(error_fin_ns),
  };
};

template <>
struct Fields<DiskProgramOs> {
  using R = DiskProgramOs;
  static constexpr Field list[] = {
      PS_FIELD(rank),
      PS_FIELD(thread_cpu_s),
      PS_FIELD(run_delay_s),
      PS_FIELD(ctx_switches_involuntary),
      PS_FIELD(ctx_switches_voluntary),
  };
};

#undef PS_FIELD

static_assert(fields_fit<DiskEvent>(Fields<DiskEvent>::list) && sizeof(DiskEvent) == 72);
static_assert(fields_fit<DiskRequest>(Fields<DiskRequest>::list) && sizeof(DiskRequest) == 48);
static_assert(fields_fit<DiskCompletion>(Fields<DiskCompletion>::list) && sizeof(DiskCompletion) == 40);
static_assert(fields_fit<DiskStep>(Fields<DiskStep>::list) && sizeof(DiskStep) == 32);
static_assert(fields_fit<DiskClock>(Fields<DiskClock>::list) && sizeof(DiskClock) == 56);
static_assert(fields_fit<DiskProgramOs>(Fields<DiskProgramOs>::list) && sizeof(DiskProgramOs) == 40);

// A record as it goes to the file: its fields, and zeros in its padding. The file holds
// whole records, padding included; without this, stale memory of the writer (names of
// other records) reached the file and two writes of the same run differed.
template <class Record>
Record without_padding(const Record &r) {
  Record clean;
  std::memset(static_cast<void *>(&clean), 0, sizeof clean);
  for (const auto &f : Fields<Record>::list)
    std::memcpy(reinterpret_cast<char *>(&clean) + f.offset, reinterpret_cast<const char *>(&r) + f.offset, f.size);
  return clean;
}

// The compound type of an on-disk record, from its field table.
template <class Record>
Handle record_type() {
  return compound_type<Record>(Fields<Record>::list);
}

// A row of /events as the analyses see it (its thread comes from /events_thread).
inline Event to_event(const DiskEvent &d) {
  Event e;
  e.t_enter = d.t_enter;
  e.t_exit = d.t_exit;
  e.bytes = d.bytes;
  e.bytes_recv = d.bytes_recv;
  e.request = d.request;
  e.site = static_cast<uint64_t>(static_cast<int64_t>(d.callsite));
  e.peer = d.peer;
  e.tag = d.tag;
  e.comm = d.comm;
  e.region = d.region;
  e.step = d.step;
  e.op = d.op;
  e.flags = d.flags;
  return e;
}

}  // namespace perfsift::io::trace_schema
