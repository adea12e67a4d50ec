"""Meep (meep-openmpi, the Scheme front end): a 2d straight dielectric waveguide with PML and
a continuous source (after meep's tutorial), resolution 10, 10 time units, 2 ranks (the
cell split into chunks, fields exchanged at the chunk boundaries every step).

Known answer, from meep's own 'Field time usage:' block (fields::print_times, asked for by
the input's last line): the mean time per process in each activity, among them
'1-1 communication' and 'all-all communication'. perfsift's MPI share of the run must
lie within 20 points of those two activities' share of all of meep's activities, and when
communication is the larger part the top finding must be the time in MPI.
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


def agree(d, app, results):
    t = app["times"]
    comm = sum(v["mean_s"] for k, v in t.items() if "communication" in k)
    total = sum(v["mean_s"] for v in t.values())
    theirs = 100 * comm / total
    share = 100 * c.mpi_share(d)
    assert abs(share - theirs) <= 20, f"perfsift's MPI share {share:.1f} % against meep's communication {theirs:.1f} % of its field time"
    if theirs > 50:
        assert c.top(d)["kind"] == "mpi-time", f"meep communicates {theirs:.0f} % of the time; perfsift's top finding is {c.top(d)['kind']}"
    return (f"meep 1-1 + all-all communication {comm:.2f} s of {total:.2f} s field time ({theirs:.0f} %); "
            f"perfsift: MPI share {share:.0f} %, top {c.top(d)['kind']}")
