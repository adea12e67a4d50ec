"""HPC Challenge (Debian's hpcc) at a small size on a 2 x 2 grid: HPL N = 600, PTRANS
N = 400, then every other test at hpcc's defaults for that memory.

Known answer, from hpcc's own hpccoutf.txt ('Begin of Summary section.'): the per-test
times HPL_time, PTRANS_time, MPIRandomAccess_time and MPIRandomAccess_LCG_time.
MPIRandomAccess (and its LCG variant) is hpcc's communication-bound test and the largest
of its timed tests: hpcc polls its incoming updates with MPI_Testany/MPI_Test. The time
in MPI must be among perfsift's top three findings (ranked by the predicted gain of a fix); the MPI operation perfsift ranks first must be one
of those polling calls, taking per rank between 40 % and 105 % of hpcc's two
MPIRandomAccess times together (the rest of those tests is local updates and the final
MPI_Cancel and Waits).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import app_output  # noqa: E402

PACKAGES = ["hpcc"]
BINARY = "hpcc"
RANKS = 4
TIMEOUT = 300
TEMPLATE = "/usr/share/doc/hpcc/examples/_hpccinf.txt"
POLLING = ("MPI_Testany", "MPI_Test", "MPI_Testsome", "MPI_Iprobe")
# hpcc cancels its last posted receives (MPIRandomAccess: MPI_Cancel, then MPI_Wait):
# whatif counts them as cancelled_receives, not unmatched.


def inputs(work):
    lines = Path(TEMPLATE).read_text().splitlines()
    # hpccinf.txt is read by line number (HPL's format): line 6 Ns, 8 NBs, 33 PTRANS sizes.
    lines[5] = "600          Ns"
    lines[7] = "40           NBs"
    lines[32] = "1                      \t\tNumber of additional problem sizes for PTRANS"
    lines[33] = "400        \tvalues of N"
    (Path(work) / "hpccinf.txt").write_text("\n".join(lines) + "\n")
    return []


def parse(text):
    # hpcc writes its report to hpccoutf.txt in the working directory, not to stdout.
    out = app_output.hpcc(Path("hpccoutf.txt").read_text(errors="replace"))
    if int(out["CommWorldProcs"] or 0) != RANKS:
        raise ValueError(f"hpcc ran on {out['CommWorldProcs']} processes, not {RANKS}")
    s = out["summary"]
    out["RandomAccess_s"] = s["MPIRandomAccess_time"] + s["MPIRandomAccess_LCG_time"]
    return out


def agree(d, app, results):
    s = app["summary"]
    timed = {k: s[k] for k in ("HPL_time", "PTRANS_time", "MPIRandomAccess_time", "MPIRandomAccess_LCG_time")}
    ra = app["RandomAccess_s"]
    assert ra >= max(timed["HPL_time"], timed["PTRANS_time"]), f"MPIRandomAccess is not hpcc's longest timed test here: {timed}"
    tops = [f["kind"] for f in c.top_findings(d)]
    assert "mpi-time" in tops, f"perfsift's top findings are {tops}; hpcc's longest test (MPIRandomAccess, {ra:.2f} s) is communication"
    op, secs = c.ops_by_time(d)[0]
    assert op in POLLING, f"perfsift's largest MPI operation is {op}, not MPIRandomAccess's polling ({', '.join(POLLING)})"
    assert 0.4 * ra <= secs <= 1.05 * ra, (f"{op} takes {secs:.2f} s per rank, outside 40-105 % of hpcc's MPIRandomAccess "
                                           f"times {ra:.2f} s (MPIRandomAccess_time + MPIRandomAccess_LCG_time)")
    return (f"hpcc MPIRandomAccess_time + _LCG_time = {ra:.2f} s (HPL_time {timed['HPL_time']:.2f} s, PTRANS_time "
            f"{timed['PTRANS_time']:.4f} s); perfsift: {op} {secs:.2f} s/rank ({secs / ra:.0%})")
