#!/usr/bin/env bash
# perfsift analyze under real mpirun. usage: analyze_test.sh MODE PERFSIFT WORK_DIR [STORE]
#   determinism  one synthetic store, K = 1, 2, 4 analysis ranks and 1 or 2 threads: identical
#                results; the injected imbalance is found on the injected region and ranks;
#                the results contract holds; `perfsift report` reproduces both reports
#   synth        synthetic stores hold what was injected (counters, rates, late senders)
#   rootcauses   cache- and I/O-heavy regions get those root causes
#   commbound    a communication-bound store: an mpi-time finding, no imbalance
#   missing      a store with a rank lost: warning, partial result, exit 0
#   corrupt      truncated and foreign stores, bad pipelines: one line, exit 2, no output
#   nested_imbalance|nested_balanced|nested_sleep STORE  AutoAnalyzer end to end on the
#                tests/apps program (nested_sleep: as an uninstrumented binary)
#   real STORE [MESSAGES]  a store collected from a tests/apps program analyses cleanly on
#                2 ranks (and its message matrix holds MESSAGES point-to-point messages)
#   whatif STORE PerWiz on the binary-swap app: gains follow the app's arithmetic, K = 1,
#                2, 4 identical, user questions, predicted traces (Chrome, OTF2), bad questions
#   baselines APPDIR  calibrate LogGPS here, then the tests/apps programs (collected here,
#                one at a time) replay within 5 % of their measured time
#   apart APPDIR  Vetter's classifier trained here (accuracy, a model that reads back, a
#                platform warning, a bad model rejected), then the APART properties of
#                tests/apps/apart.c, collected here one at a time: each wait state where
#                injected within 20 %, nothing elsewhere, Vetter's class where it is clear
set -euo pipefail
mode=$1 perfsift=$2 work=$3 store=${4:-} messages=${5:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_mpi_yield_when_idle=1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3   # Debian's, with h5py
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

case $mode in
determinism)
  "$perfsift" synth -o s.h5 --ranks 24 --regions solve,solve/smooth,solve/restrict,io --events-per-rank 40000 \
    --inject imbalance:region=solve/smooth,ranks=5-8,factor=3
  # Reads of 65,536 rows: many per analysis rank; OpenMP splits each rank's slice.
  export PERFSIFT_ROWS_PER_READ=65536
  OMP_NUM_THREADS=1 mpirun -n 1 "$perfsift" analyze s.h5 -o k1.h5 --json k1.json > k1.txt
  OMP_NUM_THREADS=2 mpirun -n 2 "$perfsift" analyze s.h5 -o k2.h5 --json k2.json > k2.txt
  OMP_NUM_THREADS=1 mpirun -n 4 "$perfsift" analyze s.h5 -o k4.h5 --json k4.json > k4.txt
  OMP_NUM_THREADS=2 "$perfsift" analyze s.h5 -o t2.h5 --json t2.json > t2.txt
  # The plain H5Dread path (used for stores of other layouts) gives the same results.
  PERFSIFT_HDF5_READ=1 mpirun -n 2 "$perfsift" analyze s.h5 -o h2.h5 --json h2.json > h2.txt
  for v in k2 k4 t2 h2; do
    cmp k1.json $v.json || fail "JSON report of $v differs from K=1"
    diff <(grep -v ^Details k1.txt) <(grep -v ^Details $v.txt) || fail "text report of $v differs from K=1"
    h5diff k1.h5 $v.h5 || fail "results store of $v differs from K=1"
  done
  echo "identical results for K = 1, 2, 4, 1 or 2 threads, raw-chunk and H5Dread scans"
  $py "$here/check_results.py" finding k1.json load-imbalance solve/smooth 5-8
  $py "$here/check_results.py" contract k1.h5 k1.json
  "$perfsift" report k1.h5 --format json -o again.json
  cmp k1.json again.json || fail "perfsift report --format json differs from analyze --json"
  "$perfsift" report k1.h5 > again.txt
  cmp k1.txt again.txt || fail "perfsift report differs from analyze's text report"
  echo "report round trip: JSON and text identical"
  lines=$(wc -l < k1.txt)
  # About 40 lines of AutoAnalyzer results and findings (3 lines each), 10 of the replay's
  # (what if, bounds, domino), 7 of the wait states, message classes and model diagnosis.
  [ "$lines" -le 75 ] || fail "text report has $lines lines (about 70 expected)"
  awk -v w=100 'length($0) > w && !/^(perfsift analysis of|command:|Details:|counters not recorded)/ && /^      / { bad = 1 } END { exit bad }' k1.txt \
    || fail "a finding's cause is wider than the report's 100 columns"
  ;;
synth)
  # The synthetic store holds what was injected: counters, miss rates, rates, late senders.
  mpirun -n 2 "$perfsift" synth -o s.h5 --ranks 8 --regions solve,solve/smooth,io --events-per-rank 300 \
    --counters PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L2_TCM --inject cache-miss:region=solve/smooth,ranks=0-3,factor=10 \
    --inject counter:name=PAPI_TOT_INS,region=io,ranks=all,rate=1e9 --inject late-sender:region=io,ranks=5,delay=0.002
  $py - <<'PY'
