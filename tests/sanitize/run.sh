#!/usr/bin/env bash
# The sanitized CI tier: builds the project with AddressSanitizer and
# UndefinedBehaviorSanitizer (-DPERFSIFT_SANITIZE=address,undefined) in build-asan/ and
# runs the unit and MPI tests under them; any ASan, LSan or UBSan report fails its test.
# Tests labelled no_sanitize (tests/CMakeLists.txt says why) do not run here.
# Usage: bash tests/sanitize/run.sh [extra ctest arguments]
# PERFSIFT_SANITIZE_BUILD_DIR: the build directory (default ROOT/build-asan).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/jobs/deps.sh"
perfsift_mpi_env
build=${PERFSIFT_SANITIZE_BUILD_DIR:-$root/build-asan}
start=$(date +%s)
# -O1 -g1 (line tables only): reports keep their file:line stacks, the build takes about
# a third of -O2 -g's time, and ASan's own guide recommends -O1.
opt="-O1 -g1 -DNDEBUG"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt" -DPERFSIFT_SANITIZE=address,undefined \
  -DPERFSIFT_BUILD_BENCH=OFF ${PERFSIFT_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
built=$(date +%s)
source "$root/tests/sanitize/env.sh"
cd "$build"
rc=0
ctest --output-on-failure -j2 --timeout 600 -LE no_sanitize "$@" || rc=$?
echo "sanitized tier: build $((built - start)) s, tests $(($(date +%s) - built)) s"
exit $rc
