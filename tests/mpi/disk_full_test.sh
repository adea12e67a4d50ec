#!/usr/bin/env bash
# disk_full_test.sh PERFSIFT APP_RING WORK_DIR
# Outputs that cannot be written (a file size limit, prlimit --fsize: EFBIG, as a full
# disk gives ENOSPC) are said in one line naming the file and the reason, and nothing
# half-written is left:
#  1. the collector at MPI_Finalize: the spill files stay, one line says how to recover,
#     and `perfsift recover` (with room) rebuilds every event; the same when the store
#     writer module cannot be loaded;
#  2. perfsift analyze -o: no results file (nor its temporary), one line;
#  3. perfsift report -o (text, JSON, HTML): no output file, one line.
# The limit applies to the ranks only (mpirun's PMIx files need room) and the ranks talk
# over TCP (Open MPI's shared-memory segment is a file too).
set -uo pipefail
perfsift=$1 app=$2 work=$3
# shellcheck source=../../jobs/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../jobs/deps.sh"
perfsift_test_mpi_env
export OMPI_MCA_btl=self,tcp
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fail() {
  echo "FAIL: $*"
  exit 1
}
events() { "$perfsift" info "$1" | sed -n 's/.* \([0-9]*\) MPI events.*/\1/p'; }
no_stack_dump() { ! grep -q "HDF5-DIAG\|#[0-9]*: " "$1" || fail "$1 holds an HDF5 error stack"; }

# 0. the same run with room: the events to expect
"$perfsift" collect -o full.h5 -- mpirun -n 4 "$app" >full.log 2>&1 || fail "collect with room: $(cat full.log)"
want=$(events full.h5)
[ -n "$want" ] || fail "no event count in perfsift info full.h5"

# 1. the store does not fit (about 30 KB in a 20 KB limit; the spill files are 3 KB)
"$perfsift" collect -o run.h5 -- mpirun -n 4 prlimit --fsize=20000 "$app" >run.log 2>&1
cat run.log
no_stack_dump run.log
n=$(grep -c "perfsift: writing $work/run.h5 failed (.*File too large.*); .*perfsift recover $work/run.h5.spill -o $work/run.h5" run.log)
[ "$n" = 1 ] || fail "expected one line saying the store failed and how to recover, got $n"
[ "$(grep -c "^perfsift: rank" run.log)" = 0 ] || fail "per-rank error lines"
for r in 0 1 2 3; do [ -s run.h5.spill/rank-$r.bin ] || fail "spill file of rank $r missing"; done
ls run.h5.spill | grep -q tmp && fail "temporary spill files left: $(ls run.h5.spill)"
ls | grep -q "run.h5.tmp" && fail "temporary store left: $(ls)"
"$perfsift" recover run.h5.spill -o later.h5 >recover.log 2>&1 || fail "recover with room: $(cat recover.log)"
got=$(events later.h5)
[ "$got" = "$want" ] || fail "recovered $got events, the run with room has $want"
echo "collector: one line, spill files kept, recover later rebuilt all $got events"

# 1b. the store writer module is not beside the collector (a partial install): the same
# one line with the reason, every rank's spill file, no store
mkdir -p lib && cp "$(dirname "$perfsift")/../collect/libperfsift_collect.so" lib/
mpirun -n 4 -x LD_PRELOAD="$work/lib/libperfsift_collect.so" -x PERFSIFT_OUTPUT="$work/nomod.h5" "$app" >nomod.log 2>&1
n=$(grep -c "perfsift: writing $work/nomod.h5 failed (cannot load $work/lib/libperfsift_store_writer.so .*perfsift recover $work/nomod.h5.spill" nomod.log)
[ "$n" = 1 ] || fail "expected one line naming the missing store writer: $(cat nomod.log)"
[ -e nomod.h5 ] && fail "a store appeared without its writer"
for r in 0 1 2 3; do [ -s nomod.h5.spill/rank-$r.bin ] || fail "spill file of rank $r missing"; done
echo "collector without its store writer: one line, spill files kept"

# 2. analyze: the results file does not fit
"$perfsift" analyze full.h5 -o ok.h5 >ok.log 2>&1 || fail "analyze with room: $(cat ok.log)"
mpirun -n 2 prlimit --fsize=20000 "$perfsift" analyze full.h5 -o res.h5 >analyze.log 2>&1 && fail "analyze succeeded over the limit"
no_stack_dump analyze.log
grep "^perfsift: " analyze.log | grep -v warning
[ "$(grep "^perfsift: " analyze.log | grep -v warning | grep -c "res.h5: .*File too large")" = 1 ] ||
  fail "expected one line naming res.h5 and the reason: $(cat analyze.log)"
ls | grep -q "^res" && fail "analyze left $(ls | grep '^res')"

# 3. report -o
for fmt in text json html; do
  prlimit --fsize=1000 "$perfsift" report ok.h5 --format $fmt -o out.$fmt >report.log 2>&1 && fail "report $fmt succeeded"
  cat report.log
  [ "$(grep -c "out.$fmt: cannot write: File too large" report.log)" = 1 ] && [ "$(wc -l <report.log)" = 1 ] ||
    fail "report $fmt: expected one line: $(cat report.log)"
  ls | grep -q "^out" && fail "report left $(ls | grep '^out')"
done
echo "disk full: all outputs refused cleanly"