import h5py, numpy as np
f = h5py.File("s.h5", "r")
paths = [x.decode() for x in f["regions/path"][...]]
assert list(f.attrs["counters_recorded"]) == [b"PAPI_TOT_CYC", b"PAPI_TOT_INS", b"PAPI_L2_TCM"] or \
       [x.decode() if isinstance(x, bytes) else x for x in f.attrs["counters_recorded"]] == ["PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L2_TCM"]
unavail = [x.decode() if isinstance(x, bytes) else x for x in f.attrs["counters_unavailable"]]
assert unavail == ["PAPI_L1_DCM"], unavail
smooth, io = paths.index("solve/smooth"), paths.index("io")
ratio = f["profile/PAPI_L2_TCM"][:, smooth] / f["profile/PAPI_TOT_INS"][:, smooth]
assert np.allclose(ratio[:4], 10 * ratio[4:].mean()) and np.allclose(ratio[4:], 0.004), ratio
rate = f["profile/PAPI_TOT_INS"][:, io] / f["profile/cpu"][:, io]
assert np.allclose(rate, 1e9), rate
# Rank 6 receives rank 5's late message in io: its MPI time there is the largest.
mpi = f["profile/mpi_time"][:, io]
assert int(np.argmax(mpi)) == 6, mpi
print("synth: counters recorded and unavailable, 10x miss rate on ranks 0-3, rate 1e9/s, rank 6 waits for rank 5")
PY
  set +e
  "$perfsift" synth -o x.h5 --ranks 4 --inject imbalanse:ranks=1 2> err.txt
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q "unknown behaviour 'imbalanse'" err.txt || fail "bad --inject: $(cat err.txt)"
  ;;
rootcauses)
  # A cache-heavy region (40x misses) and an I/O-heavy one (10 MB per iteration at 1 GB/s):
  # both disparity bottlenecks, each with its own cause.
  "$perfsift" synth -o rc.h5 --ranks 8 --regions setup,solve,solve/smooth,solve/restrict,io,halo --events-per-rank 400 \
    --counters PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_DCM,PAPI_L2_TCM --inject cache-miss:region=solve/smooth,ranks=all,factor=40 \
    --inject io:region=io,ranks=all,bytes=1e7
  mpirun -n 2 "$perfsift" analyze rc.h5 -o rc-results.h5 --json rc.json > rc.txt
  cat rc.txt
  $py - <<'PY'
import json
d = json.load(open("rc.json"))
assert sorted(d["disparity"]["cccr"]) == ["io", "solve/smooth"], d["disparity"]
per = d["rootcause"]["disparity"]["per_region"]
assert per["io"] == ["heavy disk I/O"], per
assert "high L2 miss rate (misses per instruction)" in per["solve/smooth"], per
causes = {f["where"]: f["cause"] for f in d["findings"] if f["kind"] == "disparity"}
assert "root cause: heavy disk I/O" in causes["io"] and "L2 miss rate" in causes["solve/smooth"], causes
print("root causes: io -> heavy disk I/O; solve/smooth -> high L1 and L2 miss rates")
PY
  ;;
commbound)
  # 20 MB ring messages (4 ms each at 5 GB/s) against 1-4 ms of computation: every rank
  # is communication-bound; no imbalance is injected, none may be reported.
  "$perfsift" synth -o c.h5 --ranks 8 --regions 4 --events-per-rank 400 --message-bytes 20000000
  mpirun -n 2 "$perfsift" analyze c.h5 -o c-results.h5 --json c.json > c.txt
  $py -c '
import json, sys
d = json.load(open(sys.argv[1]))
kinds = [f["kind"] for f in d["findings"]]
assert kinds[0] == "mpi-time" and not {"load-imbalance", "dissimilarity"} & set(kinds), kinds
assert d["dissimilarity"]["clusters"] == [list(range(8))], d["dissimilarity"]["clusters"]
f = d["findings"][0]
assert f["where"] == "(program)" and f["ranks"] == "0-7", f
print("communication-bound run: mpi-time first on ranks 0-7, lost %.3f s; one rank cluster" % f["lost_s"])' c.json
  ;;
missing)
  "$perfsift" synth -o m.h5 --ranks 6 --regions 4 --events-per-rank 500 --inject missing:ranks=3
  mpirun -n 2 "$perfsift" analyze m.h5 -o m-results.h5 --json m.json > m.txt 2> m.err
  cat m.err
  grep -q "warning: ranks 3 have no data" m.err || fail "no warning for the missing rank"
  grep -q "warning: ranks 3 have no data" m.txt || fail "the report does not name the missing rank"
  $py "$here/check_results.py" missing m.json 3 6
  ;;
