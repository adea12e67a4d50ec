// The catalogue of problem kinds (problem_kinds.h).
#include "pipeline/engine/problem_kinds.h"

#include <array>
#include <stdexcept>
#include <string>

namespace perfsift::pipeline {

namespace {

using K = ProblemKind;

// A declarative table: one row per kind, in ProblemKind order (checked below).
constexpr std::array<ProblemKindInfo, 19> kKinds = {{
    {K::LoadImbalance, "load-imbalance", "load imbalance", "profile",
     "some ranks compute longer than the others in a region; the others wait for them"},
    {K::MpiTime, "mpi-time", "time in MPI", "profile",
     "even the rank least in MPI spends a large share of the run communicating"},
    {K::LateSender, "late-sender", "late sender", "waitstates",
     "a receive waits for a send that starts later (Scalasca's Late Sender)"},
    {K::LateReceiver, "late-receiver", "late receiver", "waitstates",
     "a synchronous send waits for a receive that starts later (Scalasca's Late Receiver)"},
    {K::WaitAtBarrier, "wait-at-barrier", "wait at barrier", "waitstates",
     "ranks wait in a barrier for the last one to enter (Scalasca's Wait at Barrier)"},
    {K::WaitAtNxn, "wait-at-nxn", "wait at nxn", "waitstates",
     "ranks wait in an all-to-all collective for the last one to enter (Scalasca's Wait at N x N)"},
    {K::LateBroadcast, "late-broadcast", "late broadcast", "waitstates",
     "ranks wait in a one-to-all collective for its root to enter (Scalasca's Late Broadcast)"},
    {K::EarlyReduce, "early-reduce", "early reduce", "waitstates",
     "the root of an all-to-one collective waits for the others to enter (Scalasca's Early Reduce)"},
    {K::LateSend, "late-send", "late send", "classify", "the receive was posted long before the send (Vetter)"},
    {K::LateRecv, "late-recv", "late recv", "classify", "the send was posted long before the receive (Vetter)"},
    {K::LateSendPost, "late-send-post", "late send post", "classify",
     "a nonblocking send was posted late for a waiting receive (Vetter)"},
    {K::LateSendWait, "late-send-wait", "late send wait", "classify", "a nonblocking send was completed late (Vetter)"},
    {K::LateRecvPost, "late-recv-post", "late recv post", "classify",
     "a nonblocking receive was posted late for a waiting send (Vetter)"},
    {K::LateRecvWait, "late-recv-wait", "late recv wait", "classify",
     "a nonblocking receive was completed late (Vetter)"},
    {K::Dissimilarity, "dissimilarity", "rank dissimilarity", "dissimilarity",
     "ranks fall into clusters by time per region; one region decides the split (AutoAnalyzer)"},
    {K::Disparity, "disparity", "region disparity", "disparity",
     "a region takes a large share of the run at a poor rate of work (AutoAnalyzer)"},
    {K::MasterWorker, "master-worker", "master worker", "diagnosis",
     "a cause of waiting in a master-worker program (Hercule's model)"},
    {K::Wavefront, "wavefront", "wavefront", "diagnosis",
     "a cause of waiting in a wavefront pipeline (Hercule's model)"},
    {K::DivideAndConquer, "divide-and-conquer", "divide and conquer", "diagnosis",
     "a cause of waiting in a divide-and-conquer recursion (Hercule's model)"},
}};

constexpr bool in_order() {
  for (size_t k = 0; k < kKinds.size(); ++k)
    if (static_cast<size_t>(kKinds[k].kind) != k) return false;
  return true;
}
static_assert(in_order(), "kKinds lists the kinds in ProblemKind order");

}  // namespace

std::span<const ProblemKindInfo> problem_kinds() { return kKinds; }

const ProblemKindInfo &kind_info(ProblemKind kind) { return kKinds[static_cast<size_t>(kind)]; }

std::optional<ProblemKind> find_problem_kind(std::string_view id) {
  for (const auto &k : kKinds)
    if (k.id == id) return k.kind;
  return std::nullopt;
}

ProblemKind wait_state_kind(int32_t pattern) {
  if (pattern < 0 || pattern > static_cast<int32_t>(K::EarlyReduce) - static_cast<int32_t>(K::LateSender))
    throw std::out_of_range("no wait-state pattern " + std::to_string(pattern));
  return static_cast<ProblemKind>(static_cast<int32_t>(K::LateSender) + pattern);
}

ProblemKind transfer_class_kind(int32_t cls) {
  if (cls < 1 || cls > static_cast<int32_t>(K::LateRecvWait) - static_cast<int32_t>(K::LateSend) + 1)
    throw std::out_of_range("no transfer class " + std::to_string(cls));
  return static_cast<ProblemKind>(static_cast<int32_t>(K::LateSend) + cls - 1);
}

bool is_model_kind(ProblemKind kind) { return kind_info(kind).stage == "diagnosis"; }

bool is_point_to_point_wait(ProblemKind kind) { return kind == K::LateSender || kind == K::LateReceiver; }

}  // namespace perfsift::pipeline
