#!/usr/bin/python3
"""MPI_Abort loses nothing recorded: abort_test.py PERFSIFT APP FORTRAN_APP WORK_DIR

Each case collects tests/apps/abort_run (C) or abort_run.F90 on 2 ranks: rank 1 calls
MPI_Abort after N MPI_Allreduce (N = 0: right after MPI_Init) while rank 0 waits in a
barrier until the launcher ends it. Known answer: the store `perfsift collect` recovers
holds both ranks, each with its N MPI_Allreduce; rank 1's last event is the MPI_Abort,
flagged interrupted, its error code in `tag`, its call site in the program's source;
`perfsift recover` and `perfsift info` say the program aborted (rank, code, place, time),
also when no rank's profile was saved, and `perfsift analyze` puts that first in its
report and exits with code 4.
"""
import json
import struct
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import harness  # noqa: E402

INTERRUPTED = 1 << 6  # io::kInterrupted
ABORTED_EXIT = 4  # perfsift analyze: the analysed program aborted
# name: (app index, N, error code, source file of the call)
CASES = {"late": (0, 100, 7, "abort_run.c"), "early": (0, 0, 3, "abort_run.c"), "fortran": (1, 20, 5, "abort_run.F90")}


def check_store(path, n, code, source):
    errors = []
    with h5py.File(path, "r") as f:
        ops = [o.decode() for o in f["ops"][:]]
        off = f["events_offsets"][:]
        missing = list(f.attrs["missing_ranks"]) if f.attrs["missing_ranks"].shape else []
        if missing:
            errors.append(f"missing ranks {missing}")
        for r in range(2):
            ev = f["events"][off[r] : off[r + 1]]
            names = [ops[o] for o in ev["op"]]
            if names.count("MPI_Allreduce") != n:
                errors.append(f"rank {r}: {names.count('MPI_Allreduce')} MPI_Allreduce, expected {n}")
            if r != 1:
                continue
            if not names or names[-1] != "MPI_Abort":
                errors.append(f"rank 1's last event is {names[-1:]}, not MPI_Abort")
                continue
            last = ev[-1]
            if int(last["tag"]) != code or not int(last["flags"]) & INTERRUPTED:
                errors.append(f"rank 1's MPI_Abort: tag {last['tag']}, flags {last['flags']}; expected {code}, interrupted")
            site = int(last["callsite"])
            where = f["callsites/file"][site].decode(), f["callsites/function"][site].decode()
            if not where[0].endswith(source):
                errors.append(f"MPI_Abort's call site {where}, expected in {source}")
    return errors


def without_profiles(spill_dir, out_dir):
    """The spill files with their state chunks (type 5: the profile and run facts) left
    out, as ranks SIGKILLed after a spill leave them (io/spill.h: a 32-byte header, then
    chunks of u32 type, u32 reserved, u64 bytes and the payload)."""
    out_dir.mkdir()
    for path in spill_dir.glob("rank-*.bin"):
        data, kept, at = path.read_bytes(), [], 32
        kept.append(data[:32])
        while at + 16 <= len(data):
            kind, _, size = struct.unpack_from("<IIQ", data, at)
            if kind != 5:
                kept.append(data[at : at + 16 + size])
            at += 16 + size
        (out_dir / path.name).write_bytes(b"".join(kept))


def check_without_profiles(perfsift, store, work):
    """A store recovered with events only (no rank's profile): info says the program
    aborted and that no profile was saved, and exits 0."""
    spills = work / "no-profiles.spill"
    without_profiles(Path(f"{store}.spill"), spills)
    perfsift("recover", spills, "-o", work / "no-profiles.h5", out=harness.DEVNULL, err=harness.DEVNULL)
    info = perfsift("info", work / "no-profiles.h5", out=harness.CAPTURE, err=harness.CAPTURE, expect=None)
    if info.returncode or "ABORTED      rank 1 called MPI_Abort" not in info.stdout or "regions      none" not in info.stdout:
        return [f"perfsift info on a store without profiles (exit {info.returncode}):\n{info.stdout}{info.stderr}"]
    return []


def run_case(perfsift, app, work, name, n, code, source):
    store = work / f"{name}.h5"
    done = perfsift.collect(store, 2, app, *([n, code] if app.endswith("abort_run") else []), out=harness.CAPTURE,
                            err=harness.STDOUT, expect=None, timeout=60)
    said = done.stdout
    errors = [] if done.returncode else ["perfsift collect exited 0 although the program aborted"]
    if not store.exists():
        return errors + ["no store recovered:\n" + said]
    errors += check_store(store, n, code, source)
    if name == "late":
        errors += check_without_profiles(perfsift, store, work)
    phrase = f"rank 1 called MPI_Abort with error code {code} at "
    if f"the program aborted: {phrase}" not in said or source not in said:
        errors.append("recover does not say the program aborted:\n" + said)
    info = perfsift("info", store, out=harness.CAPTURE, err=harness.CAPTURE, expect=None)
    if info.returncode or "ABORTED      " + phrase not in info.stdout or source not in info.stdout:
        errors.append(f"perfsift info (exit {info.returncode}) does not say where the program aborted:\n"
                      + info.stdout + info.stderr)
    aborted = json.loads(perfsift("info", store, "--json", out=harness.CAPTURE).stdout).get("aborted")
    if not aborted or (aborted["rank"], aborted["error_code"]) != (1, code) or not 0 < aborted["time_s"] < 30:
        errors.append(f"perfsift info --json: aborted = {aborted}")
    report = perfsift.analyze(store, work / f"{name}-results.h5", ranks=1, out=harness.CAPTURE, err=harness.CAPTURE,
                              expect=None)
    lines = report.stdout.splitlines()
    if report.returncode != ABORTED_EXIT:
        errors.append(f"perfsift analyze exited {report.returncode}, expected {ABORTED_EXIT}:\n{report.stderr}")
    if len(lines) < 2 or not lines[1].startswith("The program aborted: " + phrase):
        errors.append("the report does not open with the abort:\n" + "\n".join(lines[:5]))
    print(f"{name}: {said.strip().splitlines()[-1]}\n  info: {aborted}\n  report: {lines[1] if len(lines) > 1 else ''}",
          flush=True)
    return errors


def main(perfsift_binary, app, fortran_app, work):
    work = harness.work_dir(work)
    perfsift = harness.Perfsift(perfsift_binary)
    # The cases side by side: most of each is Open MPI's wait before it ends the others.
    with ThreadPoolExecutor(len(CASES)) as pool:
        found = {name: pool.submit(run_case, perfsift, (app, fortran_app)[which], work, name, n, code, source)
                 for name, (which, n, code, source) in CASES.items()}
    errors = [f"{name}: {e}" for name, f in found.items() for e in f.result()]
    return harness.verdict(errors)


if __name__ == "__main__":
    harness.run_script(main, 4, __doc__)
