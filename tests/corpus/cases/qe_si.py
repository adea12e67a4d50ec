"""Quantum ESPRESSO pw.x: an SCF of bulk silicon (2 atoms, LDA, ecutwfc 16 Ry, 3 x 3 x 3 k-points, the Si.pz-vbc.UPF
pseudopotential quantum-espresso-data ships with the EPW example), 2 ranks: plane waves
and FFT grid split between the ranks (R & G space division).

Known answer, from pw.x's own timing report (clocks.f90, printed at the end): PWSCF's WALL
and, under 'Parallel routines', fft_scatt_xy / fft_scatt_yz: the FFTs' data exchange,
where pw.x communicates with MPI_Alltoall. perfsift's MPI_Alltoall time per rank (the
mean of both ranks) must lie within 50-125 % of fft_scatt_xy + fft_scatt_yz (those clocks
also pack the data around the call, and pw.x prints rank 0's clocks only, to 0.01 s: the
bounds have 0.01 s more on each side), and perfsift's time-in-MPI finding must name MPI_Alltoall among its leading
operations. The rest of pw.x's MPI time (barriers and broadcasts while rank 0, pw.x's
I/O node, reads the input and pseudopotential and writes ./tmp/si.save: 'Reading input
from', 'Writing output data file' in its output) lies outside the clocked routines: what
perfsift ranks (by the predicted gain of a fix) may be rank 0's computation there, whose
cause must then be I/O; waiting in n-to-n collectives (the FFT's MPI_Alltoall) at most
the scatter clocks; each of the top three findings must be one of these.
"""
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import app_output  # noqa: E402

PACKAGES = ["quantum-espresso", "quantum-espresso-data"]
BINARY = "pw.x"
RANKS = 2
TIMEOUT = 600
PSEUDO = "/usr/share/doc/quantum-espresso/examples/EPW/sic/pp/Si.pz-vbc.UPF.gz"
INPUT = """ &control
    calculation = 'scf', prefix = 'si', outdir = './tmp', pseudo_dir = './'
 /
 &system
    ibrav = 2, celldm(1) = 10.20, nat = 2, ntyp = 1, ecutwfc = 16.0
 /
 &electrons
    conv_thr = 1.0d-8
 /
ATOMIC_SPECIES
 Si 28.086 Si.pz-vbc.UPF
ATOMIC_POSITIONS alat
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS automatic
 3 3 3 1 1 1
"""


def inputs(work):
    if not Path(PSEUDO).exists():
        raise SystemExit(f"{PSEUDO} missing: apt-get install quantum-espresso-data")
    (Path(work) / "Si.pz-vbc.UPF").write_bytes(gzip.decompress(Path(PSEUDO).read_bytes()))
    (Path(work) / "si.in").write_text(INPUT)
    return ["-in", "si.in"]


def parse(text):
    out = app_output.qe(text)
    if out["energy_Ry"] is None:
        raise ValueError("pw.x printed no '!    total energy' line: the SCF did not converge")
    return out


def agree(d, app, results):
    k = app["clocks"]
    scatter = sum(k[n]["wall_s"] for n in ("fft_scatt_xy", "fft_scatt_yz") if n in k)
    pwscf = app["PWSCF_wall_s"]
    a2a = c.op_time_per_rank(d, "MPI_Alltoall")
    assert 0.5 * scatter - 0.01 <= a2a <= 1.25 * scatter + 0.01, (f"MPI_Alltoall {a2a:.3f} s per rank outside 50-125 % (-+ 0.01 s) of pw.x's "
                                                   f"fft_scatt_xy + fft_scatt_yz {scatter:.3f} s WALL")
    # A time-in-MPI finding when MPI is a large share of the run (above the profile stage's
    # min_mpi_share, 25 %, with a margin), naming MPI_Alltoall; none when it is small (an idle
    # machine: pw.x's FFT exchange is then a few ms of its 0.1 s).
    mpi = [f for f in d["findings"] if f["kind"] == "mpi-time"]
    share = c.mpi_share(d)
    if share >= 0.3:
        assert mpi and "MPI_Alltoall" in mpi[0]["cause"], f"no time-in-MPI finding naming MPI_Alltoall: {[f['kind'] for f in d['findings']]}"
    elif share < 0.2:
        assert not mpi, f"a time-in-MPI finding although MPI is {share:.0%} of the run"
    t = c.top(d)
    for f in c.top_findings(d):
        if f["kind"] in ("dissimilarity", "load-imbalance"):
            assert f["ranks"] == "0" and "I/O" in f["cause"], (f"{f['kind']} on ranks {f['ranks']} among the top findings: "
                                                              f"not rank 0's I/O: {f['cause']}")
        elif f["kind"] in ("wait-at-nxn", "late-sender", "late-receiver", "wait-at-barrier", "late-broadcast"):
            assert f["lost_s"] <= 1.25 * scatter + 0.1 * pwscf, (f"{f['kind']} {f['lost_s']:.3f} s exceeds pw.x's FFT "
                                                                  f"scatter clocks {scatter:.3f} s")
        elif f["kind"] != "mpi-time":
            raise AssertionError(f"{f['kind']} at {f['where']} among the top findings: nothing in pw.x's report says so")
    share = 100 * share
    return (f"pw.x fft_scatt_xy + fft_scatt_yz {scatter:.2f} s WALL (PWSCF {pwscf:.2f} s); perfsift: MPI_Alltoall "
            f"{a2a:.2f} s/rank ({a2a / scatter:.0%}), MPI share {share:.0f} %; top {t['kind']} on ranks {t['ranks']}")