corrupt)
  "$perfsift" synth -o good.h5 --ranks 4 --regions 3 --events-per-rank 2000
  size=$(stat -c %s good.h5)
  head -c $((size / 2)) good.h5 > truncated.h5
  echo "not a store" > foreign.h5
  for bad in truncated.h5 foreign.h5 absent.h5; do
    set +e
    mpirun -n 2 "$perfsift" analyze $bad -o out.h5 > out.txt 2> err.txt
    rc=$?
    set -e
    [ $rc -ne 0 ] || fail "$bad: exit code 0"
    [ "$(grep -c "^perfsift:" err.txt)" -eq 1 ] || { cat err.txt; fail "$bad: expected one error line"; }
    grep -q "^perfsift: .*$bad" err.txt || { cat err.txt; fail "$bad: the error does not name the file"; }
    err=$(grep "^perfsift:" err.txt)
    ls out.h5* 2>/dev/null && fail "$bad: output written"
    echo "$bad: $err"
  done
  printf '[profil]\nmin_waste_share = 0.1\n' > stage.toml
  printf '[profile]\nmin_waste_shar = 0.1\n' > key.toml
  printf '[profile]\nmin_waste_share = "big"\n' > type.toml
  printf '[profile]\nmin_waste_share = 3.0\n' > range.toml
  printf '[pipeline]\nstages = ["profile", "replya"]\n' > list.toml
  expect() {  # file, exact message
    set +e
    mpirun -n 2 "$perfsift" analyze good.h5 -c "$1" -o out.h5 > out.txt 2> err.txt
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "$1: exit code $rc, expected 2"
    [ "$(grep "^perfsift:" err.txt)" = "$2" ] || fail "$1: got '$(cat err.txt)', expected '$2'"
    [ "$(grep -c "^perfsift:" err.txt)" = 1 ] || fail "$1: more than one line"
    ls out.h5* 2>/dev/null && fail "$1: output written"
    "$perfsift" config check "$1" 2> check.txt && fail "config check accepted $1"
    [ "$(cat check.txt)" = "$2" ] || fail "config check $1: '$(cat check.txt)'"
    echo "$1: $2"
  }
  # The first chunk of events overwritten in its middle: found while analysing; exit 2,
  # no output.
  cp good.h5 garbled.h5
  $py - <<'PY'
import h5py
with h5py.File("garbled.h5", "r") as f:
    info = f["events"].id.get_chunk_info(0)
with open("garbled.h5", "r+b") as out:
    out.seek(info.byte_offset + info.size // 2)
    out.write(b"\xff" * 256)
PY
  set +e
  mpirun -n 2 "$perfsift" analyze garbled.h5 -o out.h5 > out.txt 2> err.txt
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "garbled.h5: exit code 0"
  grep -q "^perfsift: .*garbled.h5: .*corrupt" err.txt || { cat err.txt; fail "garbled.h5: no error naming the file"; }
  ls out.h5* 2>/dev/null && fail "garbled.h5: output written"
  echo "garbled.h5: $(grep "^perfsift:" err.txt | head -1)"
  expect stage.toml "perfsift: stage.toml:1:2: unknown stage 'profil'; did you mean 'profile'? (\`perfsift stages\` lists every stage and its keys)"
  expect key.toml "perfsift: key.toml:2:1: unknown key 'profile.min_waste_shar'; did you mean 'profile.min_waste_share'? (\`perfsift stages\` lists every key)"
  expect type.toml "perfsift: type.toml:2:19: key 'profile.min_waste_share' must be float, e.g. profile.min_waste_share = 0.05"
  expect range.toml "perfsift: range.toml:2:19: key 'profile.min_waste_share' is 3; it must be between 0 and 1 (report a region whose imbalance wastes at least this share of the run (wall time without MPI start-up))"
  expect list.toml "perfsift: list.toml:2:10: unknown stage 'replya' in pipeline.stages; did you mean 'profile'? (\`perfsift stages\` lists every stage)"
  printf '[profile]\nmin_waste_share = 0.2\n' > ok.toml
  # Whole outputs first: `grep -q` stops reading early, and pipefail would see SIGPIPE.
  checked=$("$perfsift" config check ok.toml)
  grep -q "valid; stages: profile" <<<"$checked" || fail "config check: $checked"
  listing=$("$perfsift" stages)
  grep -q "min_waste_share (float, default 0.05)" <<<"$listing" || fail "perfsift stages lacks profile.min_waste_share"
  ;;
nested_sleep)
  # The same program as an uninstrumented binary: call-site regions (wall time; the
  # work here is sleeping, which oversubscription does not blur).
  printf '[dissimilarity]\nregions = "call-sites"\n' > cs.toml
  mpirun -n 2 "$perfsift" analyze "$store" -c cs.toml -o cs.h5 --json cs.json > cs.txt
  cat cs.txt
  $py - <<'PY'
import json
c = json.load(open("cs.json"))["dissimilarity"]
assert c["clusters"] == [[0, 1], [2, 3]] and c["regions_from"].startswith("call sites"), c
assert c["cccr"] and all(p.startswith("compute before #") for p in c["cccr"]), c["cccr"]
print("as an uninstrumented binary (call-site regions): two groups [[0, 1], [2, 3]], CCCR", c["cccr"])
PY
  # Computation outside MPI per user region: sleeping counts, waiting does not.
  printf '[dissimilarity]\nmetric = "comp"\n' > comp.toml
  mpirun -n 2 "$perfsift" analyze "$store" -c comp.toml -o comp.h5 --json comp.json > comp.txt
  $py - <<'PY'
