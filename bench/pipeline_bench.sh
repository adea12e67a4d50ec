#!/usr/bin/env bash
# The whole default pipeline at growing sizes, side by side (issue: 2 M events/s per analysis
# process, <= 100 B peak per owned event). For each size a synthetic store (RANKS ranks,
# 8 regions, one injected imbalance) is analysed with the default pipeline on K analysis
# ranks; prints wall time, events/s per analysis process, peak memory per analysis rank and
# per owned event, and each stage's time and peak on analysis rank 0 (--progress).
# usage: pipeline_bench.sh PERFSIFT [RANKS "SIZES" "KS"]
#   SIZES default "1000000 10000000", KS "1 2"; 100000000 with KS "2" takes 8 GB per analysis rank
#   and about 80 s on 2 cores (its store: 2.5 GB, written in a minute). A K of the form KxT
#   runs K processes of T threads each, unbound (default: one core and thread per process).
# PERFSIFT_BENCH_DIR keeps the stores between runs (they take a while to write).
set -euo pipefail
perfsift=$1 ranks=${2:-1024} sizes=${3:-"1000000 10000000"} ks=${4:-"1 2"}
source "$(dirname "${BASH_SOURCE[0]}")/bench_setup.sh"
summary=()
for events in $sizes; do
  store=$dir/pipeline-$ranks-$events.h5
  if [ ! -f "$store" ]; then
    start=$(now)
    mpirun -n 2 "$perfsift" synth -o "$store" --ranks "$ranks" --regions 8 \
      --events-per-rank $(( (events + ranks - 1) / ranks )) \
      --inject "imbalance:region=phase00/kernel03,ranks=0-$((ranks / 10)),factor=2" > /dev/null
    echo "synth $events events: $(since "$start") s, $(( $(stat -c %s "$store") / 1048576 )) MB"
  fi
  nev=$("$perfsift" info --json "$store" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
  for kt in $ks; do
    k=${kt%x*}
    threads=()
    [ "$kt" = "$k" ] || threads=(--bind-to none -x OMP_NUM_THREADS="${kt#*x}")
    out=$dir/run-$events-$kt
    start=$(now)
    # Each rank's peak appended to its own line of $out.time (O_APPEND: the ranks' lines
    # never interleave, as they could on the shared stderr).
    rm -f "$out.time"
    mpirun -n "$k" "${threads[@]}" /usr/bin/time -a -o "$out.time" -f "peak_kb %M" "$perfsift" analyze "$store" \
      -o "$out.h5" --progress > "$out.txt" 2> "$out.err" || { cat "$out.err"; exit 1; }
    wall=$(since "$start")
    echo "default pipeline: $ranks ranks, $nev events, K=$kt: wall $wall s"
    grep -E "^perfsift: stage .* done in" "$out.err" | sed 's/^perfsift: /  /'
    line=$(awk -v wall="$wall" -v k="$k" -v kt="$kt" -v nev="$nev" '
      /^peak_kb/ { if ($2 > peak) peak = $2 }
      # --progress resets the kernel high-water mark at each stage: its stage peaks count too.
      / done in .* s, peak [0-9]+ MB/ { for (i = 1; i < NF; i++) if ($i == "peak" && $(i + 1) * 1024 > peak) peak = $(i + 1) * 1024 }
      END { printf "%12d  K=%-4s  %8.2f s  %6.2f M events/s per process  peak %7.0f MB per analysis rank  %5.0f B per owned event",
                   nev, kt, wall, nev / k / wall / 1e6, peak / 1024, peak * 1024 / (nev / k) }' "$out.time" "$out.err")
    echo "  $line"
    summary+=("$line")
  done
done
echo "side by side (goals: >= 2 M events/s per process, <= 100 B per owned event):"
printf '  %s\n' "${summary[@]}"
