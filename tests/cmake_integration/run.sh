#!/usr/bin/env bash
# Installs perfsift into a scratch prefix, builds a consumer project against it with
# find_package(perfsift), runs it linked (not preloaded) and checks the store.
# usage: run.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -x "$work/prefix/bin/perfsift"
test -f "$work/prefix/lib/libperfsift_collect.so"
test -f "$work/prefix/include/perfsift.h"
test -f "$work/prefix/include/perfsift.mod"
cmake -S "$src" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
# shellcheck source=../../jobs/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../jobs/deps.sh"
perfsift_mpi_env
PERFSIFT_OUTPUT="$work/consumer.h5" mpirun -n 2 -x PERFSIFT_OUTPUT "$work/consumer/consumer"
# The installed program finds its collector under ../lib and reads the store.
"$work/prefix/bin/perfsift" info "$work/consumer.h5" | tee "$work/info.txt"
grep -q "consumer" "$work/info.txt"
"$work/prefix/bin/perfsift" collect -o "$work/preloaded.h5" -- mpirun -n 2 "$work/consumer/consumer"
echo "installed package works: find_package, linked run, preloaded run"
