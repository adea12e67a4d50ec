#!/usr/bin/python3
"""MPI from several threads of each rank: threads_test.py MODE PERFSIFT APP WORK_DIR

Runs tests/apps/hybrid_threads (4 ranks x 3 threads, MPI_THREAD_MULTIPLE, real mpirun)
under `perfsift collect` and checks the store against the app's known answer, thread by
thread (the threads are told apart by their tags; the store numbers them by first call).
  collect: a clean run. Every call of every thread is in /events with its thread in
           /events_thread; each rank's events are in entry-time order; every completion
           names an MPI_Wait of the thread that made it, the cross-thread request (posted
           by the main thread, completed by another) included. Then `perfsift analyze`
           (2 processes) succeeds and replays every thread (check_replay).
  spill:   the same with 2,000 times the iterations and a 1 MiB buffer: every thread
           spills its buffer many times (and the watcher flushes once a second) while the
           others record; the store holds the same counts, scaled.
  crash:   rank 1's thread 1 dies (SIGSEGV) while rank 1's other threads are blocked in
           MPI_Recv and the other ranks in MPI_Barrier. The store collect recovers, and
           the one `perfsift recover` builds from the spill files, hold every completed
           call of every thread; the blocked calls are kept and marked interrupted.
Run with Debian's /usr/bin/python3, which has h5py.
"""
import os
import shutil
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import captured  # noqa: E402  tests/harness.py

NRANKS, NTHREADS = 4, 3
INTERRUPTED = 1 << 6
# Open MPI's grace between SIGTERM and SIGKILL stays what `perfsift collect` gives it (3 s):
# with 1 s, a rank waiting for a core (12 threads on 2 cores, CI's other tests beside them)
# now and then lost its flush of the call it was blocked in (as in crash_matrix_test.py).
os.environ.pop("OMPI_MCA_odls_base_sigkill_timeout", None)


SCALE = {"collect": 1, "spill": 2000, "crash": 1}
MODE = "collect"


def loops(t):
    return (4 + 3 * t) * SCALE[MODE]