import json
c = json.load(open("comp.json"))["dissimilarity"]
assert c["clusters"] == [[0, 1], [2, 3]] and c["cccr"] == ["solve/smooth"], c
print("metric comp: two groups [[0, 1], [2, 3]], CCCR solve/smooth")
PY
  ;;
nested_imbalance|nested_balanced)
  mpirun -n 2 "$perfsift" analyze "$store" -o r.h5 --json r.json > r.txt
  cat r.txt
  printf '[dissimilarity]\nalgorithm = "optics"\n' > op.toml
  mpirun -n 1 "$perfsift" analyze "$store" -c op.toml -o op1.h5 --json op1.json > op1.txt
  mpirun -n 2 "$perfsift" analyze "$store" -c op.toml -o op2.h5 --json op2.json > op2.txt
  cmp op1.json op2.json || fail "full OPTICS: K=1 and K=2 differ"
  $py "$here/check_results.py" contract r.h5 r.json
  $py - "$mode" <<'PY'
import json, sys
d = json.load(open("r.json"))
dis = d["dissimilarity"]
if sys.argv[1] == "nested_imbalance":
    assert dis["clusters"] == [[0, 1], [2, 3]], dis["clusters"]
    assert dis["cccr"] == ["solve/smooth"] and "solve" in dis["ccr"], dis
    f = [x for x in d["findings"] if x["kind"] == "dissimilarity"]
    assert f and f[0]["where"] == "solve/smooth" and f[0]["ranks"] == "2,3", f
    print("nested imbalance: clusters [[0, 1], [2, 3]], CCR solve, CCCR solve/smooth")
else:
    assert dis["clusters"] == [[0, 1, 2, 3]], dis["clusters"]
    assert dis["ccr"] == [] and not [x for x in d["findings"] if x["kind"] == "dissimilarity"]
    print("balanced: one cluster, no dissimilarity bottleneck")
o = json.load(open("op1.json"))["dissimilarity"]
want = [[0, 1], [2, 3]] if sys.argv[1] == "nested_imbalance" else [[0, 1, 2, 3]]
assert o["clusters"] == want and len(o["optics_ordering"]) == 4, o["clusters"]
print("full OPTICS: the same clusters, identical for K = 1 and 2")
PY
  ;;
real)
  mpirun -n 2 "$perfsift" analyze "$store" -o r.h5 --json r.json > r.txt
  cat r.txt
  $py "$here/check_results.py" contract r.h5 r.json
  # More analysis ranks than application ranks: some own nothing; same results.
  mpirun -n 5 "$perfsift" analyze "$store" -o r5.h5 --json r5.json > r5.txt
  cmp r.json r5.json || fail "K=5 differs from K=2"
  echo "K=5 (some analysis ranks own no application rank): identical results"
  if [ -n "$messages" ]; then
    got=$($py -c 'import json,sys; print(sum(m["messages"] for m in json.load(open(sys.argv[1]))["profile"]["messages"]))' r.json)
    [ "$got" = "$messages" ] || fail "message matrix holds $got messages, expected $messages"
    echo "message matrix: $got messages (blocking, nonblocking, persistent, Sendrecv)"
  fi
  ;;
whatif)
  # The arithmetic of the compositing app, with the measured computation of each rank
  # and stage (nominally (8 + 8 (r % 3)) / 2^s ms): pairs (0,1),(2,3) exchange, compute,
  # then pairs (0,2),(1,3); the run ends when the last rank finishes stage 1.
  q1="balance step 1 of composite and ideal-network"
  for k in 1 2 4; do
    mpirun -n $k "$perfsift" analyze "$store" -o k$k.h5 --json k$k.json --whatif "$q1" > k$k.txt
  done
  cat k2.txt
  for k in 2 4; do cmp k1.json k$k.json || fail "K=$k differs from K=1"; done
  echo "identical results for K = 1, 2, 4"
  $py "$here/check_results.py" contract k2.h5 k2.json
  $py "$here/check_results.py" whatif k2.json 0.05
  $py - "$store" > expected.txt <<'PY'
import h5py, sys
import numpy as np
f = h5py.File(sys.argv[1], "r")
paths = [p.decode() if isinstance(p, bytes) else p for p in f["regions"]["path"][...]]
ops = [o.decode() if isinstance(o, bytes) else o for o in f["ops"][...]]
composite = paths.index("composite")
so, eo = f["steps_offsets"][...], f["events_offsets"][...]
steps, events = f["steps"][...], f["events"][...]
n = 4
start, comp = [0] * n, [[0, 0] for _ in range(n)]
for r in range(n):
    ev = events[eo[r]:eo[r + 1]]
    sr = [e for e in ev if ops[e["op"]] == "MPI_Sendrecv"]
    start[r] = int(sr[0]["t_enter"])
    for x in steps[so[r]:so[r + 1]]:
        if x["region"] == composite:
            s = int(x["step"])
            comp[r][s] = int(x["t_end"] - x["t_begin"]) - int(sr[s]["t_exit"] - sr[s]["t_enter"])
