#!/usr/bin/python3
"""POP efficiencies of a run whose load balance is known (tests/apps/pop_efficiency.c).

usage: efficiency_test.py PERFSIFT WORK_DIR APP

APP on 4 ranks: rank r sleeps (r + 1) x 10 ms in region `work` before each of 4
MPI_Allreduces, so the load balance is 25 / 40 = 0.625 for the program and for `work`
(sleeps: an oversubscribed machine does not blur it; a late wake-up of a few ms per sleep
moves it by a few hundredths). Checked:
  1. The results store's /efficiency: the five factors in [0, 1], the identities
     (parallel = load balance x communication, communication = serialisation x transfer),
     load balance near 0.625 and equal to mean / max of the profile's per-rank computation,
     the run time the program's, rank 3 the busiest; /efficiency/regions: `work` near 0.625.
  2. The JSON report's "efficiency" with the load balance's problem (the imbalance in work
     on rank 3); the text report's POP block after the answer, naming that problem.
  3. The HTML page's efficiency table data.
  4. Without the whatif stage: transfer and serialisation NaN, said in the note; with
     whatif but no standard questions: the ideal network still replayed (transfer known).
"""
import json
import math
import re
import sys
from pathlib import Path

import h5py

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import harness  # noqa: E402  tests/harness.py

errors = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        errors.append(msg)


def attrs(path):
    with h5py.File(path, "r") as f:
        a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["efficiency"].attrs.items()}
        regions = {}
        if "regions" in f["efficiency"]:
            g = f["efficiency/regions"]
            for i, name in enumerate(g["region"][()]):
                regions[name.decode()] = {k: g[k][i] for k in ("load_balance", "communication", "parallel")}
        comp = list(f["profile/ranks/comp_s"][()]) if "profile" in f else []
        program = f["run"].attrs["program_time_s"]
    return a, regions, comp, program


def check_store(a, regions, comp, program):
    factors = ("load_balance", "serialisation", "transfer", "communication", "parallel")
    check(all(0 <= a[k] <= 1 for k in factors), "every factor in [0, 1]: " + str({k: a[k] for k in factors}))
    check(abs(a["parallel"] - a["load_balance"] * a["communication"]) < 1e-9, "parallel = load balance x comm.")
    check(abs(a["communication"] - a["serialisation"] * a["transfer"]) < 1e-9, "comm. = serialisation x transfer")
    check(0.55 <= a["load_balance"] <= 0.72, f"load balance {a['load_balance']:.3f} near 0.625")
    check(abs(a["load_balance"] - (sum(comp) / len(comp)) / max(comp)) < 1e-6,
          "load balance = mean / max of /profile/ranks comp_s")
    check(a["ranks"] == 4 and a["useful_max_rank"] == 3, f"4 ranks, rank 3 the busiest: {a['ranks']}, "
          f"{a['useful_max_rank']}")
    check(abs(a["runtime_s"] - program) < 1e-9, "run time = the program's")
    check(abs(a["useful_max_s"] / a["runtime_s"] - a["communication"]) < 1e-9, "communication = max(u) / T")
    check(a["ideal_network_runtime_s"] > 0 and a["baseline_runtime_s"] > 0, "ideal network and baseline replayed")
    check("work" in regions and 0.55 <= regions["work"]["load_balance"] <= 0.72, f"region work: {regions}")


def main(perfsift, work, app):
    perfsift = harness.Perfsift(Path(perfsift).resolve())
    work = harness.work_dir(work)
    store, results = work / "pe.h5", work / "pe_res.h5"
    perfsift.collect(store, 4, app, out=work / "collect.txt", err=harness.STDOUT)
    perfsift.analyze(store, results, "--json", work / "pe.json", ranks=1, out=work / "report.txt",
                     err=harness.STDOUT)
    check_store(*attrs(results))

    d = json.loads((work / "pe.json").read_text())
    e = d.get("efficiency", {})
    check(all(k in e for k in ("load_balance", "serialisation", "transfer", "communication", "parallel")),
          "JSON efficiency has the five factors")
    lb = (e.get("problems") or {}).get("load_balance") or {}
    check("load imbalance in work on rank 3" in lb.get("text", ""), f"JSON: load balance's problem: {lb}")

    text = (work / "report.txt").read_text().splitlines()
    check(text[1].startswith("Answer:"), "the answer stays first: " + text[1])
    pop = [i for i, line in enumerate(text) if line.startswith("POP: parallel ")]
    check(bool(pop) and pop[0] > 1, "the POP block follows the answer")
    check(any(re.match(r"  load balance 0\.\d\d: #1 load imbalance in work on rank 3", line) for line in text),
          "text names the load balance's problem")

    perfsift.report(results, "--format", "html", "-o", work / "pe.html")
    html = (work / "pe.html").read_text()
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    data = json.loads(m.group(1).replace("<\\/", "</")) if m else {}
    labels = [f["label"] for f in data.get("efficiency", {}).get("factors", [])]
    check(labels == ["parallel", "load balance", "communication", "serialisation", "transfer"],
          f"HTML efficiency table: {labels}")

    (work / "no_whatif.toml").write_text('[pipeline]\nstages = ["profile", "efficiency"]\n')
    perfsift.analyze(store, work / "no_whatif.h5", "-c", work / "no_whatif.toml", ranks=1, out=harness.CAPTURE)
    a, _, comp, _ = attrs(work / "no_whatif.h5")
    check(math.isnan(a["transfer"]) and math.isnan(a["serialisation"]) and "whatif" in a["note"],
          f"without whatif: transfer {a['transfer']}, note {a['note']!r}")
    check(abs(a["load_balance"] - (sum(comp) / len(comp)) / max(comp)) < 1e-6, "without whatif: load balance")

    (work / "few.toml").write_text('[whatif]\nstandard_questions = false\n[pipeline]\n'
                                   'stages = ["whatif", "efficiency"]\n')
    perfsift.analyze(store, work / "few.h5", "-c", work / "few.toml", ranks=2, out=harness.CAPTURE)
    a, _, _, _ = attrs(work / "few.h5")
    check(a["transfer"] > 0 and a["ideal_network_runtime_s"] > 0,
          f"no standard questions: the ideal network still replayed ({a['ideal_network_runtime_s']})")
    return harness.verdict(errors)


if __name__ == "__main__":
    harness.run_script(main, 3, __doc__)
