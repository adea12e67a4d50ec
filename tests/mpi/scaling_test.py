#!/usr/bin/python3
"""perfsift scaling under real mpirun: models that find the true growth and predict a larger run.

usage: scaling_test.py PERFSIFT WORK_DIR APP

APP is tests/apps/scaling_regions.c: per rank, region `share` sleeps 5 + 800/P ms, `tree`
5 + 200 log2(P) ms, and `gather` (rank 0 alone) 5 + 80 P ms (sleeps: oversubscribed runs keep
their times). Collected at 1..5 ranks and at 10; a collection whose models miss a true term
(a run disturbed by the shared machine: a sleep woken late by several ms) is collected again (three times at most).

  1. scaling of the five trace stores (analysed first, in one process) with --at 10: the
     chosen terms are the true ones (p^(-1), log2(p), p); gather's pace is rank 0's; each
     region's prediction at 10 ranks lies within 15 % + 5 ms of the real 10-rank run's time
     (sleep overshoot under load is the noise), the program's within 15 %; the answer names gather breaking first; each
     run's POP factors as analyze stored them, the identities, computation scalability and
     global efficiency against the 1-rank run as POP defines them; the JSON contract; the
     page with one plot per region.
  2. Two runs (5 and 10 ranks, the 5-rank results reused): the models rest on 2 counts, said.
  3. Results stores without /efficiency (written before analyze computed it): "efficiencies: n/a".
  4. Bad input: one run, runs of different programs, runs at one rank count, a file that is
     no store, a missing file: one line, exit 2.

Run with Debian's /usr/bin/python3.
"""
import json
import math
import os
import shutil
import sys
from pathlib import Path

import h5py

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import harness  # noqa: E402  tests/harness.py

CAPTURE = harness.CAPTURE
TRUE_TERMS = {"share": "p^(-1)", "tree": "log2(p)", "gather": "p"}
COUNTS = (1, 2, 3, 4, 5)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def scaling(perfsift, *args, expect=0):
    p = perfsift("scaling", *args, out=CAPTURE, err=CAPTURE, expect=expect, what="perfsift scaling")
    print(f"$ perfsift scaling {' '.join(map(str, args))} -> {p.returncode}\n{p.stdout}{p.stderr}", flush=True)
    return p


def regions(d):
    return {r["region"]: r for r in d["regions"]}


def drop_efficiency(results):
    """A results store as analyze wrote it before it computed the POP factors."""
    with h5py.File(results, "a") as f:
        del f["efficiency"]


