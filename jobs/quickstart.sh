#!/usr/bin/env bash
# The README's main command: install what is missing, build, collect a bundled MPI
# example on 4 ranks, and report on the trace store. Usage: bash jobs/quickstart.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
perfsift_prepare
out=${PERFSIFT_QUICKSTART_DIR:-$PERFSIFT_BUILD/quickstart}
mkdir -p "$out"
perfsift=$PERFSIFT_BUILD/pipeline/perfsift
echo "== collect: the binary-swap compositing example on 4 ranks (no recompile needed)"
"$perfsift" collect -o "$out/run.h5" -- mpirun -n 4 "$PERFSIFT_BUILD/tests/app_binary_swap"
echo "== report"
"$perfsift" info "$out/run.h5"
echo "== the trace store is $out/run.h5 (schema: docs/trace-store.md)"
