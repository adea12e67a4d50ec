#!/usr/bin/python3
"""Call sites a user can act on, under real mpirun.

usage: call_paths_test.py MODE PERFSIFT WORK_DIR APP_DIR

  wrapper   tests/apps/wrapped_calls.c on 3 ranks: every MPI_Allreduce is made by the
            program's wrapper `exchange`, called by solve_pressure (rank 1 late) and
            solve_velocity. Collected with sites.wrappers = exchange, the store holds two
            reduction sites named by the callers (with their source lines), each with
            exchange as its wrapper frame, and perfsift analyze places the punctual ranks'
            wait at solve_pressure, via exchange. Collected without it,
            the two are one site in exchange (what the setting changes).
  stripped  tests/apps/two_sites.c stripped here (its debug symbols moved to
            debug/.build-id/), on 2 ranks: its two MPI_Barrier sites stay two sites in the
            store and two rows in the results, each named by the executable and its
            offset; rank 0's wait (rank 1 late at the first) is named by the first's; the
            store keeps the executable's build-id, and `perfsift info --resolve debug`
            names both sites' source lines.

Run with Debian's /usr/bin/python3, which has h5py. Structure, not timing: the checks
compare sites, never a duration.
"""
import json
import os
import sys
from pathlib import Path

import h5py

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
import check_results as cr  # noqa: E402  tests/mpi/check_results.py
import harness  # noqa: E402  tests/harness.py
from harness import STDOUT  # noqa: E402


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def text_list(values):
    return [v.decode() if isinstance(v, bytes) else str(v) for v in values]


def call_sites(store):
    """Each call site of the store: {module, offset, function, line, via: [functions]}."""
    with h5py.File(store, "r") as f:
        g = f["callsites"]
        modules, functions = text_list(g["module"][:]), text_list(g["function"][:])
        offsets, lines = list(g["offset"][:]), list(g["line"][:])
        via = [[] for _ in modules]
        if "via_rows" in g:
            rows, via_functions = list(g["via_rows"][:]), text_list(g["via_function"][:])
            via = [via_functions[rows[s]:rows[s + 1]] for s in range(len(modules))]
    return [{"module": m, "offset": int(o), "function": fn, "line": int(ln), "via": v}
            for m, o, fn, ln, v in zip(modules, offsets, functions, lines, via)]


def sites_of_op(store, op):
    """The call sites of the events of MPI function `op`."""
    with h5py.File(store, "r") as f:
        ops = text_list(f["ops"][:])
        events = f["events"][:]
    want = ops.index(op)
    ids = sorted({int(e["callsite"]) for e in events if int(e["op"]) == want})
    sites = call_sites(store)
    return [sites[i] for i in ids]


def largest_wait(report):
    """The wait state the analysis found costliest: a symptom of the problem it reports."""
    waits = [e for e in cr.reported(json.load(open(report))) if e["kind"].startswith("wait-")]
    check(waits, f"{report}: no wait state reported")
    return max(waits, key=lambda e: e["lost_s"])


def test_wrapper(perfsift, app_dir):
    app = os.path.join(app_dir, "app_wrapped_calls")
    perfsift.collect("plain.h5", 3, app, out="plain.collect.txt", err=STDOUT)
    plain = sites_of_op("plain.h5", "MPI_Allreduce")
    check(len(plain) == 1 and plain[0]["function"] == "exchange" and not plain[0]["via"],
          f"without sites.wrappers the reductions should be one site in exchange: {plain}")

    perfsift.collect("w.h5", 3, app, out="w.collect.txt", err=STDOUT, env={"PERFSIFT_SITE_WRAPPERS": "exchange"})
    sites = sites_of_op("w.h5", "MPI_Allreduce")
    check(sorted(s["function"] for s in sites) == ["solve_pressure", "solve_velocity"],
          f"the reductions should be sited at the two callers of exchange: {sites}")
    for s in sites:
        check(s["via"] == ["exchange"], f"{s['function']}: the wrapper frame should be exchange: {s}")
        check(s["line"] > 0, f"{s['function']}: no source line for the caller: {s}")

    perfsift.analyze("w.h5", "w.results.h5", "--json", "w.json", out="w.txt", err=STDOUT)
    wait = largest_wait("w.json")
    check("solve_pressure (wrapped_calls.c:" in wait["where"] and "via exchange+0x" in wait["where"],
          f"the wait should be placed at solve_pressure, via exchange: {wait['where']}")
    check(wait["ranks"] == "0,2", f"the wait should be the punctual ranks': {wait}")
    text = Path("w.txt").read_text(errors="replace")
    check("solve_pressure (wrapped_calls.c:" in text, "the text report should name solve_pressure")
    print(f"largest wait: {wait['kind']} at {wait['where']} on ranks {wait['ranks']}")


