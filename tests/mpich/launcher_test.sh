#!/usr/bin/env bash
# launcher_test.sh PERFSIFT FAMILY WORK: `perfsift collect` given the launcher of the other MPI
# (a stand-in named mpirun that answers --version as that MPI's launcher does) warns in one
# line and names the launcher to use; given its own MPI's launcher name it does not warn.
set -euo pipefail
perfsift=$1 family=$2 work=$3
rm -rf "$work" && mkdir -p "$work/other" "$work/same"
case "$family" in
  mpich) other="mpirun (Open MPI) 4.1.4" same="HYDRA build details:" other_name="Open MPI" ;;
  openmpi) other="HYDRA build details:" same="mpirun (Open MPI) 4.1.4" other_name="MPICH" ;;
  *) echo "launcher_test: perfsift is built against neither Open MPI nor MPICH: nothing to check"; exit 77 ;;
esac
for d in other same; do
  v=$other
  [ "$d" = same ] && v=$same
  printf '#!/bin/sh\n[ "$1" = --version ] && { echo "%s"; exit 0; }\nexit 3\n' "$v" >"$work/$d/mpirun"
  chmod +x "$work/$d/mpirun"
done
set +e
"$perfsift" collect -o "$work/run.h5" -- "$work/other/mpirun" -n 2 /bin/true 2>"$work/other.err"
rc=$?
"$perfsift" collect -o "$work/run.h5" -- "$work/same/mpirun" -n 2 /bin/true 2>"$work/same.err"
set -e
cat "$work/other.err"
[ "$rc" != 0 ] || { echo "collect succeeded without a store"; exit 1; }
grep -q "perfsift: warning: .*/other/mpirun is $other_name's launcher" "$work/other.err" ||
  { echo "no warning about the other MPI's launcher"; exit 1; }
[ "$(grep -c "perfsift: warning" "$work/other.err")" = 1 ] || { echo "the warning is not one line"; exit 1; }
if grep -q "perfsift: warning" "$work/same.err"; then
  echo "warned about its own MPI's launcher:"
  cat "$work/same.err"
  exit 1
fi
echo "launcher warning: as expected"
