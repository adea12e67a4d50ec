#!/usr/bin/python3
"""Any rank's death loses nothing recorded: crash_matrix_test.py PERFSIFT APP WORK_DIR [CASE...]

Each case runs tests/apps/crash (4 ranks, real mpirun, oversubscribed) under
`perfsift collect`: rank 1 dies (HOW: a signal, exit without MPI_Finalize, SIGKILL)
while the others wait where OTHERS says (in a barrier, sleeping, computing, inside
MPI_Finalize) until mpirun terminates them. The store `collect` recovers, and the one
`perfsift recover` builds again from the spill files, must hold every rank's events up
to its last completed call: N MPI_Sendrecv and the barrier on every rank (an MPI_Finalize
too on ranks that entered it), rank 1 missing only when SIGKILLed before any spill.
mpirun's grace between SIGTERM and SIGKILL is the 3 s `perfsift collect` gives it.
"""
import os
import shutil
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import captured  # noqa: E402  tests/harness.py

N = 30  # ring exchanges before the death
# name: (HOW, OTHERS, extra app args)
CASES = {
    "segv_finalize": ("segv", "finalize"),  # the survivors wait inside MPI_Finalize
    "segv_sleep": ("segv", "sleep"),
    "segv_barrier": ("segv", "barrier"),
    "segv_compute": ("segv", "compute"),
    "abrt_sleep": ("abrt", "sleep"),
    "abrt_finalize": ("abrt", "finalize"),
    "fpe_compute": ("fpe", "compute"),
    "fpe_barrier": ("fpe", "barrier"),
    "bus_sleep": ("bus", "sleep"),
    "bus_barrier": ("bus", "barrier"),
    "exit_sleep": ("exit", "sleep"),
    "exit_compute": ("exit", "compute"),
    "kill_barrier": ("kill", "barrier"),
    "killspilled_sleep": ("kill-spilled", "sleep"),
}


# Cases whose store is also analysed on 1 and 3 processes: the results must be identical
# however the ranks are split (rank 1 killed after spilling has events but no profile row,
# which only its owner saw; rank 1 SIGKILLed before any spill is missing).
SPLIT_CHECKED = ("killspilled_sleep", "kill_barrier", "segv_barrier")


def counts(f, rank):
    off = f["events_offsets"][:]
    ev = f["events"][off[rank] : off[rank + 1]]
    ops = [o.decode() for o in f["ops"][:]]
    c = {}
    for op in ev["op"]:
        c[ops[op]] = c.get(ops[op], 0) + 1
    return c


def check_store(path, how, others):
    errors = []
    with h5py.File(path, "r") as f:
        if int(f.attrs["nranks"]) != 4:
            return [f"{path}: {f.attrs['nranks']} ranks, expected 4"]
        if not int(f.attrs["incomplete"]):
            errors.append(f"{path}: not marked incomplete")
        missing = [int(r) for r in np.atleast_1d(f.attrs["missing_ranks"])] if f.attrs["missing_ranks"].shape else []
        for r in range(4):
            c = counts(f, r)
            if r == 1 and how == "kill":
                # SIGKILL: no handler; rank 1 keeps what it spilled, which may be nothing.
                if 1 not in missing and not 0 <= c.get("MPI_Sendrecv", 0) <= N:
                    errors.append(f"rank 1 (SIGKILL): {c}")
                continue
            want = {"MPI_Sendrecv": N, "MPI_Barrier": 1}
            if r != 1 and others == "barrier":
                want["MPI_Barrier"] = 2  # the second one, interrupted, is kept and marked
            if r != 1 and others == "finalize":
                want["MPI_Finalize"] = 1
            if r in missing:
                errors.append(f"rank {r} missing")
                continue
            for op, n in want.items():
                if c.get(op, 0) != n:
                    errors.append(f"rank {r}: {c.get(op, 0)} {op}, expected {n} (all: {c})")
    return errors


def run_case(perfsift, app, work, name, how, others):
    store = os.path.join(work, name + ".h5")
    shutil.rmtree(store + ".spill", ignore_errors=True)
    for p in (store, store + ".recovered.h5"):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.time()
    p = captured([perfsift, "collect", "-o", store, "--", "mpirun", "-n", "4", app, how, others, N], merge=True,
                 timeout=90)
    took = time.time() - t0
    errors = []
    if p.returncode == 0:
        errors.append("perfsift collect exited 0 although rank 1 died")
    if not os.path.exists(store):
        return took, errors + ["no store recovered:\n" + p.stdout]
    errors += check_store(store, how, others)
    # The spill files stay: `perfsift recover` rebuilds the same store from them.
    r = captured([perfsift, "recover", store + ".spill", "-o", store + ".recovered.h5"], merge=True, timeout=60)
    if r.returncode != 0:
        errors.append("perfsift recover failed: " + r.stdout)
    else:
        errors += ["recover: " + e for e in check_store(store + ".recovered.h5", how, others)]
    if name in SPLIT_CHECKED and os.path.exists(store):
        errors += split_check(perfsift, store)
    if errors:
        errors.append("collect output:\n" + p.stdout)
    return took, errors


def split_check(perfsift, store):
    """The store analysed on K = 1 and K = 3: identical results stores."""
    outs = []
    for k in (1, 3):
        out = f"{store}.k{k}.results.h5"
        a = captured(["mpirun", "-n", k, perfsift, "analyze", store, "-o", out], merge=True, timeout=120)
        if a.returncode != 0:
            return [f"perfsift analyze on K = {k} failed: " + a.stdout]
        outs.append(out)
    d = captured(["h5diff", outs[0], outs[1]], merge=True)
    if d.returncode != 0:
        return ["results on K = 3 differ from K = 1:\n" + d.stdout[-2000:]]
    return []


def main():
    perfsift, app, work = sys.argv[1:4]
    names = sys.argv[4:] or list(CASES)
    os.makedirs(work, exist_ok=True)
    # Open MPI's grace between SIGTERM and SIGKILL is what `perfsift collect` gives it (3 s):
    # with 1 s a survivor still waiting for a core (5 processes on 2 cores) now and then
    # lost its flush.
    os.environ.pop("OMPI_MCA_odls_base_sigkill_timeout", None)
    failed = 0
    for name in names:
        how, others = CASES[name]
        took, errors = run_case(perfsift, app, work, name, how, others)
        print(f"{name}: {'FAIL' if errors else 'ok'} ({took:.1f} s)", flush=True)
        for e in errors:
            print("  " + e, flush=True)
        failed += bool(errors)
    print(f"{len(names) - failed} of {len(names)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
