#!/usr/bin/python3
"""perfsift compare under real mpirun: did the fix pay?

usage: compare_test.py PERFSIFT WORK_DIR APP

APP is tests/apps/fixable_imbalance.c: rank 2 computes three times as long as the others
in region `solve`; with the argument `balanced` every rank computes the mean (the fix
"balance region solve"). Three runs of each, collected here on 4 ranks (sleeps: an
oversubscribed machine does not blur the computation).

  1. BEFORE AFTER as trace stores (analysed first, results beside them, then reused):
     AFTER faster, the noise unknown; the load imbalance in solve on rank 2 gone, its
     predicted gain within 25 % of the program time the rerun saved (or a miss the ranks'
     waiting for a core covers: not checkable); the MPI_Allreduce's
     call site (by function and file:line) called 80 times on each side, waiting less
     after; the JSON report's contract; the HTML page whole, with the problem's status.
  2. --before x3 --after x3: the noise known, the change beyond it (p < 0.05; 1.5e-08 idle).
  3. Two runs before the fix: the problem persists, not fixed; no verdict on its prediction.
  4. The gate: --fail-if-slower 5 exits 1 with one line when AFTER is the slow side, 0
     when it is the fast one.
  5. Bad input: a missing file, a file that is no store, one side empty: one line, exit 2.

Run with Debian's /usr/bin/python3.
"""
import json
import os
import sys
from pathlib import Path

import h5py

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import harness  # noqa: E402  tests/harness.py

CAPTURE = harness.CAPTURE


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def compare(perfsift, *args, expect=0):
    p = perfsift("compare", *args, out=CAPTURE, err=CAPTURE, expect=expect, what="perfsift compare")
    print(f"$ perfsift compare {' '.join(map(str, args))} -> {p.returncode}\n{p.stdout}{p.stderr}", flush=True)
    return p


def problem(d, kind, where):
    hits = [p for p in d["problems"] if p["kind"] == kind and p["where"] == where]
    check(hits, f"no {kind} at {where}: {[(p['kind'], p['where']) for p in d['problems']]}")
    return hits[0]


def contract(d):
    for key in ("format", "version", "answer", "before", "after", "program_time_s", "problems", "regions",
                "operations", "callsites"):
        check(key in d, f"JSON lacks {key}")
    check(d["format"] == "perfsift-comparison", d["format"])
    for p in d["problems"]:
        for key in ("status", "kind", "where", "ranks", "lost_before_s", "lost_after_s", "predicted_gain_s",
                    "realised_gain_s", "verdict"):
            check(key in p, f"problem lacks {key}: {p}")
        check(p["status"] in ("gone", "persists", "new", "moved"), p)
        check((p["lost_before_s"] is None) == (p["status"] == "new"), p)
        check((p["lost_after_s"] is None) == (p["status"] == "gone"), p)
    for run in d["before"]["runs"] + d["after"]["runs"]:
        for key in ("command", "ranks", "start_time", "hosts", "mpi_library", "program_time_s"):
            check(key in run, f"run lacks {key}: {run}")