def end(c):
    e0 = [max(start[r], start[r ^ 1]) + c[r][0] for r in range(n)]
    return max(max(e0[r], e0[r ^ 2]) + c[r][1] for r in range(n))
base = end(comp)
for name, stages in (("balance step 0 of composite", [0]), ("balance step 1 of composite", [1]), ("balance steps of composite", [0, 1])):
    c = [row[:] for row in comp]
    for s in stages:
        m = sum(c[r][s] for r in range(n)) / n
        for r in range(n):
            c[r][s] = m
    print(f"{name}\t{(base - end(c)) * 1e-9:.6f}")
PY
  while IFS=$'\t' read -r question expected; do
    $py "$here/check_results.py" gain k2.json "$question" "$expected" 0.001
  done < expected.txt
  $py - k2.json "$q1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
user = [q for q in d["whatif"] if q["origin"] == "user"]
assert [q["question"] for q in user] == [sys.argv[2]], user
# The step-1 balance and a free network: the replay is monotone, so at least the balance's gain.
step1 = [q for q in d["whatif"] if q["question"] == "balance step 1 of composite"][0]
assert user[0]["gain_s"] >= step1["gain_s"] - 1e-9, (user[0], step1)
priced = [f for f in d["findings"] if f["predicted_gain_s"] is not None]
assert priced, "no finding was priced"
assert d["findings"][0]["predicted_gain_s"] is not None, "findings are not ranked by predicted gain"
# Domino paths exist only where some wait holds up the end (start-up skew can decide it).
paths = [p for p in d["domino"] if p["kind"] == "domino"]
base = d["whatif"][0]["predicted_s"]
assert all(p["predicted_s"] <= base for p in paths), d["domino"]
assert not paths or any(p["reaches_best"] for p in paths), d["domino"]
assert any(p["kind"] == "longest-wait" for p in d["domino"])
b = d["bounds"]["composite"]
assert b["steps"] == 2 and b["Q1 and Q2 and Q3"] <= b["none"], b
print(f"user question priced ({user[0]['gain_s'] * 1e3:.2f} ms), {len(priced)} findings priced, "
      f"{len(paths)} domino paths, composite bounds {b['none'] * 1e3:.1f} -> {b['Q1 and Q2 and Q3'] * 1e3:.1f} ms")
PY
  # Predicted traces: Chrome JSON (Perfetto) and OTF2 (otf2-print reads it).
  "$perfsift" export k2.h5 -o base.json
  "$perfsift" export k2.h5 --question "$q1" -o q1.json
  "$perfsift" export k2.h5 --question "$q1" --format otf2 -o q1.otf2
  $py - base.json q1.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    ev = json.load(open(f))["traceEvents"]
    mpi = [e for e in ev if e.get("cat") == "mpi"]
    assert len({e["tid"] for e in mpi}) == 4 and any(e["name"] == "MPI_Sendrecv" for e in mpi), f
end = [max(e["ts"] + e["dur"] for e in json.load(open(f))["traceEvents"] if e.get("ph") == "X") for f in sys.argv[1:]]
assert end[1] < end[0], f"the balanced prediction should end earlier: {end}"
print(f"chrome traces: baseline ends {end[0] / 1e3:.1f} ms, question ends {end[1] / 1e3:.1f} ms")
PY
  out=$(otf2-print q1.otf2/traces.otf2)
  n=$(grep -c 'MPI_Sendrecv' <<< "$out" || true)
  [ "$n" -ge 16 ] || fail "otf2-print shows $n MPI_Sendrecv records, expected 16 (8 enter + 8 leave)"
  echo "otf2-print reads the archive: $n MPI_Sendrecv enter/leave records"
  # Bad questions: one line naming the question and the fix, exit 2, no output file.
  for bad in "balance stpe 1 of composite" "balance step 1 of compost" "zero-wait" "balance event 1:2"; do
    set +e
    mpirun -n 2 "$perfsift" analyze "$store" -o bad.h5 --whatif "$bad" > /dev/null 2> err.txt
    rc=$?
    set -e
    [ $rc -eq 2 ] || fail "--whatif '$bad': exit $rc, expected 2"
    [ "$(grep -c "^perfsift:" err.txt)" -eq 1 ] || fail "--whatif '$bad': expected one line, got: $(cat err.txt)"
    msg=$(grep "^perfsift:" err.txt)
    [ ! -e bad.h5 ] || fail "--whatif '$bad' left an output file"
    echo "rejected: $msg"
  done
  ;;