def check_store(path, crashed):
    errors = []
    with h5py.File(path, "r") as f:
        if "events_thread" not in f:
            return [f"{path}: no /events_thread"]
        ops = [o.decode() for o in f["ops"][:]]
        off = f["events_offsets"][:]
        roff, coff = f["requests_offsets"][:], f["completions_offsets"][:]
        threads_all = f["events_thread"][:]
        if bool(int(f.attrs["incomplete"])) != crashed:
            errors.append(f"{path}: incomplete = {int(f.attrs['incomplete'])}")
        for r in range(NRANKS):
            ev = f["events"][off[r] : off[r + 1]]
            th = threads_all[off[r] : off[r + 1]]
            if len(ev) == 0:
                errors.append(f"rank {r}: no events")
                continue
            # Entry-time order, up to the tick clock's conversion: records converted to ns at
            # different spills may step back by a few hundred ns (as with one thread).
            if np.any(np.diff(ev["t_enter"]) < -10000):
                errors.append(f"rank {r}: events not in entry-time order (by {-np.diff(ev['t_enter']).max()} ns)")
            if sorted(set(th.tolist())) != list(range(NTHREADS)):
                errors.append(f"rank {r}: threads {sorted(set(th.tolist()))}, expected 0..{NTHREADS - 1}")
                continue
            # Which app thread each recorded thread is: the tag of its MPI_Isend calls.
            app_thread = {}
            for k in range(NTHREADS):
                tags = {int(e["tag"]) for e, t in zip(ev, th) if t == k and ops[e["op"]] == "MPI_Isend"}
                if len(tags) != 1 or not 100 <= min(tags) < 100 + NTHREADS:
                    errors.append(f"rank {r} thread {k}: MPI_Isend tags {sorted(tags)}")
                    continue
                app_thread[k] = min(tags) - 100
            if sorted(app_thread.values()) != list(range(NTHREADS)) or app_thread.get(0) != 0:
                errors.append(f"rank {r}: recorded thread -> app thread {app_thread} (thread 0 must be main)")
                continue
            for k, t in app_thread.items():
                c = {}
                for e, tk in zip(ev, th):
                    if tk != k:
                        continue
                    name = ops[e["op"]]
                    if e["flags"] & INTERRUPTED:
                        name += "!"
                    key = (name, int(e["tag"])) if name in ("MPI_Isend", "MPI_Recv", "MPI_Send", "MPI_Irecv",
                                                             "MPI_Recv!") else (name, None)
                    c[key] = c.get(key, 0) + 1
                n = loops(t)
                want = {("MPI_Isend", 100 + t): n, ("MPI_Recv", 100 + t): n, ("MPI_Wait", None): n}
                if t == 2:
                    want[("MPI_Send", 200)] = 1
                    want[("MPI_Wait", None)] = n + 1
                if t == 0:
                    want.update({("MPI_Init_thread", None): 1, ("MPI_Irecv", 200): 1})
                    if not crashed:
                        want.update({("MPI_Barrier", None): 1, ("MPI_Finalize", None): 1})
                    elif r != 1:
                        want[("MPI_Barrier!", None)] = 1
                        want[("MPI_Send", 400)] = 1  # tells rank 1 it is about to enter the barrier
                if crashed and r == 1 and t in (0, 2):
                    want[("MPI_Recv!", -1)] = 1  # cut before its recorder ran: no tag
                if crashed and r == 1 and t == 1:
                    want[("MPI_Recv", 400)] = NRANKS - 1  # the others about to enter the barrier
                if c != want:
                    errors.append(f"rank {r} thread {k} (app thread {t}): {sorted(c.items(), key=str)}, "
                                  f"expected {sorted(want.items(), key=str)}")
            # Requests and completions: indices into this rank's events, completions by MPI_Wait
            # on the thread that waited; the tag-200 receive crosses from thread 0 to app thread 2.
            req = f["requests"][roff[r] : roff[r + 1]]
            cmp = f["completions"][coff[r] : coff[r + 1]]
            by_id = {int(q["id"]): q for q in req}
            waits = sum(1 for e in ev if ops[e["op"]] == "MPI_Wait" and not e["flags"] & INTERRUPTED)
            if len(cmp) != waits:
                errors.append(f"rank {r}: {len(cmp)} completions for {waits} MPI_Wait calls")
            if np.any(np.diff(req["event"]) < 0) or np.any(np.diff(cmp["event"]) < 0):
                errors.append(f"rank {r}: requests or completions not ordered by event")
            crossed = 0
            for c in cmp:
                e, q = int(c["event"]), by_id.get(int(c["request"]))
                if q is None or not 0 <= e < len(ev) or not 0 <= int(q["event"]) < len(ev):
                    errors.append(f"rank {r}: completion {c} names no request or event")
                    continue
                if ops[ev[e]["op"]] != "MPI_Wait" or ops[ev[int(q["event"])]["op"]] not in ("MPI_Isend", "MPI_Irecv"):
                    errors.append(f"rank {r}: completion by {ops[ev[e]['op']]} of a request from "
                                  f"{ops[ev[int(q['event'])]['op']]}")
                    continue
                t_start, t_done = app_thread[th[int(q["event"])]], app_thread[th[e]]
                if int(q["tag"]) == 200:
                    crossed += 1
                    if (t_start, t_done) != (0, 2) or int(c["source"]) != (r + NRANKS - 1) % NRANKS:
                        errors.append(f"rank {r}: the tag-200 receive went from app thread {t_start} to {t_done}")
                elif int(q["tag"]) != 100 + t_start or t_start != t_done:
                    errors.append(f"rank {r}: request tag {int(q['tag'])} started on app thread {t_start}, "
                                  f"completed on {t_done}")
            if crossed != 1:
                errors.append(f"rank {r}: {crossed} completions of the cross-thread receive")
    return errors


def collect(perfsift, app, store, mode, env=None):
    shutil.rmtree(store + ".spill", ignore_errors=True)
    for p in (store, store + ".recovered.h5"):
        if os.path.exists(p):
            os.remove(p)
    return captured([perfsift, "collect", "-o", store, "--", "mpirun", "-n", NRANKS, app, mode, SCALE[MODE]], env=env,
                    merge=True, timeout=120)


def run_spill(perfsift, app, work):
    store = os.path.join(work, "threads_spill.h5")
    p = collect(perfsift, app, store, "normal", {"PERFSIFT_BUFFER_MB": "1"})
    if p.returncode != 0 or not os.path.exists(store):
        return ["collect failed:\n" + p.stdout]
    return check_store(store, False)


