// The run's facts the store keeps (command line, start time, MPI library, host names),
// and the collector's configuration as read at MPI_Init.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config/collect_config.h"
#include "io/trace_model.h"
#include "warnings.h"

namespace perfsift::collect {

// False when the collector stays inert: no store requested, or a configuration error
// (said once by rank 0).
bool load_collector_config(int rank, config::CollectConfig &out);

// Tests skew the clocks on purpose (PERFSIFT_TEST_CLOCK_SKEW=offset:ppm) to check the
// correction: the clock restarts skewed, and `t_before_init` is read again from it.
void apply_test_clock_skew(int rank, int64_t &t_before_init);

// The mask of the MPI groups to trace (bit per Group); unknown names are said and ignored.
uint32_t mpi_group_mask(const std::vector<std::string> &groups, Warnings &warnings);

// Collective over `comm`: nranks, command, start time (rank 0's epoch), MPI library, the
// host names and each rank's. `node_name`: this rank's node (empty: the processor name).
void record_run_facts(MPI_Comm comm, int nranks, const std::string &node_name, io::RunInfo &run);

}  // namespace perfsift::collect
