#!/usr/bin/python3
"""Root causes without hardware counters, under real mpirun.

usage: os_counters_test.py MODE PERFSIFT WORK_DIR [APP | STORE]

  collect    perfsift collect of tests/apps/os_waits.c on 4 ranks (APP), into
             WORK_DIR/os_waits.h5; the store holds the OS's figures per region; perfsift
             analyze names minor page faults for `faulting` (ranks 0,1) and involuntary
             context switches for `descheduled` (ranks 2,3).
  old_layout the store of `collect` (STORE) marked as of the versions before and after
             its own: both refused in one line (docs/trace-store.md,
             "Compatibility"). The same store with its OS figures zero (as an imported
             one holds them) and a synthetic store analyse; rootcause names the OS
             attributes as lacking data; disparity falls back to the wall-time share.
             That synthetic store's profile made into known cases: page faults that
             follow the busier ranks' work are no root cause, faults at four times the
             rate are.

Run with Debian's /usr/bin/python3, which has h5py. Structure, not timing: the machine
may be shared, so the checks compare the two rank groups, never a duration.
"""
import json
import os
import shutil
import sys
from pathlib import Path

import h5py
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import check_results as cr  # noqa: E402  tests/mpi/check_results.py
import harness  # noqa: E402  tests/harness.py
from harness import STDOUT  # noqa: E402

OS_METRICS = ["thread_cpu", "ctx_switches_voluntary", "ctx_switches_involuntary", "page_faults_minor",
              "page_faults_major", "max_rss_growth"]
OS_ATTRIBUTES = ["involuntary context switches per second", "voluntary context switches per second",
                 "major page faults per second outside MPI", "minor page faults per second outside MPI", "time off the CPU", "memory growth"]


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def region_column(f, path):
    paths = [p.decode() if isinstance(p, bytes) else p for p in f["regions/path"][:]]
    check(path in paths, f"no region {path} in {paths}")
    return paths.index(path)


