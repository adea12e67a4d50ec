#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan, a build directory of their own) and
# runs each for SECONDS (default 10) on a copy of its seed corpus, so the repository's
# corpus is never modified. Fails when any fuzzer finds a crash, a sanitizer report, an
# out-of-memory or a hang (-timeout), and prints the reproducer's path.
#   bash tests/fuzz/run_fuzzers.sh            # 10 s per fuzzer
#   bash tests/fuzz/run_fuzzers.sh 600        # the long run
#   FUZZERS="questions loggps" bash tests/fuzz/run_fuzzers.sh 60
# PERFSIFT_FUZZ_BUILD: the build directory (default build-fuzz); findings are kept in
# its findings/<fuzzer>/ and their inputs reproduce with: build-fuzz/fuzz_<fuzzer> FILE
set -euo pipefail
SECONDS_EACH=${1:-10}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${PERFSIFT_FUZZ_BUILD:-$ROOT/build-fuzz}
ALL="spill trace_store results_store pipeline questions knowledge classifier loggps"
FUZZERS=${FUZZERS:-$ALL}

# shellcheck source=../../jobs/deps.sh
source "$ROOT/jobs/deps.sh"
perfsift_ensure_deps "${PERFSIFT_FUZZ_PACKAGES[@]}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
start=$(date +%s)
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DPERFSIFT_FUZZ=ON -DPERFSIFT_BUILD_TESTS=OFF -DPERFSIFT_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target fuzzers
echo "run_fuzzers: built in $(($(date +%s) - start)) s"

# A fuzzer's own memory use stays far below; an allocation near the limit is a finding.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1:allocator_may_return_null=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/tests/fuzz/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for f in $FUZZERS; do
  work=$(mktemp -d "${TMPDIR:-/tmp}/perfsift-fuzz-$f.XXXXXX")
  mkdir -p "$work/corpus" "$BUILD/findings/$f"
  cp "$ROOT/tests/fuzz/corpus/$f/"* "$work/corpus/"
  rc=0
  TMPDIR=$work "$BUILD/fuzz_$f" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$BUILD/findings/$f/" "$work/corpus" >"$work/log" 2>&1 || rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' || echo "?")
  if [ "$rc" -ne 0 ]; then
    failed+=("$f")
    echo "run_fuzzers: $f FAILED after $runs runs (exit $rc):" >&2
    grep -E 'ERROR|SUMMARY|Test unit written|^    #[0-9]+ ' "$work/log" | head -25 >&2
    repro=$(grep -o 'Test unit written to .*' "$work/log" | sed 's/Test unit written to //' | tail -1)
    [ -n "$repro" ] && echo "run_fuzzers: reproduce with: $BUILD/fuzz_$f $repro" >&2
    # The first frame past the sanitizer's own: a crash inside HDF5's parser is HDF5's bug.
    if grep -E '^    #[0-9]+ ' "$work/log" | grep -v -E 'libclang_rt|compiler-rt|__interceptor|__asan|__sanitizer|in (malloc|memcpy|memmove|free) ' |
      head -1 | grep -q libhdf5; then
      echo "run_fuzzers: the crash is inside libhdf5 itself (see docs/fuzzing.md, 'Findings inside HDF5')" >&2
    fi
    echo "run_fuzzers: full log: $work/log" >&2
  else
    echo "run_fuzzers: $f: $runs runs in ${SECONDS_EACH} s, no finding"
    rm -rf "$work"
  fi
done
echo "run_fuzzers: total $(($(date +%s) - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "run_fuzzers: findings in: ${failed[*]}" >&2
  exit 1
fi