def build_id(path):
    out = harness.run(["readelf", "-n", path], out=harness.CAPTURE).stdout
    return out.split("Build ID:")[1].split()[0]


def test_stripped(perfsift, app_dir):
    # As a site installs a code: stripped, its debug symbols in a directory of their own.
    built = os.path.join(app_dir, "app_two_sites")
    os.makedirs("debug", exist_ok=True)
    harness.run(["objcopy", "--only-keep-debug", built, "debug/two_sites.debug"])
    harness.run(["strip", "-o", "two_sites", built])
    ident = build_id("two_sites")
    os.makedirs(f"debug/.build-id/{ident[:2]}")
    os.rename("debug/two_sites.debug", f"debug/.build-id/{ident[:2]}/{ident[2:]}.debug")
    app = os.path.abspath("two_sites")

    perfsift.collect("s.h5", 2, app, out="s.collect.txt", err=STDOUT)
    sites = [s for s in sites_of_op("s.h5", "MPI_Barrier") if s["module"] == app]
    check(len(sites) == 2, f"the two barriers should be two sites of the executable: {sites}")
    check(all(s["line"] == 0 for s in sites), f"a stripped build should have no lines: {sites}")
    first, second = sorted(sites, key=lambda s: s["offset"])
    labels = [f"two_sites+0x{s['offset']:x}" for s in (first, second)]
    with h5py.File("s.h5", "r") as f:
        ids = dict(zip(text_list(f["modules/path"][:]), text_list(f["modules/build_id"][:])))
    check(ids.get(app) == ident, f"the store should keep the executable's build-id {ident}: {ids}")

    perfsift.analyze("s.h5", "s.results.h5", "--json", "s.json", out="s.txt", err=STDOUT)
    with h5py.File("s.results.h5", "r") as f:
        t = f["profile/callsites"]
        rows = [(fn, int(o)) for fn, o, op in zip(text_list(t["function"][:]), t["offset"][:], text_list(t["op"][:]))
                if op == "MPI_Barrier" and fn == app]
    check(sorted(rows) == [(app, first["offset"]), (app, second["offset"])],
          f"the results' call-site table should have one row per barrier: {rows}")
    wait = largest_wait("s.json")
    check(wait["where"].endswith(labels[0]) and wait["ranks"] == "0",
          f"rank 0's wait should be named by the first barrier, {labels[0]}: {wait}")
    text = Path("s.txt").read_text(errors="replace")
    check(labels[0] in text, f"the text report should name {labels[0]}")
    print(f"largest wait: {wait['kind']} at {wait['where']} on ranks {wait['ranks']}")

    # Resolved later against the debug symbols, found by the build-id.
    out = perfsift("info", "s.h5", "--resolve", "debug", out=harness.CAPTURE).stdout
    print(out)
    resolved = [ln for ln in out.splitlines() if ln.strip().startswith(tuple(labels))]
    check(len(resolved) == 2 and all("main (two_sites.c:" in ln for ln in resolved),
          f"both barriers should resolve to main in two_sites.c: {out}")
    check(resolved[0].split(":")[-1] != resolved[1].split(":")[-1], f"the two sites resolve to one line: {out}")


def main(mode, perfsift_binary, work, app_dir):
    os.chdir(harness.work_dir(work))
    perfsift = harness.Perfsift(perfsift_binary)
    {"wrapper": test_wrapper, "stripped": test_stripped}[mode](perfsift, app_dir)
    print("PASS")
    return 0


if __name__ == "__main__":
    harness.run_script(main, 4, __doc__.split("\n\n")[1])
