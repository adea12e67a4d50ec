"""LAMMPS, the melt example's Lennard-Jones liquid in only the left half of a box split into
four slabs along x (`processors 4 1 1`): ranks 0 and 1 own every atom, ranks 2 and 3 none,
so ranks 2 and 3 wait for ranks 0 and 1 every step.

Known answer, from LAMMPS's own output: the breakdown table's Pair row (min time about 0,
the empty ranks; max time on the full ranks; %varavg large) and 'Nlocal: A ave M max m min'
(m = 0 or a few evaporated atoms). perfsift must split the ranks as LAMMPS's decomposition does: its rank clusters by
computation (stage dissimilarity) never put an empty rank (2, 3) with a full one (0, 1)
— the oversubscribed machine may split the full ranks further, one of them getting less
of a core — and a dissimilarity or load-imbalance problem names full ranks only (those
carrying the excess) or empty ranks only. The waiting perfsift measures on ranks 2,3
must be at least half of LAMMPS's Pair max minus min.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import app_output  # noqa: E402

PACKAGES = ["lammps"]
BINARY = "lmp"
RANKS = 4
TIMEOUT = 600
STEPS = 300

INPUT = f"""# 3d Lennard-Jones melt (LAMMPS examples/melt) in the left half of a 4-slab box
units           lj
atom_style      atomic
processors      4 1 1
lattice         fcc 0.8442
region          box block 0 20 0 8 0 8
region          left block 0 10 0 8 0 8
create_box      1 box
create_atoms    1 region left
mass            1 1.0
velocity        all create 1.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every 20 delay 0 check no
fix             1 all nve
thermo          50
run             {STEPS}
"""


def inputs(work):
    (Path(work) / "in.unbalanced").write_text(INPUT)
    return ["-in", "in.unbalanced", "-log", "none"]


def parse(text):
    out = app_output.lammps(text)
    if out["procs"] != RANKS:
        raise ValueError(f"LAMMPS ran on {out['procs']} procs, not {RANKS}")
    return out


def ranks_of(text):
    """'2,3', '2-3' or '0-1' as a set of ranks."""
    got = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        got |= set(range(int(a), int(b or a) + 1))
    return got


FULL, EMPTY = {0, 1}, {2, 3}


def agree(d, app, results):
    p = app["sections"]["Pair"]
    spread = p["max_s"] - p["min_s"]
    assert p["min_s"] < 0.2 * p["max_s"], f"LAMMPS's Pair row shows no empty ranks: {p}"
    clusters = [set(cl) for cl in d["dissimilarity"]["clusters"]]
    assert len(clusters) >= 2 and all(cl <= FULL or cl <= EMPTY for cl in clusters), \
        f"perfsift's rank clusters {d['dissimilarity']['clusters']} mix the full ranks 0,1 with the empty ranks 2,3"
    named = [(f["kind"], f["ranks"]) for f in d["findings"] if f["kind"] in ("dissimilarity", "load-imbalance")]
    assert named, f"no dissimilarity or load-imbalance problem: {[f['kind'] for f in d['findings']]}"
    for kind, ranks in named:
        r = ranks_of(ranks)
        assert r <= FULL or r <= EMPTY, f"{kind} on ranks {ranks}: mixes full and empty ranks (LAMMPS: Nlocal min {app.get('nlocal_min')})"
    ws = d["waitstates"]
    waited = {r: sum(ws[pt]["by_rank"][r] for pt in ("late_sender", "late_receiver", "wait_at_barrier", "wait_at_nxn",
                                                      "late_broadcast", "early_reduce")) for r in range(RANKS)}
    empty_wait = min(waited[2], waited[3])
    assert empty_wait >= 0.5 * spread, (f"the empty ranks 2,3 wait {empty_wait:.3f} s, less than half of LAMMPS's Pair "
                                        f"spread {spread:.3f} s (max {p['max_s']} - min {p['min_s']})")
    return (f"LAMMPS Pair min {p['min_s']:.3f} / avg {p['avg_s']:.3f} / max {p['max_s']:.3f} s, %varavg {p['varavg_pct']}; "
            f"Nlocal min {app.get('nlocal_min')} max {app.get('nlocal_max')}; perfsift: clusters {d['dissimilarity']['clusters']}, "
            f"{named[0][0]} on ranks {named[0][1]}; ranks 2,3 wait {waited[2]:.3f}/{waited[3]:.3f} s")
