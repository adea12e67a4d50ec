#!/usr/bin/env bash
# The README's main command: install what is missing, build, collect a bundled MPI
# example on 4 ranks, and report on the trace store. Usage: bash jobs/quickstart.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/jobs/deps.sh"
perfsift_ensure_deps
perfsift_mpi_env
build=${PERFSIFT_BUILD_DIR:-$root/build}
perfsift_build "$root" "$build"
out=${PERFSIFT_QUICKSTART_DIR:-$build/quickstart}
mkdir -p "$out"
perfsift=$build/pipeline/perfsift
echo "== collect: the binary-swap compositing example on 4 ranks (no recompile needed)"
"$perfsift" collect -o "$out/run.h5" -- mpirun -n 4 "$build/tests/app_binary_swap"
echo "== report"
"$perfsift" info "$out/run.h5"
echo "== the trace store is $out/run.h5 (schema: docs/trace-store.md)"
