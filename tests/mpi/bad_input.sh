#!/usr/bin/env bash
# Bad input gets a one-line error naming the file and what to do, exit code 2 — never a
# crash, a hang or a half-written output. usage: bad_input.sh PERFSIFT SET_VERSION GOOD_STORE WORKDIR
set -uo pipefail
perfsift=$1 set_version=$2 good=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail=0
expect_error() {  # name pattern command...
  local name=$1 pattern=$2
  shift 2
  local out rc
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  local lines
  lines=$(printf '%s\n' "$out" | grep -c .)
  if [ "$rc" != 2 ] || ! printf '%s' "$out" | grep -q -- "$pattern" || [ "$lines" != 1 ]; then
    echo "FAIL $name: rc=$rc lines=$lines: $out"
    fail=1
  else
    echo "ok   $name: $out"
  fi
}
head -c 3000 "$good" >"$work/truncated.h5"
expect_error truncated "truncated" "$perfsift" info "$work/truncated.h5"
echo "just text" >"$work/foreign.h5"
expect_error foreign "not an HDF5 file" "$perfsift" info "$work/foreign.h5"
expect_error missing "cannot read the file" "$perfsift" info "$work/none.h5"
cp "$good" "$work/newer.h5" && "$set_version" "$work/newer.h5" 99
expect_error newer "newer.h5: trace store version 99; this perfsift reads trace store version 2: collect the run again" \
  "$perfsift" info "$work/newer.h5"
cp "$good" "$work/older.h5" && "$set_version" "$work/older.h5" 0
expect_error older "older.h5: trace store version 0; this perfsift reads trace store version 2" \
  "$perfsift" info "$work/older.h5"
printf 'buffer_mb = 8\nbufer_mb = 2\n' >"$work/bad.toml"
expect_error config_key "bad.toml:2:1: unknown key 'bufer_mb'; did you mean 'buffer_mb'" \
  "$perfsift" collect -o "$work/x.h5" -c "$work/bad.toml" -- true
[ ! -e "$work/x.h5" ] || { echo "FAIL: a store appeared after a config error"; fail=1; }
mkdir -p "$work/emptyspill"
expect_error recover_empty "nothing to recover" "$perfsift" recover "$work/emptyspill" -o "$work/y.h5"
[ ! -e "$work/y.h5" ] || { echo "FAIL: recover wrote a store from nothing"; fail=1; }

# Damaged spill files next to good ones (a crashed run's spill folder, then damaged):
# recover keeps the good ranks and the complete records of a cut file, and says one
# line per damaged file naming it and what is wrong.
# shellcheck source=../../jobs/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../jobs/deps.sh"
perfsift_mpi_env
app_crash=$(dirname "$good")/../app_crash
"$perfsift" collect -o "$work/crash.h5" -- mpirun -n 4 "$app_crash" >/dev/null 2>&1
expect_recover() {  # name expected-rc expected-lines 'info pattern' 'stderr pattern'... (spill dir: $work/NAME)
  local name=$1 want_rc=$2 want_lines=$3 info_pattern=$4
  shift 4
  local out rc lines ok=1
  out=$(timeout 60 "$perfsift" recover "$work/$name" -o "$work/$name.h5" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$out" | grep -c .)
  [ "$rc" = "$want_rc" ] && [ "$lines" = "$want_lines" ] || ok=0
  for pattern in "$@"; do printf '%s' "$out" | grep -q -- "$pattern" || { ok=0; echo "  missing: $pattern"; }; done
  if [ -n "$info_pattern" ] && ! "$perfsift" info "$work/$name.h5" 2>&1 | grep -q -- "$info_pattern"; then
    ok=0
    echo "  store lacks: $info_pattern"
  fi
  if [ "$ok" = 1 ]; then echo "ok   $name: $out"; else echo "FAIL $name: rc=$rc lines=$lines: $out"; fail=1; fi
}
if [ ! -s "$work/crash.h5.spill/rank-0.bin" ]; then
  echo "FAIL: the crash app left no spill files in $work/crash.h5.spill"
  fail=1
else
  spill=$work/crash.h5.spill
  # rank 0 good; rank 1 header only (SIGKILL); rank 2 cut inside its 4th event; rank 3
  # empty; rank-7.bin of another run (8 ranks).
  mkdir -p "$work/damaged_a"
  cp "$spill"/rank-{0,1,2}.bin "$work/damaged_a/"
  head -c $((32 + 16 + 80 * 3 + 30)) "$spill/rank-2.bin" >"$work/damaged_a/rank-2.bin"
  : >"$work/damaged_a/rank-3.bin"
  cp "$spill/rank-0.bin" "$work/damaged_a/rank-7.bin"
  printf '\x07\x00\x00\x00\x08\x00\x00\x00' | dd of="$work/damaged_a/rank-7.bin" bs=1 seek=12 conv=notrunc 2>/dev/null
  expect_recover damaged_a 0 5 "11 MPI events" \
    "rank-2.bin: truncated at byte 318 inside the events chunk of [0-9]* bytes at byte 32; kept its 3 complete records" \
    "rank-3.bin: empty (0 bytes)" "rank-1.bin: header only" "rank-7.bin: from another run (8 ranks" \
    "from 2 of 4 ranks; marked incomplete (missing ranks: 1,3; ended without MPI_Finalize: 0,2)"
  # rank 1 garbage after a valid header; rank 2 good; rank 3 of spill format version 1; rank-00.bin
  # repeats rank 0.
  mkdir -p "$work/damaged_b"
  cp "$spill"/rank-{0,2}.bin "$work/damaged_b/"
  cp "$spill/rank-0.bin" "$work/damaged_b/rank-00.bin"
  { head -c 32 "$spill/rank-1.bin"; head -c 3000 /dev/urandom; } >"$work/damaged_b/rank-1.bin"
  cp "$spill/rank-3.bin" "$work/damaged_b/rank-3.bin"
  printf '\x01' | dd of="$work/damaged_b/rank-3.bin" bs=1 seek=8 conv=notrunc 2>/dev/null
  expect_recover damaged_b 0 4 "16 MPI events" \
    "rank-1.bin: damaged at byte 32: unknown chunk type" \
    "rank-3.bin: spill format version 1; this perfsift reads spill version 3: the run's data in this file cannot be read by this perfsift; recover it with the perfsift that collected the run; rank 3 is treated as missing" \
    "rank 0 again" \
    "from 2 of 4 ranks; marked incomplete (missing ranks: 1,3; ended without MPI_Finalize: 0,2)"
  # Nothing usable: every file damaged; no store appears.
  mkdir -p "$work/damaged_c"
  : >"$work/damaged_c/rank-0.bin"
  echo "not a spill file" >"$work/damaged_c/rank-1.bin"
  expect_recover damaged_c 2 3 "" "rank-0.bin: empty" "rank-1.bin: not a perfsift spill file" "nothing to recover"
  [ ! -e "$work/damaged_c.h5" ] || { echo "FAIL: recover wrote a store from damaged files only"; fail=1; }
fi
exit $fail
