"""Meep (meep-openmpi, the Scheme front end): a 2d straight dielectric waveguide with PML and
a continuous source (after meep's tutorial), resolution 10, 10 time units, 2 ranks (the
cell split into chunks, fields exchanged at the chunk boundaries every step).

Known answer, from meep's own 'Field time usage:' block (fields::print_times, asked for by
the input's last line): the mean time per process in each activity of the time stepping,
among them '1-1 communication' (the chunk boundaries' exchange: MPI_Irecv / MPI_Isend
completed with MPI_Waitsome) and 'all-all communication' (meep's sum_to_all, and_to_all,
...: MPI_Allreduce). perfsift's time per rank in MPI_Waitsome must lie within 50-150 % of
'1-1 communication', and its MPI_Allreduce time within 50-150 % of 'all-all
communication'. The time stepping starts after the structure is built ('Initializing
structure...', 'time for set_epsilon = T s'), which the field times leave out. Each of the
top three findings (ranked by the predicted gain of a fix) must be the time in MPI,
waiting at point-to-point calls of at most '1-1 communication' (+25 %), waiting in
n-to-n collectives of at most 'all-all communication' (+25 %), or a rank dissimilarity /
imbalance in the structure's set-up (a call site in structure::...).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import app_output  # noqa: E402

PACKAGES = ["meep-openmpi"]
BINARY = "meep"
RANKS = 2
TIMEOUT = 600
INPUT = """; A straight dielectric waveguide in 2d (after meep's tutorial), a continuous source.
(set-param! resolution 10)
(set! geometry-lattice (make lattice (size 32 16 no-size)))
(set! geometry (list (make block (center 0 0) (size infinity 1 infinity)
                       (material (make dielectric (epsilon 12))))))
(set! pml-layers (list (make pml (thickness 1.0))))
(set! sources (list (make source (src (make continuous-src (frequency 0.15))) (component Ez) (center -14 0))))
(run-until 10)
(meep-fields-print-times fields)
"""


def inputs(work):
    (Path(work) / "wg.ctl").write_text(INPUT)
    return ["wg.ctl"]


def parse(text):
    return app_output.meep(text)


def within(ours, theirs, lo=0.5, hi=1.5, slack=0.002):
    """Within lo..hi of meep's time, give or take 2 ms (meep prints its times to 1 ms; on an
    idle machine the communication takes a few ms in all)."""
    return lo * theirs - slack <= ours <= hi * theirs + slack


def agree(d, app, results):
    t = app["times"]
    one, all_ = t["1-1 communication"]["mean_s"], t["all-all communication"]["mean_s"]
    waitsome, allreduce = c.op_time_per_rank(d, "MPI_Waitsome"), c.op_time_per_rank(d, "MPI_Allreduce")
    assert within(waitsome, one), f"MPI_Waitsome {waitsome:.3f} s per rank against meep's 1-1 communication {one:.3f} s"
    assert within(allreduce, all_), f"MPI_Allreduce {allreduce:.3f} s per rank against meep's all-all communication {all_:.3f} s"
    top = c.top(d)
    for f in c.top_findings(d):
        if f["kind"] in ("late-sender", "late-receiver"):
            assert f["lost_s"] <= 1.25 * one, f"{f['kind']} {f['lost_s']:.3f} s exceeds meep's 1-1 communication {one:.3f} s"
        elif f["kind"] in ("wait-at-nxn", "wait-at-barrier"):
            assert f["lost_s"] <= 1.25 * all_ + 0.1, f"{f['kind']} {f['lost_s']:.3f} s exceeds meep's all-all communication {all_:.3f} s"
        elif f["kind"] in ("dissimilarity", "load-imbalance"):
            assert "structure::" in f["where"] or f["where"] == "(program)", (f"{f['kind']} at {f['where']}: not the structure's "
                                                                               f"set-up before meep's time stepping")
        elif f["kind"] != "mpi-time":
            raise AssertionError(f"{f['kind']} at {f['where']} among the top findings: nothing in meep's times says so")
    return (f"meep 1-1 communication {one:.3f} s, all-all {all_:.3f} s; perfsift: MPI_Waitsome {waitsome:.3f} s/rank, "
            f"MPI_Allreduce {allreduce:.3f} s/rank; top {top['kind']} at {top['where']}")
