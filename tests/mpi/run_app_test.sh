#!/usr/bin/env bash
# run_app_test.sh PERFSIFT STORE_CHECKS CHECK NRANKS STORE [VAR=VALUE...] -- APP [ARGS...]
# Collects APP under real mpirun with NRANKS ranks, then runs the CHECK.* expectations
# of store_checks against the store. EXPECT_FAIL=1: the app is meant to die.
# INERT=1: run without perfsift collect (library linked but inactive): no store may appear.
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
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Ranks that wait yield the core, so sleeping ranks wake on time when oversubscribed.
export OMPI_MCA_mpi_yield_when_idle=1
mkdir -p "$(dirname "$store")"
rm -rf "$store" "$store.spill"
if [ "$inert" = 1 ]; then
  unset PERFSIFT_OUTPUT PERFSIFT_CONFIG
  mpirun -n "$nranks" "$@"
  if ls "$store".tmp-* >/dev/null 2>&1 || [ -e "$store" ] || [ -e "$store.spill" ]; then echo "inert run wrote a store"; exit 1; fi
  echo "inert run: no store, as expected"
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
