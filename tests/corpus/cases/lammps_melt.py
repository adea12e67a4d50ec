"""LAMMPS, examples/melt (3d Lennard-Jones melt, 4000 atoms, 250 steps) as Debian ships it.

Known answer, from LAMMPS's own 'MPI task timing breakdown' (src/finish.cpp, printed after
'Loop time of ...'): the Comm row's %total is the share of the loop spent communicating.
perfsift's MPI share of the run (MPI_Init left out, as LAMMPS's loop starts after it) must
lie within 15 points of it, and when Comm is the largest section the top finding must be
the time in MPI. Pair's %varavg (the spread of the force computation over ranks) is small
in this balanced box: no load-imbalance problem may be ranked first.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import app_output  # noqa: E402

PACKAGES = ["lammps", "lammps-examples"]
BINARY = "lmp"
RANKS = 2  # CI tier: one rank per core on the 2-core runners
TIMEOUT = 300
INPUT = "/usr/share/lammps/examples/melt/in.melt"


def inputs(work):
    if not Path(INPUT).exists():
        raise SystemExit(f"{INPUT} missing: apt-get install lammps-examples")
    return ["-in", INPUT, "-log", "none"]


def parse(text):
    return app_output.lammps(text)


def agree(d, app, results):
    s = app["sections"]
    comm, pair = s["Comm"]["total_pct"], s["Pair"]["total_pct"]
    share = 100 * c.mpi_share(d)
    assert abs(share - comm) <= 15, (f"perfsift's MPI share {share:.1f} % against LAMMPS's Comm {comm:.1f} % of the loop "
                                     f"(breakdown table, Comm row, %total)")
    t = c.top(d)
    largest = max(s, key=lambda k: s[k]["total_pct"])
    if largest == "Comm":
        assert t["kind"] == "mpi-time", f"LAMMPS spends most of the loop in Comm ({comm:.1f} %), perfsift's top finding is {t['kind']}"
    assert t["kind"] != "load-imbalance", f"melt is balanced (Pair %varavg {s['Pair']['varavg_pct']}), perfsift ranks load imbalance first"
    return (f"MPI share {share:.1f} % vs LAMMPS Comm {comm:.1f} % (Pair {pair:.1f} %, largest section {largest}); "
            f"top: {t['kind']}")
