#!/usr/bin/env bash
# The README's main command: install what is missing, build, collect a bundled MPI
# example on 4 ranks, analyse the trace store on 2 analysis ranks and print the report.
# Usage: bash jobs/quickstart.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
perfsift_prepare
out=${PERFSIFT_QUICKSTART_DIR:-$PERFSIFT_BUILD/quickstart}
mkdir -p "$out"
perfsift=$PERFSIFT_BUILD/pipeline/perfsift
echo "== collect: the binary-swap compositing example on 4 ranks (no recompile needed)"
"$perfsift" collect -o "$out/run.h5" -- mpirun -n 4 "$PERFSIFT_BUILD/tests/app_binary_swap"
echo "== what the store holds"
"$perfsift" info "$out/run.h5"
echo "== train the message classifier on this machine (Vetter's microbenchmarks; once, about 10 s)"
[ -s "$out/classifier.model" ] || "$perfsift" train -o "$out/classifier.model" -- mpirun -n 2
echo "== analyze on 2 analysis ranks"
PERFSIFT_CLASSIFY_MODEL="$out/classifier.model" OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -n 2 "$perfsift" analyze "$out/run.h5" -o "$out/results.h5" --json "$out/report.json"
echo "== the HTML report: one self-contained page for any browser"
"$perfsift" report "$out/results.h5" --format html -o "$out/report.html"
echo "== the replay's predicted trace of the run, for Perfetto (ui.perfetto.dev) or chrome://tracing"
"$perfsift" export "$out/results.h5" -o "$out/predicted.json"
echo "== trace store $out/run.h5 (docs/trace-store.md), results $out/results.h5 (docs/results.md), JSON $out/report.json, HTML $out/report.html"