baselines)
  # LogGPS measured here; then the tests/apps programs, collected here one at a time (a
  # run that shares the cores with other tests measures the scheduler, not MPI), each
  # replay within 5 % of its measured time. A run the machine disturbed anyway (an error
  # beyond 5 %) is collected again, up to three times: the latency-bound spill ring (40,000
  # messages of a few us) was disturbed twice running in one CI run (-5 %, then -25 %
  # with the run 2.4 times its usual length). A replay that is wrong fails every time.
  apps=$store   # the directory holding the app_* executables
  "$perfsift" calibrate -o loggps.toml -- mpirun -n 2
  cat loggps.toml
  printf '[whatif]\nloggps = "%s"\nstandard_questions = false\n[pipeline]\nstages = ["profile", "whatif"]\n' "$PWD/loggps.toml" > p.toml
  n=0
  while read -r name ranks app args; do
    for attempt in 1 2 3; do
      [ "$name" = spill ] && export PERFSIFT_BUFFER_MB=1
      # stdin from /dev/null: mpirun would read the list this loop reads.
      "$perfsift" collect -o "$name.h5" -- mpirun -n "$ranks" "$apps/$app" $args < /dev/null > "$name.collect.txt" 2>&1 || { cat "$name.collect.txt"; fail "$name: collection failed"; }
      unset PERFSIFT_BUFFER_MB
      mpirun -n 2 "$perfsift" analyze "$name.h5" -c p.toml -o "$name.r.h5" --json "$name.json" < /dev/null > "$name.txt" 2> "$name.err" || { cat "$name.err"; fail "$name: analyze failed"; }
      echo -n "$name (run $attempt): "
      if $py "$here/check_results.py" whatif "$name.json" 0.05; then break; fi
      [ $attempt = 3 ] && fail "$name: the baseline replay is off by more than 5 % in three runs"
    done
    n=$((n + 1))
  done <<'APPS'
ring 4 app_ring
late_sender 2 app_late_sender
late_receiver 2 app_late_receiver
wait_barrier 3 app_wait_barrier
master_worker 3 app_master_worker
wavefront 4 app_wavefront
binary_swap 4 app_binary_swap
families 4 app_families
nested 3 app_nested
nested_sleep 4 app_nested_imbalance sleep
ring_fortran 4 app_ring_f
spill 2 app_ring 20000 8
APPS
  [ $n -eq 12 ] || fail "only $n of 12 apps were checked"
  echo "$n apps replay within 5 %"
  ;;
apart)
  apps=$store
  # The tree must have learnt the classes (the paper: 87.5 % on its training data). A machine
  # busy with other work blurs the default 0.5-2 ms delays (87 % with one busy loop on this
  # VM's two cores; train then warns): the second training injects 5-10 ms instead (96 %).
  delays=()
  for attempt in 1 2; do
    "$perfsift" train -o classifier.model "${delays[@]}" -- mpirun -n 2 < /dev/null > train.txt 2>&1 || { cat train.txt; fail "perfsift train failed"; }
    cat train.txt
    cv=$(awk '/10-fold cross-validation +[0-9]/ {sub("%", "", $3); print $3; exit}' train.txt)
    $py -c "import sys; sys.exit(0 if float('$cv') >= 90 else 1)" && break
    [ $attempt = 2 ] && fail "10-fold cross-validation accuracy $cv % < 90 % in two trainings"
    delays=(--min-delay-us 5000 --delay-variance-us 5000)
  done
  printf '[classify]\nmodel = "%s"\n' "$PWD/classifier.model" > p.toml
  n=0
  # Ranks per property: 4 on the 2 cores, except `none`. When all four wake at once, two
  # wait for a core behind two polling ranks, and that is real waiting of 2-20 ms per run
  # (measured here with the old and the new app alike), not an injected property; with one
  # rank per core there is none to find.
  while read -r prop ranks class; do
    for attempt in 1 2; do
      "$perfsift" collect -o "$prop.h5" -- mpirun -n "$ranks" "$apps/app_apart" "$prop" < /dev/null > "$prop.collect.txt" 2>&1 || { cat "$prop.collect.txt"; fail "$prop: collection failed"; }
      mpirun -n 2 "$perfsift" analyze "$prop.h5" -c p.toml -o "$prop.r.h5" --json "$prop.json" < /dev/null > "$prop.txt" 2> "$prop.err" || { cat "$prop.err"; fail "$prop: analyze failed"; }
      # A run the shared machine disturbed (a rank descheduled for tens of ms) is collected once more.
      if $py "$here/check_results.py" apart "$prop.json" "$prop" "$ranks" $class; then break; fi
      [ $attempt = 2 ] && fail "$prop: wrong in two runs"
    done
    n=$((n + 1))
  done <<'PROPS'
late_sender 4 late_send
late_receiver 4 late_recv
wrong_order 4 late_send,late_recv
imbalance_at_mpi_barrier 4
imbalance_at_mpi_alltoall 4
late_broadcast 4
early_reduce 4
sendrecv_pair 4 late_send,late_recv
sendrecv_ring 4 normal,late_send,late_recv
none 2
PROPS
  [ $n -eq 10 ] || fail "only $n of 10 properties were checked"
  # Any number of analysis ranks gives the same classes, counts and sums (the ring's Late
  # Receivers meet their call's Late Sender at the sender's owner).
  for prop in late_sender sendrecv_ring; do
    mpirun -n 1 "$perfsift" analyze $prop.h5 -c p.toml -o k1.r.h5 --json k1.json < /dev/null > /dev/null
    mpirun -n 3 "$perfsift" analyze $prop.h5 -c p.toml -o k3.r.h5 --json k3.json < /dev/null > /dev/null
    $py -c "import json, sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); sys.exit(0 if all(a[k] == b[k] for k in ('classification', 'waitstates', 'findings')) else 1)" k1.json k3.json \
      || fail "$prop: K = 1 and K = 3 analysis ranks disagree on classes or wait states"
  done
  # The text report shows both stages.
  grep -q "Wait states (Scalasca patterns): late_sender" late_sender.txt || fail "no wait states in the text report"
  grep -q "Message classes (Vetter)" late_sender.txt || fail "no message classes in the text report"
  # Rank 0's clock 300 ms ahead: its three sends "start" after rank 1 received them.
  cp late_sender.h5 skewed.h5
  $py - <<'PY'
