#!/usr/bin/python3
"""Calls to and from MPI_PROC_NULL are no messages: proc_null_test.py PERFSIFT APP WORK_DIR

Collects tests/apps/halo_open_ends (a 1-D halo exchange whose end ranks' outer neighbour
is MPI_PROC_NULL, with MPI_Irecv/MPI_Isend/MPI_Waitall and MPI_Sendrecv) on 3 ranks and
analyses it on one process. Known answer: 4 (P - 1) N = 8 N messages, each matched; the
calls to MPI_PROC_NULL are neither messages nor unmatched, in `perfsift info` and in the
replay alike, and the replay says nothing about receives without a partner.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import harness  # noqa: E402

RANKS, ITERATIONS = 3, 50


def main(perfsift_binary, app, work):
    work = harness.work_dir(work)
    perfsift = harness.Perfsift(perfsift_binary)
    store, results = work / "halo.h5", work / "halo-results.h5"
    perfsift.collect(store, RANKS, app, ITERATIONS, out=work / "collect.txt", err=harness.STDOUT)
    messages = 4 * (RANKS - 1) * ITERATIONS
    info = json.loads(perfsift("info", store, "--json", out=harness.CAPTURE).stdout)
    p2p = info["p2p"]
    errors = []
    if (p2p["sends"], p2p["receives"], p2p["unmatched_sends"], p2p["unmatched_receives"]) != (messages, messages, 0, 0):
        errors.append(f"perfsift info: {p2p}, expected {messages} sends and receives, none unmatched")
    done = perfsift.analyze(store, results, "--json", work / "halo.json", ranks=1, out=harness.CAPTURE,
                            err=harness.CAPTURE)
    matching = json.loads((work / "halo.json").read_text())["whatif"][0]["matching"]
    print(f"info: {p2p}\nreplay: {matching}")
    if (matching["sends"], matching["receives"], matching["unmatched_sends"], matching["unmatched_receives"]) != (
            messages, messages, 0, 0):
        errors.append(f"replay: {matching}, expected {messages} sends and receives, none unmatched")
    said = [line for line in (done.stdout + done.stderr).splitlines() if "no partner" in line]
    if said:
        errors.append("the analysis warns: " + said[0])
    return harness.verdict(errors)


if __name__ == "__main__":
    harness.run_script(main, 3, __doc__)