def main(argv):
    perfsift, work, app = harness.Perfsift(os.path.abspath(argv[1])), argv[2], os.path.abspath(argv[3])
    os.chdir(harness.work_dir(os.path.abspath(work)))
    for attempt in (1, 2, 3):
        for n in COUNTS + (10,):
            Path(f"r{n}-results.h5").unlink(missing_ok=True)
            perfsift.collect(f"r{n}.h5", n, app, out=f"r{n}.txt", err=harness.STDOUT)
        # 1. Five runs, --at 10.
        stores = [f"r{n}.h5" for n in COUNTS]
        p = scaling(perfsift, *stores, "--at", 10, "--json", "s.json", "--html", "s.html")
        d = json.loads(Path("s.json").read_text())
        chosen = {r["region"]: r["term"] for r in d["regions"]}
        if all(chosen.get(name) == term for name, term in TRUE_TERMS.items()):
            break
        print(f"attempt {attempt}: terms {chosen}, collected again", flush=True)
    for key in ("format", "answer", "scaling", "points", "at", "runs", "program_time", "regions", "problems"):
        check(key in d, f"JSON lacks {key}")
    check(d["format"] == "perfsift-scaling" and d["points"] == 5 and d["at"] == [10], d)
    check([r["ranks"] for r in d["runs"]] == list(COUNTS), d["runs"])
    # POP per run as analyze stored it; across runs against the 1-rank run
    first = d["runs"][0]["efficiency"]
    for r in d["runs"]:
        n, eff = r["ranks"], r["efficiency"]
        check(r["program_time_s"] > 0 and eff is not None, r)
        for k in ("load_balance", "serialisation", "transfer", "communication", "parallel", "computation_scalability",
                  "global"):
            check(0 <= eff[k] <= 1.0 + 0.5 * (k in ("computation_scalability", "global")), (n, k, eff))  # superlinear
        check(math.isclose(eff["parallel"], eff["load_balance"] * eff["communication"], rel_tol=1e-6), (n, eff))
        scale = n if d["scaling"] == "weak" else 1
        cs = first["useful_sum_s"] * scale / eff["useful_sum_s"]
        check(math.isclose(eff["computation_scalability"], cs, rel_tol=1e-9), (n, eff, cs))
        check(math.isclose(eff["global"], eff["parallel"] * cs, rel_tol=1e-9), (n, eff))
    got = regions(d)
    for name, term in TRUE_TERMS.items():
        check(name in got, f"no region {name}: {list(got)}")
        check(got[name]["term"] == term, f"{name}: chose {got[name]['model']}, not the true term {term}")
        for key in ("model", "predicted_s", "smape_percent", "loo_smape_percent", "adjusted_r2", "measured_s"):
            check(key in got[name], f"{name} lacks {key}")
        check(not got[name]["noisy"], got[name])
    check(got["gather"]["pace_rank"] == 0, got["gather"])
    check(p.stdout.splitlines()[2].startswith("At 10 ranks gather") and "breaks first" in p.stdout, p.stdout)
    check("POP: parallel efficiency" in p.stdout and "n/a" not in p.stdout, p.stdout)
    page = Path("s.html").read_text()
    check(page.rstrip().endswith("</html>") and page.count("<svg") >= 4, "page incomplete")
    for n in COUNTS:
        check(Path(f"r{n}-results.h5").exists(), f"r{n}.h5 was not analysed beside itself")

    # 2. The real 10-rank run (the 5-rank results reused): two points, said.
    p = scaling(perfsift, "r5.h5", "r10.h5", "--json", "real.json")
    check("using its results" in p.stderr and "rest on 2 rank counts" in p.stdout, p.stderr + p.stdout)
    real_d = json.loads(Path("real.json").read_text())
    real = regions(real_d)
    measured, predicted = real_d["program_time"]["measured_s"]["10"], d["program_time"]["predicted_s"]["10"]
    print(f"program at 10 ranks: predicted {predicted:.3f} s, measured {measured:.3f} s")
    check(abs(predicted - measured) <= 0.15 * measured, f"program: predicted {predicted:.3f} s, took {measured:.3f} s")
    for name in TRUE_TERMS:
        measured, predicted = real[name]["measured_s"]["10"], got[name]["predicted_s"]["10"]
        print(f"{name} at 10 ranks: predicted {predicted * 1e3:.1f} ms, measured {measured * 1e3:.1f} ms")
        check(abs(predicted - measured) <= 0.15 * measured + 0.005,
              f"{name}: predicted {predicted:.4f} s at 10 ranks, the run took {measured:.4f} s")

    # 3. Results stores written before analyze computed the POP factors: said, not guessed.
    copies = []
    for n in COUNTS:
        shutil.copy(f"r{n}-results.h5", f"e{n}.h5")
        drop_efficiency(f"e{n}.h5")
        copies.append(f"e{n}.h5")
    p = scaling(perfsift, *copies, "--json", "e.json")
    e = json.loads(Path("e.json").read_text())
    check("efficiencies: n/a (results store without /efficiency: re-run analyze)" in p.stdout, p.stdout)
    check(all(r["efficiency"] is None for r in e["runs"]), e["runs"])
    check(e["at"] == [10], "default target: twice the largest count")

    # 4. Bad input.
    Path("text.h5").write_text("not a store")
    shutil.copy("r2-results.h5", "other.h5")
    with h5py.File("other.h5", "a") as f:
        f["run"].attrs["command"] = "/usr/bin/another_program -x"
    for args, says in ((["r1-results.h5"], "two or more runs"),
                       (["r1-results.h5", "other.h5"], "another_program"),
                       (["r2-results.h5", "r2-results.h5"], "two or more rank counts"),
                       (["r1-results.h5", "text.h5"], "text.h5"),
                       (["r1-results.h5", "absent.h5"], "absent.h5: no such file")):
        p = scaling(perfsift, *args, expect=2)
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        check(len(lines) == 1 and says in lines[0] and not p.stdout, f"{args}: {p.stderr!r}")
    print("PASS")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