import h5py
with h5py.File("skewed.h5", "r+") as f:
    ev, off = f["events"], f["events_offsets"]
    rows = ev[off[0]:off[1]]
    rows["t_enter"] += 300_000_000
    rows["t_exit"] += 300_000_000
    ev[off[0]:off[1]] = rows
PY
  mpirun -n 2 "$perfsift" analyze skewed.h5 -c p.toml -o skewed.r.h5 --json skewed.json > /dev/null 2>&1 || fail "analyze failed on a skewed store"
  $py -c "import json, sys; d = json.load(open('skewed.json')); v = d['waitstates']['clock_violations']; print('skewed clocks:', v); sys.exit(0 if v['p2p'] == 3 and abs(v['max_s'] - 0.3) < 0.05 and any('clocks disagree' in w for w in d['warnings']) else 1)" \
    || fail "clock-condition violations not reported"
  # Another platform: a warning, still a result.
  cp late_sender.h5 elsewhere.h5
  $py -c "import h5py; f = h5py.File('elsewhere.h5', 'r+'); f.attrs['hosts'] = 'node001,node002'"
  "$perfsift" analyze elsewhere.h5 -c p.toml -o elsewhere.r.h5 --json elsewhere.json > /dev/null 2>&1 || fail "analyze failed on a store from another platform"
  $py -c "import json, sys; w = json.load(open('elsewhere.json'))['warnings']; sys.exit(0 if any('trained on' in x and 'node[0-9]+' in x for x in w) else 1)" || fail "no platform warning"
  # A file that is not a model: one line naming it, exit 2, no results file.
  echo "not a model" > bad.model
  printf '[classify]\nmodel = "%s"\n' "$PWD/bad.model" > bad.toml
  set +e
  "$perfsift" analyze late_sender.h5 -c bad.toml -o bad.r.h5 > bad.txt 2>&1; rc=$?
  set -e
  [ $rc -eq 2 ] || fail "a bad model gave exit code $rc"
  [ "$(wc -l < bad.txt)" -eq 1 ] && grep -q "bad.model: line 1: not a perfsift classifier model" bad.txt || { cat bad.txt; fail "bad model message"; }
  [ ! -e bad.r.h5 ] || fail "a results file was written with a bad model"
  echo "$n APART properties found where injected, within 20 %; classifier trained at $cv % (10-fold)"
  ;;
hercule)
  apps=$store
  # Master-worker: rank 0 sets up each task for 4 s ms, workers compute 10 s ms (tests/apps/master_worker.c).
  "$perfsift" collect -o mw.h5 -- mpirun -n 4 "$apps/app_master_worker" < /dev/null > mw.collect.txt 2>&1 || { cat mw.collect.txt; fail "collection failed"; }
  mpirun -n 2 "$perfsift" analyze mw.h5 -o mw.r.h5 --json mw.json > mw.txt 2> mw.err || { cat mw.err; fail "analyze failed"; }
  $py "$here/check_results.py" master_worker mw.json 0
  grep -q "Model diagnosis (Hercule): master-worker" mw.txt || fail "no diagnosis in the text report"
  # Wavefront on a 2 x 2 and a 2 x 4 grid (tests/apps/wavefront.c); the deeper one relative to the other.
  # Sleep-based apps on a shared machine: a disturbed run is collected once more.
  for attempt in 1 2; do
    for n in 4 8; do
      "$perfsift" collect -o wf$n.h5 -- mpirun -n $n "$apps/app_wavefront" < /dev/null > wf$n.collect.txt 2>&1 || { cat wf$n.collect.txt; fail "wavefront $n: collection failed"; }
    done
    mpirun -n 2 "$perfsift" analyze wf4.h5 -o wf4.r.h5 --json wf4.json > wf4.txt 2>&1 || { cat wf4.txt; fail "wavefront 4: analyze failed"; }
    mpirun -n 2 "$perfsift" analyze wf8.h5 --reference wf4.h5 -o wf8.r.h5 --json wf8.json > wf8.txt 2>&1 || { cat wf8.txt; fail "wavefront 8: analyze failed"; }
    if $py "$here/check_results.py" wavefront wf8.json wf4.json; then break; fi
    [ $attempt = 2 ] && fail "wavefront: wrong in two runs"
  done
  grep -q "against wf4.h5 (weak scaling): the increase of pipeline depth" wf8.txt || fail "no relative diagnosis in the text report"
  # Divide and conquer (tests/apps/divide_conquer.c), and binary-swap compositing, a recursive halving too.
  for attempt in 1 2; do
    "$perfsift" collect -o dc.h5 -- mpirun -n 4 "$apps/app_divide_conquer" < /dev/null > dc.collect.txt 2>&1 || { cat dc.collect.txt; fail "divide_conquer: collection failed"; }
    mpirun -n 2 "$perfsift" analyze dc.h5 -o dc.r.h5 --json dc.json > dc.txt 2>&1 || { cat dc.txt; fail "divide_conquer: analyze failed"; }
    if $py "$here/check_results.py" divide_conquer dc.r.h5 dc.json; then break; fi
    [ $attempt = 2 ] && fail "divide_conquer: wrong in two runs"
  done
  # Each program is taken for its own model, and a ring for none.
  for case in "ring none" "binary_swap divide-and-conquer"; do
    set -- $case
    "$perfsift" collect -o $1.h5 -- mpirun -n 4 "$apps/app_$1" < /dev/null > /dev/null 2>&1 || fail "$1: collection failed"
    mpirun -n 2 "$perfsift" analyze $1.h5 -o $1.r.h5 --json $1.json > /dev/null 2>&1 || fail "$1: analyze failed"
    $py -c "import json, sys; d = json.load(open('$1.json'))['diagnosis']; sys.exit(0 if [x['model'] for x in d] == ([] if '$2' == 'none' else ['$2']) else 1)" \
      || fail "$1 not diagnosed as $2"
  done
  # Events mapped to the app's regions give the same split; a region the store lacks stops at set-up.
  printf '[diagnosis]\nevents = ["Setup=master_setup", "Compute=worker_compute"]\n' > ev.toml
  mpirun -n 2 "$perfsift" analyze mw.h5 -c ev.toml -o ev.r.h5 --json ev.json > /dev/null 2>&1 || fail "analyze with mapped events failed"
  $py -c "
