#!/usr/bin/python3
"""Python programs under the collector: python_sites_test.py MODE PERFSIFT APPS_DIR WORK_DIR

MODE sites: tests/apps/python_sites.py (mpi4py, 3 ranks), collected with nothing installed
into it. Known answer: each MPI call's site is the Python line that made it (the lines marked
`# site: NAME`, with their functions): the two barriers are two sites; no call of the program
is placed in mpi4py's extension module; the regions of perfsift.region() (a decorator and a
`with`) are in the store, holding their calls; the analysis finds rank 1's sleep in region
solve and names the barrier where the others wait by its Python function, file and line.
MODE futures: tests/apps/python_futures.py under `python3 -m mpi4py.futures` (3 ranks): the
run ends (no hang), prints its results, and the store holds its 3 ranks, the master's region
and sites in Python files.
MODE threads: tests/apps/python_threads.py (2 ranks): a thread's calls (the GIL released by
mpi4py, wanted by the main thread's Python loop) and the main thread's, each at its line and
function; the run ends.
Skipped (77) when /usr/bin/python3 has no mpi4py.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/
import harness  # noqa: E402

PYTHON = "/usr/bin/python3"


def marked_lines(app):
    """`# site: NAME` marks of the program: NAME -> line number."""
    return {m.group(1): n for n, text in enumerate(Path(app).read_text().splitlines(), 1)
            if (m := re.search(r"# site: (\w+)", text))}


def read_store(path):
    import h5py
    with h5py.File(path, "r") as f:
        sites = f["callsites"]
        table = [{k: (v.decode() if isinstance(v, bytes) else int(v)) for k, v in
                  zip(("module", "function", "file", "line"),
                      (sites["module"][i], sites["function"][i], sites["file"][i], sites["line"][i]))}
                 for i in range(sites["module"].shape[0])]
        ops = [o.decode() for o in f["ops"][()]]
        events = f["events"][()]
        regions = [p.decode() for p in f["regions/path"][()]]
        return table, ops, events, regions, int(f.attrs["nranks"])


def ops_at(events, ops, site_id):
    return {ops[e["op"]] for e in events if e["callsite"] == site_id}


def check_sites(app, table, ops, events, regions):
    errors = []
    marks = marked_lines(app)
    expected = {"sendrecv": ("exchange", "MPI_Sendrecv"), "relax_barrier": ("relax", "MPI_Barrier"),
                "final_barrier": ("<module>", "MPI_Barrier")}
    for mark, (function, op) in expected.items():
        found = [i for i, s in enumerate(table) if s["file"] == app and s["line"] == marks[mark]]
        if len(found) != 1:
            errors.append(f"{mark}: {len(found)} call sites at {app}:{marks[mark]}, expected 1; sites: {table}")
            continue
        site = table[found[0]]
        if site["function"] != function or ops_at(events, ops, found[0]) != {op}:
            errors.append(f"{mark}: site {site} holds {ops_at(events, ops, found[0])}, expected {op} in {function}")
    in_module = [s for i, s in enumerate(table) if "MPI.cpython" in s["module"] and
                 ops_at(events, ops, i) & {"MPI_Sendrecv", "MPI_Barrier"}]
    if in_module:
        errors.append(f"the program's calls placed in mpi4py's extension module: {in_module}")
    for name, op, count in (("exchange", "MPI_Sendrecv", 3 * 2 * 4), ("solve", "MPI_Barrier", 3 * 2)):
        if name not in [r.rsplit("/", 1)[-1] for r in regions]:
            errors.append(f"region {name} not in the store: {regions}")
            continue
        rid = [r.rsplit("/", 1)[-1] for r in regions].index(name)
        held = sum(1 for e in events if e["region"] == rid and ops[e["op"]] == op)
        if held != count:
            errors.append(f"region {name} holds {held} {op} calls, expected {count}")
    return errors


def check_analysis(perfsift, store, work, app):
    results, report = work / "results.h5", work / "report.json"
    text = perfsift.analyze(store, results, "--json", report, out=harness.CAPTURE).stdout
    findings = json.loads(report.read_text())["findings"]
    barrier = f"relax ({Path(app).name}:{marked_lines(app)['relax_barrier']})"
    culprit = [f for f in findings if f["where"] == "solve" and "1" in f["ranks"].split(",")]
    errors = []
    if not culprit:
        errors.append(f"no finding in region solve on rank 1: {[(f['kind'], f['where'], f['ranks']) for f in findings]}")
    named = [s for f in culprit for s in f.get("symptoms", []) + f.get("evidence", []) if barrier in s["where"]]
    if not named:
        errors.append(f"the wait at the barrier is not named `{barrier}` in the findings:\n{json.dumps(findings)[:3000]}")
    if barrier not in text:
        errors.append(f"the text report does not name `{barrier}`:\n{text}")
    return errors


def sites(perfsift, apps, work):
    app = str(Path(apps, "python_sites.py").resolve())
    store = work / "python_sites.h5"
    perfsift.collect(store, 3, PYTHON, app, 0.5, log=work / "collect.txt", timeout=120)
    table, ops, events, regions, nranks = read_store(store)
    print(f"{nranks} ranks, {len(events)} events, sites:", *[f"{s['function']} {s['file']}:{s['line']}" for s in table],
          sep="\n  ")
    errors = check_sites(app, table, ops, events, regions)
    return errors + check_analysis(perfsift, store, work, app)


def futures(perfsift, apps, work):
    app = str(Path(apps, "python_futures.py").resolve())
    store = work / "python_futures.h5"
    try:
        done = perfsift("collect", "-o", store, "--", "mpirun", "-n", 3, PYTHON, "-m", "mpi4py.futures", app,
                        out=harness.CAPTURE, err=harness.STDOUT, timeout=90)
    except subprocess.TimeoutExpired:
        return ["the mpi4py.futures program did not end within 90 s under the collector"]
    print(done.stdout)
    errors = []
    if "results [0, 1, 4, 9, 16, 25]" not in done.stdout:
        errors.append("the mpi4py.futures program did not print its results")
    table, ops, events, regions, nranks = read_store(store)
    if nranks != 3:
        errors.append(f"store of {nranks} ranks, expected 3")
    if "map" not in [r.rsplit("/", 1)[-1] for r in regions]:
        errors.append(f"the master's region map is not in the store: {regions}")
    if not any(s["file"].endswith(".py") and s["line"] > 0 for s in table):
        errors.append(f"no call site in a Python file: {table}")
    return errors


def threads(perfsift, apps, work):
    app = str(Path(apps, "python_threads.py").resolve())
    store = work / "python_threads.h5"
    rounds = 200
    try:
        done = perfsift.collect(store, 2, PYTHON, app, rounds, out=harness.CAPTURE, err=harness.STDOUT, timeout=90)
    except subprocess.TimeoutExpired:
        return ["the two-thread program did not end within 90 s under the collector"]
    errors = [] if done.stdout.count("threads done") == 2 else [f"the program did not end well:\n{done.stdout}"]
    table, ops, events, _, _ = read_store(store)
    marks = marked_lines(app)
    for mark, function, op, count in (("thread_sendrecv", "poll", "MPI_Sendrecv", 2 * rounds),
                                      ("main_barrier", "<module>", "MPI_Barrier", 2 * 4)):
        ids = [i for i, s in enumerate(table) if s["file"] == app and s["line"] == marks[mark]]
        held = sum(1 for e in events if e["callsite"] in ids and ops[e["op"]] == op)
        if len(ids) != 1 or table[ids[0]]["function"] != function or held != count:
            errors.append(f"{mark}: sites {[table[i] for i in ids]} hold {held} {op} calls, expected one site in "
                          f"{function} with {count}; sites: {table}")
    return errors


def main(mode, perfsift_binary, apps, work):
    if subprocess.run([PYTHON, "-c", "import mpi4py"], capture_output=True).returncode != 0:
        print(f"SKIP: {PYTHON} has no mpi4py (Debian: apt-get install python3-mpi4py)")
        return 77
    work = harness.work_dir(work)
    perfsift = harness.Perfsift(perfsift_binary)
    return harness.verdict({"sites": sites, "futures": futures, "threads": threads}[mode](perfsift, apps, work))


if __name__ == "__main__":
    harness.run_script(main, 4, __doc__)
