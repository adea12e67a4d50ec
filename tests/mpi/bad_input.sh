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
expect_error newer "version 99 is newer than this perfsift reads" "$perfsift" info "$work/newer.h5"
printf 'buffer_mb = 8\nbufer_mb = 2\n' >"$work/bad.toml"
expect_error config_key "bad.toml:2:1: unknown key 'bufer_mb'; did you mean 'buffer_mb'" \
  "$perfsift" collect -o "$work/x.h5" -c "$work/bad.toml" -- true
[ ! -e "$work/x.h5" ] || { echo "FAIL: a store appeared after a config error"; fail=1; }
mkdir -p "$work/emptyspill"
expect_error recover_empty "nothing to recover" "$perfsift" recover "$work/emptyspill" -o "$work/y.h5"
[ ! -e "$work/y.h5" ] || { echo "FAIL: recover wrote a store from nothing"; fail=1; }
exit $fail
