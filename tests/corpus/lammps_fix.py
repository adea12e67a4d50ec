#!/usr/bin/python3
"""A real program's real fix, checked against perfsift's prediction (docs/compare.md).

usage: lammps_fix.py PERFSIFT WORK_DIR

Debian's LAMMPS (lmp), LJ melt with every atom in the left half of the box on 2 ranks
split along x (inputs/lammps_halfbox.in: rank 0 computes, rank 1 waits), and the same
input with LAMMPS's own balancer (inputs/lammps_halfbox_balanced.in). perfsift compare
of the two: AFTER faster; BEFORE's load imbalance on rank 0 priced; the program time the
reruns saved (two runs a side) within 30 % of the gain perfsift predicted for balancing
it, less the excess the balancer left (on either rank: compare's time at stake after),
plus the half-width of the saving's 95 % interval. LAMMPS's
balancer does not balance perfectly and varies from run to run: measured on this 2-core
VM, it left 0-88 ms of a 166-169 ms excess (on rank 1 when it overshot); predicted
158-183 ms, saved 60-158 ms, 93-111 % of the prediction less what was left.
Exit code 77 when lmp is not installed (the Debian package lammps).
"""
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import harness  # noqa: E402  tests/harness.py

SKIP = 77


def main(argv):
    perfsift, work = harness.Perfsift(os.path.abspath(argv[1])), harness.work_dir(os.path.abspath(argv[2]))
    if not shutil.which("lmp"):
        print("SKIPPED: lmp is not installed; it comes with the Debian package lammps")
        return SKIP
    os.chdir(work)
    for name in ("lammps_halfbox", "lammps_halfbox_balanced"):
        for run in (1, 2):
            perfsift.collect(f"{name}{run}.h5", 2, "lmp", "-in", HERE / "inputs" / f"{name}.in", "-log", "none",
                             "-screen", "none", out=f"{name}{run}.collect.txt", err=harness.STDOUT, timeout=120)
    p = perfsift("compare", "--before", "lammps_halfbox1.h5", "lammps_halfbox2.h5", "--after",
                 "lammps_halfbox_balanced1.h5", "lammps_halfbox_balanced2.h5", "--json", "compare.json",
                 out=harness.CAPTURE, err=harness.CAPTURE, timeout=240)
    print(p.stdout, p.stderr, sep="", flush=True)
    d = json.loads(Path("compare.json").read_text())
    t = d["program_time_s"]
    saved = t["before"] - t["after"]
    imbalance = [x for x in d["problems"] if x["kind"] == "load-imbalance" and x["ranks"] == "0"]
    if not imbalance or imbalance[0]["predicted_gain_s"] is None:
        print(f"FAIL: no priced load imbalance on rank 0 before: {d['problems']}")
        return 1
    left = imbalance[0].get("lost_after_s") or 0.0  # the excess the balancer left, where it moved
    predicted = imbalance[0]["predicted_gain_s"]
    expected = predicted - left
    ratio = saved / expected if expected > 0 else float("nan")
    # The program time of one input varies by a quarter between runs here: the saving's own
    # 95 % interval (two runs a side) widens the tolerance.
    low, high = t["ci95"]
    noise = (high - low) / 2
    print(f"LAMMPS half box: predicted {predicted * 1e3:.1f} ms for balancing; the balancer left "
          f"{left * 1e3:.1f} ms at stake ({imbalance[0]['status']}), so {expected * 1e3:.1f} ms; it saved "
          f"{saved * 1e3:.1f} ms of program time ({ratio:.0%}; the saving known within {noise * 1e3:.1f} ms)")
    if not (saved > 0 and abs(saved - expected) <= 0.3 * expected + noise):
        print("FAIL: the realised gain is not within 30 % of the prediction less the excess left, plus the noise")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
