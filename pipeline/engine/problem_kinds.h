// The catalogue of problem kinds: what each stage can report, one definition each (its
// identifier in the results store, its name in prose, what it means, which stage emits
// it), like Scalasca's pattern catalogue. Code names a kind by ProblemKind; the
// identifier and the name are looked up here, never respelled.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace perfsift::pipeline {

enum class ProblemKind : uint8_t {
  // profile
  LoadImbalance,
  MpiTime,
  // waitstates: Scalasca's wait-state patterns, in kernels::waitstates order
  LateSender,
  LateReceiver,
  WaitAtBarrier,
  WaitAtNxn,
  LateBroadcast,
  EarlyReduce,
  // classify: Vetter's transfer classes, in kernels::vetter order (normal is no problem)
  LateSend,
  LateRecv,
  LateSendPost,
  LateSendWait,
  LateRecvPost,
  LateRecvWait,
  // dissimilarity, disparity
  Dissimilarity,
  Disparity,
  // diagnosis: Hercule's parallel models
  MasterWorker,
  Wavefront,
  DivideAndConquer,
};

struct ProblemKindInfo {
  ProblemKind kind;
  std::string_view id;     // in the results store and the JSON report, e.g. "late-sender"
  std::string_view name;   // in prose, e.g. "late sender"
  std::string_view stage;  // the stage that emits it
  std::string_view description;
};

// Every kind, in ProblemKind order.
std::span<const ProblemKindInfo> problem_kinds();
const ProblemKindInfo &kind_info(ProblemKind kind);
inline std::string_view kind_id(ProblemKind kind) { return kind_info(kind).id; }
std::optional<ProblemKind> find_problem_kind(std::string_view id);

// The kind of a wait-state pattern (kernels/wait_states.h) and of a transfer class
// (kernels/message_class.h, 1 .. kClasses - 1).
ProblemKind wait_state_kind(int32_t pattern);
ProblemKind transfer_class_kind(int32_t cls);

// A recognised parallel model's cause (diagnosis), and point-to-point waiting (the
// symptom a model's cause shows as).
bool is_model_kind(ProblemKind kind);
bool is_point_to_point_wait(ProblemKind kind);

}  // namespace perfsift::pipeline
