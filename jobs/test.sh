#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test
# (units, MPI integration under real mpirun, end-to-end). Usage: bash jobs/test.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/jobs/deps.sh"
perfsift_ensure_deps
perfsift_mpi_env
build=${PERFSIFT_BUILD_DIR:-$root/build}
perfsift_build "$root" "$build"
cd "$build"
ctest --output-on-failure -j2 --timeout 300
