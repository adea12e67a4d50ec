// What each MPI operation of a store does, from the generated operation table
// (collect/mpi_functions.toml, by name): the one place analyses learn which calls send,
// receive, post, complete or synchronise.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/loggps.h"

namespace perfsift::pipeline {

enum class OpClass : uint8_t { Local, Send, Recv, Sendrecv, Post, Completion, Collective, Finalize };

struct OpTraits {
  OpClass cls = OpClass::Local;
  kernels::CollectiveFlow flow = kernels::CollectiveFlow::All;
  bool linear = false;  // collectives: P - 1 rounds
  bool templ = false;   // persistent-request templates (*_init): MPI_Start activates them
  bool init = false;    // MPI_Init, MPI_Init_thread: start-up, not the program
  bool sends() const { return cls == OpClass::Send || cls == OpClass::Sendrecv; }
  // Start-up and shut-down: outside the program's time, not communication a program can tune.
  bool lifecycle() const { return init || cls == OpClass::Finalize; }
};

// Traits per operation code of a store's /ops table; unknown names are local calls.
std::vector<OpTraits> classify_ops(const std::vector<std::string> &names);

// By name, for code that holds names only: MPI_Init or MPI_Init_thread; those or MPI_Finalize.
bool is_init_op(const std::string &name);
bool is_lifecycle_op(const std::string &name);

}  // namespace perfsift::pipeline