def check_replay(store, results):
    """Every thread replays on its own clock: every message meets its partner in the
    replay, no dependency is released (the lanes' posts and completions keep their
    measured order), and rank 1's thread 1 waits in its first MPI_Recv (tag 101) for rank
    0's thread 1, 30 ms late (the app's known answer), in the replay as measured. (The
    baseline's error is not checked here: 12 threads polling on 2 cores lose CPU inside
    MPI calls, which LogGPS does not model; the whatif_baselines test checks accuracy.)"""
    errors = []
    with h5py.File(store, "r") as f, h5py.File(results, "r") as r:
        w = r["whatif"].attrs
        for key in ("unmatched_sends", "unmatched_receives"):
            if int(w[key]) != 0:
                errors.append(f"whatif {key} = {int(w[key])}")
        questions = [q.decode() if isinstance(q, bytes) else q for q in r["whatif/questions/question"][:]]
        baseline = questions.index("baseline")
        released = int(r["whatif/questions/released"][:][baseline])
        if released:
            errors.append(f"the baseline replay released {released} stuck dependencies")
        ops = [o.decode() for o in f["ops"][:]]
        lo, hi = (int(x) for x in f["events_offsets"][1:3])
        ev = f["events"][lo:hi]
        first = next((i for i, e in enumerate(ev) if ops[e["op"]] == "MPI_Recv" and e["tag"] == 101), None)
        if first is None:
            return errors + ["rank 1 has no MPI_Recv with tag 101"]
        measured = (int(ev[first]["t_exit"]) - int(ev[first]["t_enter"])) * 1e-9
        t = r["whatif/trace"]
        rows = (t["question"][:] == baseline) & (t["rank"][:] == 1) & (t["event"][:] == first)
        if rows.sum() != 1:
            return errors + [f"no baseline replay of rank 1's event {first}"]
        wait = float(t["wait_ns"][:][rows][0]) * 1e-9
        library = f.attrs.get("mpi_library", b"")
        library = library.decode() if isinstance(library, bytes) else str(library)
        text = f"rank 1 thread 1's late-sender wait: measured {measured * 1e3:.1f} ms, replayed {wait * 1e3:.1f} ms"
        if library.startswith("MPICH"):
            # Under MPICH (ch4:ucx polls without yielding: 12 threads on 2 cores) the measured
            # wait holds the receiver's descheduling after the message came (e.g. 39.9 ms
            # waited, the send 19.9 ms after the receive), and rank 0's main thread makes
            # several calls between creating the sender thread and that thread's first call:
            # thread creation is not traced, so the replay starts the new thread from the main
            # thread's latest entry and the 30 ms computation appears shorter (replayed 16.0,
            # 10.2, 14.1 ms against 19.9, 30.0, 22.1 ms of the send coming after the receive).
            # Said, not asserted (docs/whatif.md, Threads).
            print(text + " (MPICH: not checked)")
        elif not 0.5 * measured <= wait <= 1.5 * measured:
            errors.append(text)  # the replay must follow what was measured
        elif measured < 0.015:
            # At least half the 30 ms sleep: the threads start a few ms apart on 2 cores
            # (24.6 ms measured in 2 of 40 runs); a run whose receiver thread lost the CPU past
            # the sleep (seen under the sanitizers beside other tests) did not show the app's
            # known answer: the caller collects again.
            errors.append(LOST_PATTERN + text)
    return errors


LOST_PATTERN = "the app's late sender did not show: "


def run_collect(perfsift, app, work, tries=3):
    errors = []
    for _ in range(tries):
        errors = collect_once(perfsift, app, work)
        if not errors or any(not e.startswith(LOST_PATTERN) for e in errors):
            return errors
        print(errors[0] + " (collecting again)")
    return errors


def collect_once(perfsift, app, work):
    store = os.path.join(work, "threads.h5")
    p = collect(perfsift, app, store, "normal")
    if p.returncode != 0 or not os.path.exists(store):
        return ["collect failed:\n" + p.stdout]
    errors = check_store(store, False)
    results = os.path.join(work, "threads_results.h5")
    a = captured(["mpirun", "-n", "2", perfsift, "analyze", store, "-o", results], merge=True, timeout=180)
    if a.returncode != 0 or not os.path.exists(results):
        errors.append("analyze failed:\n" + a.stdout)
    else:
        errors += check_replay(store, results)
    for line in a.stdout.splitlines():
        if "Traceback" in line or "terminate called" in line or "Segmentation" in line:
            errors.append("analyze: " + line)
    return errors


def run_crash(perfsift, app, work):
    store = os.path.join(work, "threads_crash.h5")
    p = collect(perfsift, app, store, "crash")
    errors = []
    if p.returncode == 0:
        errors.append("perfsift collect exited 0 although rank 1 died")
    if not os.path.exists(store):
        return errors + ["no store recovered:\n" + p.stdout]
    errors += check_store(store, True)
    r = captured([perfsift, "recover", store + ".spill", "-o", store + ".recovered.h5"], merge=True, timeout=60)
    if r.returncode != 0:
        errors.append("perfsift recover failed: " + r.stdout)
    else:
        errors += ["recover: " + e for e in check_store(store + ".recovered.h5", True)]
    if errors:
        errors.append("collect output:\n" + p.stdout)
    return errors


def main():
    global MODE
    mode, perfsift, app, work = sys.argv[1:5]
    MODE = mode
    os.makedirs(work, exist_ok=True)
    errors = {"collect": run_collect, "spill": run_spill, "crash": run_crash}[mode](perfsift, app, work)
    for e in errors:
        print(e)
    print(f"{mode}: {'FAIL' if errors else 'ok'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
