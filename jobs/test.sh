#!/usr/bin/env bash
# The README's test command: install what is missing, build, run every test
# (units, MPI integration under real mpirun, end-to-end). Usage: bash jobs/test.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
perfsift_prepare
cd "$PERFSIFT_BUILD"
ctest --output-on-failure -j2 --timeout 300