import json, sys
a, b = (json.load(open(f))['diagnosis'][0]['metrics'] for f in ('mw.json', 'ev.json'))
print(f\"mapped events: setup {b['all_t_w_setup_s'] * 1e3:.1f} ms (derived {a['all_t_w_setup_s'] * 1e3:.1f} ms), waiting {b['all_t_wait_s'] * 1e3:.1f} ms\")
sys.exit(0 if abs(b['all_t_w_setup_s'] - a['all_t_w_setup_s']) <= 0.1 * a['all_t_w_setup_s'] and abs(b['all_t_wait_s'] - a['all_t_wait_s']) <= 1e-6 else 1)" \
    || fail "mapped setup region disagrees with the derived setup"
  printf '[diagnosis]\nevents = ["Setup=master_stup"]\n' > ev2.toml
  set +e
  "$perfsift" analyze mw.h5 -c ev2.toml -o ev2.r.h5 > ev2.txt 2>&1; rc=$?
  set -e
  [ $rc -eq 2 ] && [ "$(wc -l < ev2.txt)" -eq 1 ] && grep -q "no region 'master_stup'" ev2.txt || { cat ev2.txt; fail "a mapping to a missing region: exit $rc"; }
  # --model none skips; a knowledge file with an unknown metric stops at set-up: one line, exit 2.
  "$perfsift" analyze mw.h5 --model none -o none.r.h5 --json none.json > /dev/null 2>&1
  $py -c "import json, sys; sys.exit(0 if json.load(open('none.json'))['diagnosis'] == [] else 1)" || fail "--model none still diagnosed"
  mkdir -p kb
  sed 's/^id = "t_w-bn"/id = "t_w-bottleneck"/' "$here/../../pipeline/models/master-worker.toml" > kb/master-worker.toml
  printf '[diagnosis]\nknowledge = "%s"\n' "$PWD/kb" > kb.toml
  set +e
  "$perfsift" analyze mw.h5 -c kb.toml -o kb.r.h5 > kb.txt 2>&1; rc=$?
  set -e
  [ $rc -eq 2 ] && [ "$(wc -l < kb.txt)" -eq 1 ] && grep -q "kb/master-worker.toml:[0-9]*:[0-9]*: perfsift cannot compute metric 't_w-bottleneck'" kb.txt \
    || { cat kb.txt; fail "a bad knowledge file: exit $rc"; }
  [ ! -e kb.r.h5 ] || fail "results written with a bad knowledge file"
  # A knowledge file can change the texts: the narrative follows it.
  sed 's/is least utilized, whose efficiency is/is the least busy worker, efficiency/' "$here/../../pipeline/models/master-worker.toml" > kb/master-worker.toml
  "$perfsift" analyze mw.h5 -c kb.toml -o kb.r.h5 --json kb.json > /dev/null 2>&1 || fail "analyze with an edited knowledge file failed"
  grep -q "is the least busy worker, efficiency" kb.json || fail "the edited text is not in the narrative"
  echo "hercule: master-worker, wavefront and divide-and-conquer recognised and explained; binary swap is divide-and-conquer, a ring none; knowledge files checked"
  ;;
*) fail "unknown mode $mode" ;;
esac
echo PASS
