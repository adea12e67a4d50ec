"""What the OTF2 tests (otf2_test.py, export_test.py) share: running perfsift and mpirun,
reading a trace store's events with h5py, a report's first findings."""
import json
import sys
from pathlib import Path

import h5py

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import captured  # noqa: E402  tests/harness.py

# The test's paths, set by its main(): perfsift, and what else it was given.
ARGS = {}


def streams(cmd, expect=0):
    """cmd's (stdout, stderr); its exit code must be `expect`."""
    done = captured(cmd, expect=expect)
    return done.stdout, done.stderr


def perfsift(*args, expect=0):
    return streams([ARGS["perfsift"], *args], expect=expect)


def perfsift_lines(err):
    return [l for l in err.splitlines() if l.startswith("perfsift:")]


def analyze(source, name, k=2):
    """mpirun -n K perfsift analyze SOURCE -o NAME.h5 --json NAME.json; the JSON report."""
    out, err = streams(["mpirun", "-n", k, ARGS["perfsift"], "analyze", source, "-o", f"{name}.h5", "--json",
                    f"{name}.json"])
    Path(f"{name}.txt").write_text(out + err)
    return json.loads(Path(f"{name}.json").read_text())


def text(v):
    return v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else str(v)


def events(store):
    """Per rank: a list of (op name, t_enter, t_exit, peer, tag, bytes, region path)."""
    with h5py.File(store, "r") as f:
        ops = [text(o) for o in f["ops"][...]]
        paths = [text(p) for p in f["regions/path"][...]]
        ev = f["events"][...]
        off = f["events_offsets"][...]
        out = []
        for r in range(len(off) - 1):
            rows = ev[off[r]:off[r + 1]]
            out.append([(ops[e["op"]], int(e["t_enter"]), int(e["t_exit"]), int(e["peer"]), int(e["tag"]),
                         int(e["bytes"]), paths[e["region"]]) for e in rows])
        return out


def findings(report, n=3):
    """The first n findings as (kind, where: region path and call site, culprit ranks)."""
    return [(f["kind"], f["where"], f["ranks"]) for f in report["findings"][:n]]


# How far an archive's 1 us times may move what a finding's fix buys: a replay of the
# archive differs from the store's by microseconds, which can swap two findings whose
# gains are that close (a run of a few milliseconds under sanitizers had them 50 us apart).
GAIN_TOLERANCE_S = 0.0002


def assert_same_findings(test, orig, back, where=lambda f: f["where"], n=3):
    """The archive's first findings are the store's: each of either's first n is found in
    the other with the same time lost, ranked alike but where two of them buy within
    GAIN_TOLERANCE_S of each other."""
    key = lambda f: (f["kind"], where(f), f["ranks"])
    worth = lambda f: f["lost_s"] if f.get("predicted_gain_s") is None else f["predicted_gain_s"]
    order_a = [key(f) for f in orig["findings"]]
    order_b = [key(f) for f in back["findings"]]
    # A finding whose fix buys about the least worth acting on may be a note on the other
    # side: its gain then differs by no more than the archive's rounding allows.
    a = {key(f): f for f in reversed(orig["findings"] + orig.get("notes", []))}
    b = {key(f): f for f in reversed(back["findings"] + back.get("notes", []))}
    first = list(dict.fromkeys(order_a[:n] + order_b[:n]))
    for k in first:
        test.assertIn(k, a, "a finding of the archive only")
        test.assertIn(k, b, "a finding of the store only")
        test.assertAlmostEqual(a[k]["lost_s"], b[k]["lost_s"], delta=0.001, msg=k)
        if (k in order_a) != (k in order_b):
            test.assertAlmostEqual(worth(a[k]), worth(b[k]), delta=GAIN_TOLERANCE_S,
                                   msg=f"{k}: a finding on one side, a note on the other")
    for x in first:
        for y in first:
            if x in order_a and y in order_a and x in order_b and y in order_b and \
                    order_a.index(x) < order_a.index(y) and order_b.index(x) > order_b.index(y):
                close = min(abs(worth(a[x]) - worth(a[y])), abs(worth(b[x]) - worth(b[y])))
                test.assertLessEqual(close, GAIN_TOLERANCE_S, f"{x} and {y} swapped places")
