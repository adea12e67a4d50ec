#!/usr/bin/env bash
# The MPICH CI tier: builds perfsift against Debian's MPICH (-DPERFSIFT_MPI=mpich: mpicc.mpich,
# its parallel HDF5, mpiexec.mpich as the launcher) in build-mpich/, only the targets the
# tests labelled mpich need (tests/CMakeLists.txt says which), and runs them: the collector's
# C, Fortran and threaded recording, spilling, crashes and analyze under Hydra's mpiexec.
# Usage: bash tests/mpich/run.sh [extra ctest arguments]
# PERFSIFT_MPICH_BUILD_DIR: the build directory (default ROOT/build-mpich).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/jobs/deps.sh"
perfsift_ensure_deps "${PERFSIFT_MPICH_PACKAGES[@]}"
build=${PERFSIFT_MPICH_BUILD_DIR:-$root/build-mpich}
start=$(date +%s)
# -O1 without debug information: about half the compile time of -O2 -g; the tests check
# what the collector records and the analysis finds, not speed.
opt="-O1 -DNDEBUG"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DPERFSIFT_MPI=mpich -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" \
  -DCMAKE_Fortran_FLAGS_RELWITHDEBINFO="-O1" -DPERFSIFT_BUILD_BENCH=OFF ${PERFSIFT_CMAKE_ARGS:-} >/dev/null
grep -q "^PERFSIFT_MPI_FAMILY_FOUND:INTERNAL=mpich$" "$build/CMakeCache.txt" ||
  { echo "mpich tier: $build is not built against MPICH (see its CMake output)"; exit 1; }
# The targets the mpich-labelled tests run (not the unit-test executables).
cmake --build "$build" -j"$(nproc)" --target perfsift perfsift_collect store_checks app_ring app_ring_f \
  app_ring_f_usempi app_families app_intercomm app_late_sender app_hybrid_threads \
  request_table_tests app_crash app_late_receiver app_slash_names app_master_worker app_wavefront
built=$(date +%s)
cd "$build"
rc=0
ctest --output-on-failure -j2 --timeout 300 -L mpich "$@" || rc=$?
echo "mpich tier: build $((built - start)) s, tests $(($(date +%s) - built)) s"
exit $rc
