#!/usr/bin/env bash
# run_app_test.sh PERFSIFT STORE_CHECKS CHECK NRANKS STORE [VAR=VALUE...] -- APP [ARGS...]
# Collects APP under real mpirun with NRANKS ranks, then runs the CHECK.* expectations
# of store_checks against the store. EXPECT_FAIL=1: the app is meant to die.
# INERT=1: run without perfsift collect (library linked but inactive): no file may appear;
# CHECK is not used (-).
set -euo pipefail
perfsift=$1 checks=$2 check=$3 nranks=$4 store=$5
shift 5
expect_fail=0 inert=0 app_args=() config=()
while [ "$1" != "--" ]; do
  case "$1" in
    EXPECT_FAIL=1) expect_fail=1 ;;
    INERT=1) inert=1 ;;
    APP_ARGS=*) IFS=: read -r -a app_args <<<"${1#APP_ARGS=}" ;;
    CONFIG=*) config=(-c "${1#CONFIG=}") ;;
    *) export "$1" ;;
  esac
  shift
done
shift
# shellcheck source=../../jobs/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../jobs/deps.sh"
perfsift_test_mpi_env
mkdir -p "$(dirname "$store")"
rm -rf "$store" "$store.spill"
if [ "$inert" = 1 ]; then
  # Linked to the collector but asked for no store: the run leaves no file behind, neither
  # in the directory it runs in (where a default store or spill directory would appear)
  # nor at the store's path.
  unset PERFSIFT_OUTPUT PERFSIFT_CONFIG
  rundir=$store.inert
  rm -rf "$rundir" && mkdir -p "$rundir"
  (cd "$rundir" && mpirun -n "$nranks" "$@")
  left=$(ls -A "$rundir")
  if [ -n "$left" ] || ls "$store".tmp-* >/dev/null 2>&1 || [ -e "$store" ] || [ -e "$store.spill" ]; then
    echo "inert run wrote files: ${left:-at $store}"
    exit 1
  fi
  echo "inert run: no file written, as expected"
  exit 0
fi
set +e
"$perfsift" collect -o "$store" "${config[@]}" -- mpirun -n "$nranks" "$@" "${app_args[@]}"
rc=$?
set -e
if [ "$expect_fail" = 1 ]; then
  [ "$rc" != 0 ] || { echo "the app was meant to fail but exited 0"; exit 1; }
else
  [ "$rc" = 0 ] || { echo "perfsift collect exited $rc"; exit 1; }
fi
"$perfsift" info "$store"
STORE="$store" NRANKS="$nranks" "$checks" --gtest_filter="${check}.*"
