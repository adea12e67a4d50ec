#!/usr/bin/env bash
# launcher_test.sh PERFSIFT COLLECTOR FAMILY WORK: perfsift refuses, in one line and before
# anything runs, the mixes of two MPIs that cannot work:
# - `perfsift collect` given the other MPI's launcher (a stand-in named mpirun that answers
#   --version as that MPI's launcher does); given its own MPI's launcher name it says nothing;
# - `perfsift collect` of a program linked against the other MPI (its ldd);
# - the collector preloaded into such a program by hand (srun, a wrapper script): the
#   program stops before main with one line instead of crashing inside the other MPI.
# The last two need a program of the other MPI (mpichversion, ompi_info): skipped without one.
set -euo pipefail
perfsift=$1 collector=$2 family=$3 work=$4
rm -rf "$work" && mkdir -p "$work/other" "$work/same"
case "$family" in
  mpich) other="mpirun (Open MPI) 4.1.4" same="HYDRA build details:" other_name="Open MPI" other_prog=/usr/bin/ompi_info ;;
  openmpi) other="HYDRA build details:" same="mpirun (Open MPI) 4.1.4" other_name="MPICH" other_prog=/usr/bin/mpichversion ;;
  *) echo "launcher_test: perfsift is built against neither Open MPI nor MPICH: nothing to check"; exit 77 ;;
esac
for d in other same; do
  v=$other
  [ "$d" = same ] && v=$same
  printf '#!/bin/sh\n[ "$1" = --version ] && { echo "%s"; exit 0; }\nexit 3\n' "$v" >"$work/$d/mpirun"
  chmod +x "$work/$d/mpirun"
done
one_line_refusal() {  # FILE RC PATTERN WHAT
  cat "$1"
  [ "$2" = 2 ] || { echo "$4: exit code $2, not 2"; exit 1; }
  grep -q "$3" "$1" || { echo "$4: no refusal naming it"; exit 1; }
  [ "$(wc -l <"$1")" = 1 ] || { echo "$4: the refusal is not one line"; exit 1; }
}
set +e
"$perfsift" collect -o "$work/run.h5" -- "$work/other/mpirun" -n 2 /bin/true 2>"$work/other.err"
rc=$?
"$perfsift" collect -o "$work/run.h5" -- "$work/same/mpirun" -n 2 /bin/true 2>"$work/same.err"
set -e
one_line_refusal "$work/other.err" $rc "^perfsift: .*/other/mpirun is $other_name's launcher" "the other MPI's launcher"
[ ! -e "$work/run.h5" ] || { echo "a store was written"; exit 1; }
if grep -q "launcher" "$work/same.err"; then
  echo "refused its own MPI's launcher:"
  cat "$work/same.err"
  exit 1
fi
echo "launcher refusal: as expected"
if [ ! -x "$other_prog" ]; then
  echo "no $other_name program here ($other_prog): the program checks are skipped"
  exit 0
fi
set +e
"$perfsift" collect -o "$work/run.h5" -- "$work/same/mpirun" -n 2 "$(basename "$other_prog")" 2>"$work/program.err"
rc=$?
set -e
one_line_refusal "$work/program.err" $rc "^perfsift: $other_prog is linked against $other_name (ldd)" "a program of the other MPI"
set +e
LD_PRELOAD=$collector "$other_prog" >/dev/null 2>"$work/preload.err"
rc=$?
set -e
one_line_refusal "$work/preload.err" $rc "^perfsift: $other_prog loads $other_name, but this collector" "the collector preloaded by hand"
echo "program refusals: as expected"