def text_list(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def ranks_of(text):
    """'0,2-3' -> {0, 2, 3}; 'all' and None -> {}."""
    out = set()
    for part in (text or "").split(","):
        if part and part != "all":
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return out


def analyse(perfsift, store, name):
    # Rank vectors by CPU time (the busy threads' CPU counts to their process): "auto"
    # takes wall time when a loaded machine keeps CPU time far below the computation's.
    Path("cpu.toml").write_text('[dissimilarity]\nmetric = "cpu"\n')
    perfsift.analyze(store, f"{name}.h5", "-c", "cpu.toml", "--json", f"{name}.json", out=f"{name}.txt", err=STDOUT,
                     echo=True)
    print(Path(f"{name}.txt").read_text(errors="replace"), end="")
    cr.contract(f"{name}.h5", f"{name}.json")
    with open(f"{name}.json") as j:
        d = json.load(j)
    with h5py.File(f"{name}.h5", "r") as f:
        a = f["rootcause"].attrs
        attrs = {"attributes": text_list(a["attributes"]), "dropped": text_list(a.get("dropped", [])),
                 "fallback": f["disparity"].attrs["fallback"], "measure": f["disparity"].attrs["measure"]}
    attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
    return d, attrs


def test_collect(perfsift, app):
    """The known answers below. Their rank groups come from the CPU time of a few hundred ms
    of page faults: a process left running by an earlier test that takes a core for a second
    splits the two faulting ranks (seen in full test runs, never alone). A disturbed run is
    collected again, three times at most."""
    for attempt in (1, 2, 3):
        try:
            return collect_and_check(perfsift, app)
        except AssertionError as e:
            if attempt == 3:
                raise
            print(f"FAIL (attempt {attempt} of 3, collected again): {e}", flush=True)


def collect_and_check(perfsift, app):
    store = "os_waits.h5"
    perfsift.collect(store, 4, app, out="collect.txt", err=STDOUT, echo=True)
    with h5py.File(store, "r") as f:
        for m in OS_METRICS:
            check(m in f["profile"], f"/profile/{m} missing: {list(f['profile'])}")
        units = {m: f[f"profile/{m}"].attrs.get("units", b"") for m in OS_METRICS}
        print("units:", units)
        flt, dsc = region_column(f, "iteration/faulting"), region_column(f, "iteration/descheduled")
        prof = {m: f[f"profile/{m}"][:] for m in OS_METRICS + ["wall", "cpu"]}
        steps, step_offsets = f["steps"][:], f["steps_offsets"][:]
    # A region's wall time is its executions' (the steps') summed, on descheduled ranks
    # too: both come from one clock, whatever the load when the tick ratio was measured.
    for r in range(len(step_offsets) - 1):
        mine = steps[step_offsets[r]:step_offsets[r + 1]]
        for g in range(1, prof["wall"].shape[1]):
            executions = mine[mine["region"] == g]
            summed = float(np.sum(executions["t_end"] - executions["t_begin"])) * 1e-9
            check(abs(prof["wall"][r, g] - summed) <= 1e-3 * summed + 1e-5 * max(1, len(executions)),
                  f"rank {r} region {g}: wall {prof['wall'][r, g]} s against its executions' {summed} s")
    minor = prof["page_faults_minor"][:, flt]
    invol = prof["ctx_switches_involuntary"][:, dsc]
    tcpu, wall = prof["thread_cpu"], prof["wall"]
    print("faulting: minor faults per rank", minor, "; descheduled: involuntary switches per rank", invol)
    print("descheduled: wall per rank", wall[:, dsc], "thread CPU / wall", tcpu[:, dsc] / wall[:, dsc])
    # 3 iterations x 6 passes over 4096 pages of 4 KiB, released after each pass (the
    # first pass finds them resident)
    faults = (3 * 6 - 1) * 4096
    check(min(minor[:2]) >= faults and max(minor[2:]) < faults / 10, f"minor faults {minor}")
    # Descheduled: off the CPU while runnable, without blocking (other load on the machine
    # deschedules every rank at times: compare the groups, not rates)
    vol = prof["ctx_switches_voluntary"][:, dsc]
    check(min(invol[2:]) >= 10 and sum(invol[2:]) > sum(vol[2:]), f"involuntary {invol}, voluntary {vol}")
    check(np.all(tcpu > 0) and np.all(tcpu[:, 0] <= prof["cpu"][:, 0] + 0.01), "thread CPU time: positive, within the process's")
    check(np.all(prof["max_rss_growth"][:, 0] > 0), "(program): the resident-set high-water mark grew")
    check(np.all(prof["max_rss_growth"][:, flt] < 8 << 20), f"faulting grew memory {prof['max_rss_growth'][:, flt]}")
    # descheduled ranks spend most of the region off the CPU (three busy threads share it)
    check(max(tcpu[2:, dsc] / wall[2:, dsc]) < min(tcpu[:2, dsc] / wall[:2, dsc]), "CPU/wall of the descheduled")

    d, attrs = analyse(perfsift, store, "r")
    print("rootcause attributes:", attrs)
    for a in OS_ATTRIBUTES:
        check(a in attrs["attributes"], f"{a} not among the attributes {attrs['attributes']}")
    check(not any(a in " ".join(attrs["dropped"]) for a in OS_ATTRIBUTES), attrs["dropped"])
    check("thread-CPU" in attrs["measure"], attrs)
    # Disparity without CPI: mean over ranks of wall share x wall per thread-CPU second (1..10)
    with h5py.File(store, "r") as f, h5py.File("r.h5", "r") as r:
        paths = text_list(f["regions/path"][:])
        wall, tcpu = f["profile/wall"][:], f["profile/thread_cpu"][:]
        crnm = dict(zip(text_list(r["disparity/regions/path"][:]), r["disparity/regions/crnm"][:]))
    for g, path in enumerate(paths[1:], 1):
        want = np.mean(wall[:, g] / wall[:, 0] * np.clip(wall[:, g] / tcpu[:, g], 1, 10))
        check(abs(crnm[path] - want) <= 1e-9 + 1e-6 * want, f"disparity CRNM of {path}: {crnm[path]}, want {want}")
    dis = d["dissimilarity"]
    check(dis["clusters"] == [[0, 1], [2, 3]], dis["clusters"])
    check(sorted(dis["cccr"]) == ["iteration/descheduled", "iteration/faulting"], dis["cccr"])
    # The slow ranks of each region, as the methods report them (findings or notes: the
    # imbalance notes may name the slowest rank of the group alone): within the group.
    where = {}
    for x in cr.reported(d):
        where.setdefault(x["where"], set()).update(ranks_of(x.get("ranks")))
    print("reported ranks per region:", where)
    check(where.get("iteration/faulting") and where["iteration/faulting"] <= {0, 1}, where)
    check(where.get("iteration/descheduled") and where["iteration/descheduled"] <= {2, 3}, where)
    per = {r["path"]: r["causes"] for r in d["rootcause"]["dissimilarity_per_region"]}
    print("per-region causes:", json.dumps(per, indent=1))
    check("minor page faults" in per["iteration/faulting"], per)
    check("involuntary context switches" in per["iteration/descheduled"], per)
    # by their rate, or by the time off the CPU without blocking ("descheduled while
    # runnable"): which discerns depends on the machine's other load
    check("descheduling" in per["iteration/descheduled"] or "descheduled" in per["iteration/descheduled"], per)
    check("page faults" not in per["iteration/descheduled"], per)
    check("memory growth" not in per["iteration/faulting"] + per["iteration/descheduled"], per)
    text = " ".join(Path("r.txt").read_text(errors="replace").split())  # lines are wrapped
    check("minor page faults per second" in text and "lacking data:" in text, "text report: attributes")
    print("faulting -> minor page faults (ranks 0,1); descheduled -> involuntary context switches (ranks 2,3)")


def refused(perfsift, path, expected):
    """Every command that opens the store says one line naming it and what to do, exit code 2."""
    for args in (["info", path], ["analyze", path, "-o", "refused.h5"]):
        p = harness.captured([perfsift.binary, *args])
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        print("$ perfsift", " ".join(args), "->", p.returncode, lines, flush=True)
        check(p.returncode == 2 and len(lines) == 1, f"{args}: exit code {p.returncode}, stderr {lines}")
        for part in (path, expected, "this perfsift reads trace store version 2", "perfsift collect",
                     "perfsift import"):
            check(part in lines[0], f"{args}: {part!r} not in {lines[0]!r}")
    check(not Path("refused.h5").exists(), "analyze wrote results from a refused store")


def test_old_layout(perfsift, store):
    for other in (1, 3):
        shutil.copy(store, f"version{other}.h5")
        with h5py.File(f"version{other}.h5", "r+") as f:
            f.attrs["version"] = np.int32(other)
        refused(perfsift, f"version{other}.h5", f"trace store version {other};")

    shutil.copy(store, "zero_os.h5")
    with h5py.File("zero_os.h5", "r+") as f:
        for m in OS_METRICS:
            f[f"profile/{m}"][...] = 0
    perfsift("synth", "-o", "synth.h5", "--ranks", 4, "--regions", "solve,io", "--events-per-rank", 200,
             "--inject", "imbalance:region=solve,ranks=2-3,factor=4", err=STDOUT, echo=True)
    for name, path in (("zero_os", "zero_os.h5"), ("synth", "synth.h5")):
        d, attrs = analyse(perfsift, path, name + "-results")
        print(name, "rootcause attributes:", attrs)
        for a in OS_ATTRIBUTES:
            check(a not in attrs["attributes"], f"{name}: {a} among the attributes without OS figures")
            check(any(x.startswith(a + " (") for x in attrs["dropped"]), f"{name}: {a} not named as lacking data")
        check(attrs["measure"] == "wall share (no CPI)", attrs)
        check("lacking data:" in Path(f"{name}-results.txt").read_text(errors="replace"), "text report: lacking data")
    d = json.loads(Path("zero_os-results.json").read_text())
    check(d["dissimilarity"]["clusters"] == [[0, 1], [2, 3]], d["dissimilarity"]["clusters"])
    print("stores of another version are refused; a store without OS figures, and a "
          "synthetic one, analyse; the OS attributes are named as lacking")
    bystander_page_faults(perfsift)


def with_work_and_faults(src, dst, fault_rates):
    """SRC's profile made into a known case: in `solve` ranks 2,3 work 0.4 s and ranks 0,1
    work 0.1 s, then wait 0.3 s in MPI (every rank 0.4 s of wall, on the CPU throughout);
    each rank's minor page faults are its rate x its time outside MPI."""
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        g = text_list(f["regions/path"][:]).index("solve")
        for m in OS_METRICS:
            f[f"profile/{m}"][...] = 0
        cols = {m: f[f"profile/{m}"][...] for m in ("wall", "mpi_time", "cpu", "thread_cpu", "page_faults_minor")}
        for r in range(cols["wall"].shape[0]):
            work = 0.4 if r >= 2 else 0.1
            cell = {"wall": 0.4, "mpi_time": 0.4 - work, "cpu": work, "thread_cpu": 0.4,
                    "page_faults_minor": fault_rates[r] * work}
            for m, v in cell.items():
                cols[m][r, 0] += v - cols[m][r, g]  # the program holds the region
                cols[m][r, g] = v
        for m, v in cols.items():
            f[f"profile/{m}"][...] = v


def bystander_page_faults(perfsift):
    # Ranks that fault at the same rate while they work, the busier ranks more often: the
    # faults follow the work, they do not cause it (per second of wall time they differ
    # 4:1). Faulting four times as fast while working is a cause.
    for name, rates, cause in (("bystander", [2e4] * 4, False), ("faulting", [2e4, 2e4, 8e4, 8e4], True)):
        with_work_and_faults("synth.h5", f"{name}.h5", rates)
        d, _ = analyse(perfsift, f"{name}.h5", name + "-results")
        check(d["dissimilarity"]["clusters"] == [[0, 1], [2, 3]], d["dissimilarity"]["clusters"])
        per = {r["path"]: r["causes"] for r in d["rootcause"]["dissimilarity_per_region"]}
        check(("minor page faults" in per.get("solve", "")) == cause, f"{name}: causes of solve {per}")
    print("page faults that follow the work are no cause of it; faults at four times the rate are")


def main(argv):
    if len(argv) < 5 or argv[1] not in ("collect", "old_layout"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, perfsift, work, arg = argv[1], harness.Perfsift(os.path.abspath(argv[2])), argv[3], os.path.abspath(argv[4])
    os.chdir(harness.work_dir(os.path.abspath(work)))
    sys.stdout.reconfigure(line_buffering=True)
    try:
        (test_collect if mode == "collect" else test_old_layout)(perfsift, arg)
    except AssertionError as e:
        print(f"FAIL: {e}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
