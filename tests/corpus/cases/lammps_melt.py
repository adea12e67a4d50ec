"""LAMMPS, examples/melt (3d Lennard-Jones melt, 4000 atoms, 250 steps) as Debian ships it.

Known answer, from LAMMPS's own 'MPI task timing breakdown' (src/finish.cpp, printed after
'Loop time of ...'): the Comm row's %total is the share of the loop spent communicating,
and the Pair row's min / avg / max the force computation's spread over ranks (balanced in
melt's box, but on a busy machine one rank may get less of a core).
perfsift findings are ranked by the predicted gain of their fix, so the top three must
each agree with the table, and perfsift's MPI share of the run must lie within 15 points
of Comm's %total; when Comm is over half of the loop the time in MPI must be among the
top three; a rank dissimilarity or load imbalance of the computation before
CommBrick::reverse_comm (that computation is Pair: Verlet computes the forces, then
reverse-communicates them) or of the whole program losing at most Pair's max - min + 25 %
(+ 5 % of the loop) and at least a fifth of its max - avg; wait states at most the Comm time.
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
    comm, pair = s["Comm"], s["Pair"]
    share = 100 * c.mpi_share(d)
    spread, excess = pair["max_s"] - pair["min_s"], pair["max_s"] - pair["avg_s"]
    said = []
    tops = c.top_findings(d)
    assert abs(share - comm["total_pct"]) <= 15, (f"perfsift's MPI share {share:.1f} % against LAMMPS's Comm "
                                                  f"{comm['total_pct']:.1f} % of the loop (breakdown table, Comm row, %total)")
    said.append(f"MPI share {share:.1f} % vs Comm {comm['total_pct']:.1f} %")
    if comm["total_pct"] > 50:
        assert any(f["kind"] == "mpi-time" for f in tops), \
            f"LAMMPS communicates {comm['total_pct']:.0f} % of the loop; the time in MPI is not among perfsift's top findings: {[f['kind'] for f in tops]}"
    for f in tops:
        if f["kind"] == "mpi-time":
            said.append(f"mpi-time #{tops.index(f) + 1}")
        elif f["kind"] in ("dissimilarity", "load-imbalance"):
            assert "reverse_comm" in f["where"] or f["where"] == "(program)", f"{f['kind']} at {f['where']}: not Pair's computation"
            assert 0.2 * excess <= f["lost_s"] <= 1.25 * spread + 0.05 * app["loop_s"], (f"{f['kind']} on ranks {f['ranks']} loses {f['lost_s']:.3f} s; "
                                                                   f"LAMMPS's Pair row: max - avg {excess:.3f} s, max - min {spread:.3f} s")
            said.append(f"{f['kind']} {f['lost_s']:.3f} s vs Pair max-avg {excess:.3f} s")
        elif f["kind"] in ("late-sender", "late-receiver", "wait-at-nxn", "wait-at-barrier"):
            assert f["lost_s"] <= comm["max_s"] * 1.25, f"{f['kind']} {f['lost_s']:.3f} s exceeds LAMMPS's Comm max {comm['max_s']} s"
            said.append(f"{f['kind']} {f['lost_s']:.3f} s within Comm")
        else:
            raise AssertionError(f"{f['kind']} at {f['where']} among the top findings: nothing in LAMMPS's table says so")
    return (f"LAMMPS Comm {comm['total_pct']:.1f} % of the loop, Pair {pair['min_s']:.3f}/{pair['avg_s']:.3f}/{pair['max_s']:.3f} s "
            f"(min/avg/max); perfsift top {len(tops)}: " + "; ".join(said))
