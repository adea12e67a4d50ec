"""NetPIPE (netpipe-openmpi's NPopenmpi): the ping-pong between 2 ranks over message sizes
1 B to 64 KiB, no perturbations, 200 repetitions per trial (-n 200: NetPIPE's own choice
gives 1-3.5 million events, whose analysis on K = 2 takes 70-180 s against 8-24 s on
K = 1 — the distributed replay exchanges once per message crossing analysis ranks).

Known answer, from NetPIPE's own lines 'N: B bytes R times --> X Mbps in T usec': NetPIPE
does nothing but communicate, each size R times. The time in MPI must be among perfsift's
top three findings (the others waiting states), its MPI share above 90 %, and the trace must hold, for each size NetPIPE printed,
at least R messages of that size from rank 0 (its ping-pong: one send and one receive per
repetition) — the messages the replay matched.
"""
import sys
from pathlib import Path

import h5py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import app_output  # noqa: E402

PACKAGES = ["netpipe-openmpi"]
BINARY = "NPopenmpi"
RANKS = 2
TIMEOUT = 600


def inputs(work):
    return ["-u", "65536", "-p", "0", "-n", "200", "-o", "np.out"]


def parse(text):
    return app_output.netpipe(text)


def agree(d, app, results):
    tops = [f["kind"] for f in c.top_findings(d)]
    assert "mpi-time" in tops, f"perfsift's top findings are {tops}; NetPIPE only communicates"
    others = [k for k in tops if k not in ("mpi-time", "late-sender", "late-receiver", "wait-at-barrier", "wait-at-nxn")]
    assert not others, f"{others} among the top findings; NetPIPE only communicates"
    share = 100 * c.mpi_share(d)
    assert share >= 90, f"perfsift's MPI share {share:.1f} %; NetPIPE only communicates"
    with h5py.File("run.h5", "r") as f:
        ops = [o.decode() if isinstance(o, bytes) else o for o in f["ops"][...]]
        off = f["events_offsets"][...]
        ev = f["events"][off[0]:off[1]]
    sends = np.isin(ev["op"], [ops.index(o) for o in ("MPI_Send", "MPI_Isend") if o in ops])
    short = []
    for row in app["sizes"]:
        n = int(np.count_nonzero(sends & (ev["bytes"] == row["bytes"])))
        if n < row["times"]:
            short.append(f"{row['bytes']} B: {n} sends < {row['times']} times")
    assert not short, f"the trace lacks messages NetPIPE reports: {short}"
    last = app["sizes"][-1]
    return (f"NetPIPE {app['n_sizes']} sizes, {last['bytes']} B in {last['usec']} usec; perfsift: MPI share {share:.1f} %, "
            f"every size's repetitions in rank 0's sends")