def main(argv):
    perfsift, work, app = harness.Perfsift(os.path.abspath(argv[1])), argv[2], os.path.abspath(argv[3])
    os.chdir(harness.work_dir(os.path.abspath(work)))
    for i in (1, 2, 3):
        perfsift.collect(f"before{i}.h5", 4, app, out=f"before{i}.txt", err=harness.STDOUT)
        perfsift.collect(f"after{i}.h5", 4, app, "balanced", out=f"after{i}.txt", err=harness.STDOUT)

    # 1. One run each, from trace stores.
    first = compare(perfsift, "before1.h5", "after1.h5", "--json", "one.json")
    check("analysing it into" in first.stderr and Path("before1-results.h5").exists(), "trace stores not analysed")
    check(first.stdout.splitlines()[1].startswith("AFTER runs") and "faster" in first.stdout.splitlines()[1],
          "the answer does not open with the program time")
    check("the noise is unknown" in " ".join(first.stdout.split()),  # lines are wrapped
          "one run per side without saying the noise is unknown")
    d = json.loads(Path("one.json").read_text())
    contract(d)
    t = d["program_time_s"]
    check(not t["noise_known"] and t["after"] < t["before"], t)
    imbalance = problem(d, "load-imbalance", "solve")
    # gone; on a loaded machine a scrap of imbalance may stay on another rank (moved, fixed)
    check(imbalance["ranks"] == "2" and imbalance["fixed"] and imbalance["status"] in ("gone", "moved"), imbalance)
    saved = t["before"] - t["after"]
    check(abs(imbalance["realised_gain_s"] - saved) < 1e-9, imbalance)
    # Measured on 2 cores: 99-100 % of the prediction realised when the machine is idle, 69-85 %
    # while a build runs beside (4 ranks then wait for cores in every exchange after the fix).
    # A miss beyond 25 % that the two runs' waiting for a core covers is the machine's.
    excess = abs(imbalance["predicted_gain_s"] - saved) - 0.25 * saved
    waited = sum(h5py.File(f"{side}1-results.h5", "r")["whatif"].attrs["descheduled_s"] for side in ("before", "after"))
    said = f"predicted {imbalance['predicted_gain_s']} s, the rerun saved {saved} s; the ranks waited {waited} s for a core"
    if excess > 0 and excess <= waited:
        print(f"NOT CHECKABLE HERE: {said}, at least what the prediction misses by beyond 25 %")
    else:
        check(excess <= 0, said)
    check(imbalance["verdict"] in ("held", "fell short", "exceeded"), imbalance)
    sites = {x["site"]: x for x in d["callsites"]["rows"]}
    allreduce = [x for name, x in sites.items() if name.startswith("main (") and name.endswith("fixable_imbalance.c:39)")]
    check(len(allreduce) == 1 and allreduce[0]["calls_before"] == allreduce[0]["calls_after"] == 80,
          f"call sites: {list(sites)}")
    check(allreduce[0]["time_s"]["after"] < allreduce[0]["time_s"]["before"], allreduce[0])
    print(f"one run each: predicted {imbalance['predicted_gain_s'] * 1e3:.1f} ms, saved {saved * 1e3:.1f} ms, "
          f"verdict {imbalance['verdict']}")
    again = compare(perfsift, "before1.h5", "after1.h5", "--html", "one.html")
    check("using its results" in again.stderr and "analysing" not in again.stderr, "results not reused")
    page = Path("one.html").read_text()
    check(page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>"), "one.html is not a whole page")
    for part in ("<tr class=gone>", "load-imbalance", "solve", "own answer", "Computation per rank and region"):
        check(part in page, f"one.html lacks {part!r}")

    # 2. Three runs each: the noise known.
    compare(perfsift, "--before", "before1-results.h5", "before2.h5", "before3.h5", "--after", "after1-results.h5",
            "after2.h5", "after3.h5", "--json", "three.json")
    d = json.loads(Path("three.json").read_text())
    contract(d)
    t = d["program_time_s"]
    check(t["noise_known"], t)
    if not t["beyond_noise"] and max(t["before_sd"], t["after_sd"]) > 0.25 * abs(t["change"]):
        # idle: sd 1-3 ms against a 120 ms change, p = 1.5e-08; a busy machine can spread it
        print(f"NOT CHECKABLE HERE: the runs spread by {t['before_sd']:.4f} and {t['after_sd']:.4f} s against a "
              f"change of {t['change']:.4f} s (p = {t['p_value']:.3g}): the machine's noise, not the change's")
    else:
        check(t["beyond_noise"] and t["p_value"] < 0.05, t)
    check(t["ci95"][0] <= t["change"] <= t["ci95"][1] < 0, t)
    check(problem(d, "load-imbalance", "solve")["fixed"], d["problems"])

    # 3. No fix: the problem persists, its prediction untested.
    compare(perfsift, "before1.h5", "before2.h5", "--json", "same.json")
    d = json.loads(Path("same.json").read_text())
    p = problem(d, "load-imbalance", "solve")
    check(p["status"] == "persists" and p["verdict"] == "not fixed" and p["realised_gain_s"] is None, p)

    # 4. The gate.
    slow = compare(perfsift, "after1.h5", "before1.h5", "--fail-if-slower", 5, expect=1)
    lines = [line for line in slow.stderr.splitlines() if line.startswith("perfsift: AFTER is slower")]
    check(len(lines) == 1 and "program time" in lines[0], slow.stderr)
    compare(perfsift, "before1.h5", "after1.h5", "--fail-if-slower", 5, expect=0)

    # 5. Bad input.
    Path("text.h5").write_text("not a store")
    for args, says in ((["before1.h5", "absent.h5"], "absent.h5: no such file"),
                       (["before1.h5", "text.h5"], "text.h5"),
                       (["--before", "before1.h5"], "a run on each side")):
        p = compare(perfsift, *args, expect=2)
        lines = [line for line in p.stderr.splitlines() if line.strip() and "using its results" not in line]
        check(len(lines) == 1 and says in lines[0] and not p.stdout, f"{args}: {p.stderr!r}")
    print("PASS")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
