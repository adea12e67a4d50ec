"""Helpers the cases share: perfsift's view of a run (from the JSON report) in the units the
applications' own timers use."""


def op_time_per_rank(d, op):
    """Seconds per rank in one MPI operation (profile.ops sums over ranks)."""
    for o in d["profile"]["ops"]:
        if o["op"] == op:
            return o["time_s"] / d["run"]["ranks"]
    return 0.0


def ops_by_time(d, skip=("MPI_Init", "MPI_Init_thread", "MPI_Finalize")):
    """(op, seconds per rank), largest first, start-up and shut-down left out."""
    return sorted(((o["op"], o["time_s"] / d["run"]["ranks"]) for o in d["profile"]["ops"] if o["op"] not in skip),
                  key=lambda x: -x[1])


def program(d):
    return next(r for r in d["profile"]["regions"] if r["path"] == "(program)")


def mpi_share(d):
    """MPI time over wall time per rank, MPI_Init and MPI_Finalize left out of both (the
    applications' own timers start after MPI_Init)."""
    init = op_time_per_rank(d, "MPI_Init") + op_time_per_rank(d, "MPI_Init_thread")
    fin = op_time_per_rank(d, "MPI_Finalize")
    prog = program(d)
    return (prog["mpi_mean_s"] - init - fin) / (prog["wall_mean_s"] - init - fin)


def top(d):
    """The first finding, or a placeholder when perfsift found nothing worth reporting."""
    return d["findings"][0] if d["findings"] else {"kind": "(none)", "where": "-", "ranks": "-", "cause": "", "lost_s": 0}


def models(d):
    return [g["model"] for g in d.get("diagnosis", [])]


def top_findings(d, n=3, min_share=0.05):
    """The first n findings (ranked by the predicted gain of their fix) with at least
    min_share of the run at stake — smaller ones are within what an oversubscribed machine
    shifts between runs — Hercule's model diagnoses left out: the driver checks those
    against the case's MODELS."""
    floor = min_share * d["run"]["wall_time_s"]
    return [f for f in d["findings"][:n] if f["stage"] != "diagnosis" and (f.get("lost_s") or 0) >= floor]


def waited(f):
    """Seconds of waiting a wait-state finding reports (its lost time)."""
    return f["lost_s"]


def within(ours, theirs, lo=0.5, hi=1.5):
    return lo * theirs <= ours <= hi * theirs
