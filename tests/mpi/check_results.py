"""Checks of `perfsift analyze` output against the results contract (docs/results.md).

usage: check_results.py contract RESULTS.h5 REPORT.json
       check_results.py finding REPORT.json KIND WHERE RANKS
       check_results.py missing REPORT.json RANK NRANKS
       check_results.py whatif REPORT.json MAX_ERROR
       check_results.py gain REPORT.json QUESTION EXPECTED_S TOLERANCE_S
       check_results.py apart REPORT.json PROPERTY NRANKS [CLASS]
       check_results.py master_worker REPORT.json MASTER
       check_results.py wavefront REPORT.json REFERENCE_REPORT.json
       check_results.py divide_conquer RESULTS.h5 REPORT.json
"""
import json
import math
import sys

import h5py

RESULTS_VERSION = 4  # io/results_store.h: kResultsVersion


def reported(d):
    """Everything the methods reported: each problem's evidence and symptoms, then the notes."""
    out = []
    for f in d["findings"]:
        out += [dict(e, problem=f) for e in f["evidence"] + f["symptoms"]]
    return out + [dict(n, problem=None) for n in d["notes"]]


def contract(results, report):
    with h5py.File(results, "r") as f:
        root = f.attrs
        assert root["format"] == "perfsift-results", root["format"]
        assert int(root["version"]) == RESULTS_VERSION, f"results version {int(root['version'])}"
        for key in ("source_store", "source_checksum", "configuration", "configuration_effective", "stages"):
            assert key in root, f"root attribute {key} missing"
        assert str(root["source_checksum"]).startswith("blockhash64:")
        stages = [s.decode() if isinstance(s, bytes) else s for s in root["stages"]]
        for s in stages:
            assert s in f and isinstance(f[s], h5py.Group), f"no group for stage {s}"
        datasets = []
        f.visititems(lambda name, obj: datasets.append((name, obj)) if isinstance(obj, h5py.Dataset) else None)
        assert datasets
        for name, ds in datasets:
            assert "units" in ds.attrs and "description" in ds.attrs, f"{name}: units/description missing"
            assert ds.attrs["description"], f"{name}: empty description"
        fnd = f["problems"]
        for col in ("rank", "kind", "where", "ranks", "cause", "predicted_gain_s", "stage", "place", "place_region",
                    "place_function", "place_file", "place_line", "place_model_cause", "fix_action", "fix_target"):
            assert col in fnd, f"/problems/{col} missing"
        n = int(fnd.attrs["rows"])
        if n:  # an empty table has null dataspaces
            assert list(fnd["rank"][...]) == list(range(1, n + 1))
    d = json.load(open(report))
    assert d["format"] == "perfsift-results" and d["version"] == RESULTS_VERSION, (d["format"], d["version"])
    for key in ("ranks", "wall_time_s", "counters_unavailable"):
        assert key in d["run"], f"run.{key} missing"
    for fd in d["findings"]:
        for key in ("kind", "where", "ranks", "cause", "predicted_gain_s", "evidence", "symptoms"):
            assert key in fd, f"finding key {key} missing"
        assert fd["evidence"] and fd["evidence"][0]["kind"] == fd["kind"], f"the head is not first in its evidence: {fd}"
        for e in fd["evidence"] + fd["symptoms"]:
            assert set(e) == {"stage", "kind", "where", "ranks", "lost_s", "cause"}, e
        g = fd["predicted_gain_s"]
        assert g is None or 0 < g <= d["run"]["wall_time_s"] + 1e-9, f"gain {g} outside (0, run]: {fd['kind']}"
        assert fd["predicted_gain_s"] is None or isinstance(fd["predicted_gain_s"], (int, float))
    for s in stages:
        assert {"classify": "classification"}.get(s, s) in d, f"JSON lacks stage {s}"
    regions = {r["path"] for r in d["profile"]["regions"]}
    assert "(program)" in regions
    if "waitstates" in d:
        for p in PATTERNS:
            w = d["waitstates"][p]
            assert w["total_s"] >= 0 and len(w["by_rank"]) == d["run"]["ranks"], f"waitstates.{p}: {w}"
            assert abs(sum(w["by_rank"]) - w["total_s"]) <= 1e-6 + 1e-9 * w["total_s"], f"waitstates.{p}: ranks do not add up"
        assert set(d["waitstates"]["clock_violations"]) == {"p2p", "collective", "max_s"}
    if "classification" in d:
        assert list(d["classification"]["counts"]) == CLASSES, d["classification"]["counts"]
    if "whatif" in d:
        w = d["whatif"]
        assert w[0]["question"] == "baseline" and w[0]["gain_s"] == 0, w[0]
        for q in w:
            for key in ("question", "predicted_s", "gain_s"):
                assert key in q, f"whatif entry lacks {key}: {q}"
    if "bounds" in d:
        assert "(program)" in d["bounds"], d["bounds"].keys()
        for region, b in d["bounds"].items():
            for q in ("none", "Q1", "Q2", "Q3", "Q1 and Q2", "Q1 and Q3", "Q2 and Q3", "Q1 and Q2 and Q3"):
                assert q in b, f"bounds of {region} lack {q}"
            for q in b:
                if q not in ("steps", "breakdown"):
                    assert b[q] <= b["none"] + 1e-9, f"{region}: bound {q} = {b[q]} s exceeds the replayed {b['none']} s"
        if "whatif" in d:
            base = d["whatif"][0]["predicted_s"]
            worst = max(v for q, v in d["bounds"]["(program)"].items() if q not in ("steps", "breakdown"))
            assert worst <= base * (1 + 1e-9) + 1e-9, f"a bound of the program ({worst} s) exceeds the baseline {base} s"
    if "domino" in d:
        assert isinstance(d["domino"], list)
    print(f"contract: {len(datasets)} datasets with units and description, {n} findings, stages {stages}")


def finding(report, kind, where, ranks):
    d = json.load(open(report))
    hits = [f for f in reported(d) if f["kind"] == kind and f["where"] == where and f["problem"]]
    assert hits, f"no {kind} finding at {where}: {[(f['kind'], f['where']) for f in reported(d)]}"
    assert hits[0]["ranks"] == ranks, f"ranks {hits[0]['ranks']} != {ranks}"
    top = d["findings"][0]
    assert top["where"] == where and top["ranks"] == ranks, f"the injected problem is not ranked first: {top}"
    print(f"finding: {kind} at {where} on ranks {ranks}, ranked first, lost {hits[0]['problem']['lost_s']:.4f} s")


def missing(report, rank, nranks):
    d = json.load(open(report))
    assert d["run"]["missing_ranks"] == [int(rank)], d["run"]["missing_ranks"]
    assert d["profile"]["ranks_with_data"] == int(nranks) - 1
    assert any(f"ranks {rank} have no data" in w for w in d["warnings"]), d["warnings"]
    prog = [r for r in d["profile"]["regions"] if r["path"] == "(program)"][0]
    assert prog["ranks"] == int(nranks) - 1 and not math.isnan(prog["wall_mean_s"])
    print(f"missing rank {rank}: warned, statistics over {int(nranks) - 1} ranks")


class NotCheckable(Exception):
    """The machine cannot decide the check (the message says which measurement shows it)."""


def whatif(report, max_error, floor_s=0.002):
    """The baseline replay reproduces the program (MPI_Init's end to MPI_Finalize's start:
    start-up is replayed as measured, so it must not dilute the error) within max_error of
    its time, or within floor_s: a few ms of scheduler noise on an oversubscribed 2-core
    machine, which a program of a few ms cannot be held to in per cent. A larger miss is
    not checkable when the ranks waited for a core inside the program at least as long as
    it misses by beyond that (a replay of dedicated cores cannot reproduce the waiting:
    docs/whatif.md), and wrong otherwise."""
    d = json.load(open(report))
    b = d["whatif"][0]
    program, off = b["program_measured_s"], b["predicted_s"] - b["measured_s"]
    m, waited = b["matching"], b["descheduled"]
    said = (f"program replayed in {b['program_predicted_s']:.4f} s, measured {program:.4f} s, error {b['error']:+.2%} "
            f"({off * 1e3:+.2f} ms; {b['run_error']:+.2%} of the run with start-up)")
    queue = (f"the ranks waited {waited['total_s'] * 1e3:.2f} ms for a core (rank {waited['max_rank']} most, "
             f"{waited['max_s'] * 1e3:.2f} ms; {waited['ranks_recorded']} ranks recorded it)")
    excess = abs(off) - max(float(max_error) * program, floor_s)
    if excess > 0:
        if waited["ranks_recorded"] and excess <= waited["total_s"]:
            raise NotCheckable(f"{said}; {queue}, at least what it misses by beyond {float(max_error):.0%}: a replay "
                               "of dedicated cores cannot reproduce that; run it with a core per rank on an idle "
                               "machine to check the replay")
        raise AssertionError(f"{said}; {queue}, less than it misses by beyond {float(max_error):.0%}: the replay "
                             "is wrong")
    return (f"{said}; {m['sends']} sends, {m['unmatched_sends']}/{m['unmatched_receives']} unmatched; "
            f"parameters {b['loggps']['source']}")


def gain(report, question, expected, tolerance):
    d = json.load(open(report))
    hits = [q for q in d["whatif"] if q["question"] == question]
    assert hits, f"no question {question!r}: {[q['question'] for q in d['whatif']]}"
    g = hits[0]["gain_s"]
    assert abs(g - float(expected)) <= float(tolerance), f"{question}: gain {g * 1e3:.2f} ms, expected {float(expected) * 1e3:.2f} +- {float(tolerance) * 1e3:.2f} ms"
    print(f"{question}: gain {g * 1e3:.2f} ms (expected {float(expected) * 1e3:.2f} ms)")


# tests/apps/apart.c: r = 3 repetitions of EXTRA = 100 ms; the ranks that wait and the pattern.
APART_EXTRA_S = 3 * 0.100
APART = {  # property: [(pattern, the ranks that wait), ...]
    "late_sender": [("late_sender", lambda r, n: r % 2 == 1 and r < n - n % 2)],
    "late_sender_irecv": [("late_sender", lambda r, n: r % 2 == 1 and r < n - n % 2)],
    "late_receiver": [("late_receiver", lambda r, n: r % 2 == 0 and r < n - n % 2)],
    "wrong_order": [("late_sender", lambda r, n: r % 2 == 0 and r < n - n % 2)],
    "imbalance_at_mpi_barrier": [("wait_at_barrier", lambda r, n: r < n // 2)],
    "imbalance_at_mpi_alltoall": [("wait_at_nxn", lambda r, n: r % 2 == 0)],
    "late_broadcast": [("late_broadcast", lambda r, n: r != 1)],
    "early_reduce": [("early_reduce", lambda r, n: r == 1)],
    "sendrecv_pair": [("late_sender", lambda r, n: r % 2 == 1 and r < n - n % 2)],
    "sendrecv_ring": [("late_sender", lambda r, n: r == 1), ("late_receiver", lambda r, n: r == n - 1)],
    "none": [],
}
CLASSES = ["normal", "late_send", "late_recv", "late_send_post", "late_send_wait", "late_recv_post", "late_recv_wait"]
PATTERNS = ["late_sender", "late_receiver", "wait_at_barrier", "wait_at_nxn", "late_broadcast", "early_reduce"]


def parse_ranks(text):
    """'0-3,7' -> [0, 1, 2, 3, 7]."""
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def apart(report, prop, nranks, cls=None):
    """The injected pattern on the ranks that wait, each within 20 % of r x EXTRA; nothing
    else: every other pattern (and other ranks) under 5 % of the injected amount, and no
    wait-state finding but the injected one. With CLASS: Vetter's predominant class too."""
    d = json.load(open(report))
    n = int(nranks)
    w = d["waitstates"]
    injected = APART[prop]
    noise = 0.05 * APART_EXTRA_S
    lines = []
    for p in PATTERNS:
        by_rank = w[p]["by_rank"] + [0.0] * (n - len(w[p]["by_rank"]))
        for r in range(n):
            if any(p == pattern and waits(r, n) for pattern, waits in injected):
                assert abs(by_rank[r] - APART_EXTRA_S) <= 0.2 * APART_EXTRA_S, \
                    f"{prop}: {p} on rank {r} is {by_rank[r] * 1e3:.1f} ms, expected {APART_EXTRA_S * 1e3:.0f} ms +- 20 %"
                lines.append(f"{p}@{r} {by_rank[r] * 1e3:.1f} ms")
            else:
                assert by_rank[r] <= noise, f"{prop}: {p} on rank {r} is {by_rank[r] * 1e3:.1f} ms where none was injected"
    if prop == "wrong_order":
        assert w["late_sender"]["wrong_order_s"] >= 0.8 * w["late_sender"]["total_s"] > 0, w["late_sender"]
        lines.append(f"wrong order {w['late_sender']['wrong_order_s'] * 1e3:.1f} ms")
    # A wait whose zeroing gains nothing (the late partner sets the pace) is a note, not a
    # problem: the pattern is reported either way.
    kinds = {f["kind"] for f in reported(d) if f["stage"] == "waitstates"}
    expected = {pattern.replace("_", "-") for pattern, _ in injected}
    assert kinds == expected, f"{prop}: wait-state findings and notes {kinds}, expected {expected}"
    if prop in ("late_sender", "late_sender_irecv"):
        # The waiting is the receivers', the cause the senders': a problem names the senders
        # (the even ranks), its fix priced within 20 % of balancing their excess over all
        # ranks (half of r x EXTRA: the receivers take on half of it).
        senders = {r for r in range(n - n % 2) if r % 2 == 0}
        named = [f for f in d["findings"] if f["ranks"] and f["ranks"] != "all"
                 and set(parse_ranks(f["ranks"])) == senders and (f["predicted_gain_s"] or 0) >= 0.8 * 0.5 * APART_EXTRA_S]
        assert named, f"{prop}: no problem names the senders {sorted(senders)} with a priced fix: " + \
            str([(f["kind"], f["where"], f["ranks"], f["predicted_gain_s"]) for f in d["findings"]])
        lines.append(f"senders named: {named[0]['kind']} at {named[0]['where']}, gain {named[0]['predicted_gain_s'] * 1e3:.1f} ms")
    v = w["clock_violations"]
    assert v["p2p"] == 0 and v["collective"] == 0, f"clock-condition violations on one node: {v}"
    c = d.get("classification", {})
    if c and "skipped" not in c:
        classes = {f["kind"] for f in reported(d) if f["stage"] == "classify" and f["problem"]}
        allowed = {k.replace("_", "-") for k in cls.split(",")} if cls else set()
        assert classes <= allowed, f"{prop}: message-class findings {classes}, expected at most {allowed}"
    if cls:
        top = max(c["counts"], key=lambda k: c["counts"][k])
        assert top in cls.split(","), f"{prop}: most transfers are {top}, expected {cls}: {c['counts']}"
        lines.append(f"classified mostly {top} ({c['counts'][top]} of {sum(c['counts'].values())})")
    print(f"{prop}: " + (", ".join(lines) if lines else "no waiting found") + f"; findings {sorted(kinds)}")


def master_worker(report, master):
    """Hercule on tests/apps/master_worker.c: recognised, the worst worker's waiting mostly
    the master's doing (setup + bottleneck), the four terms within 5 % of the measured
    waiting, the thesis's narrative."""
    d = json.load(open(report))
    g = d["diagnosis"]
    assert len(g) == 1 and g[0]["model"] == "master-worker", g
    g = g[0]
    assert g["confidence"] >= 0.9, g["confidence"]
    m = g["metrics"]
    assert int(m["master"]) == int(master), m
    causes = {c["id"]: c["share"] for c in g["causes"]}
    # Over all workers, the master (setup and bottleneck) causes most of the waiting.
    by_master = (m["all_t_w_setup_s"] + m["all_t_w_bn_s"]) / m["all_t_wait_s"]
    assert by_master >= 0.5, f"the master explains only {by_master:.0%} of the workers' waiting: {m}"
    for prefix in ("", "all_"):
        terms = sum(m[prefix + k] for k in ("t_seq_s", "t_w_setup_s", "t_w_bn_s", "t_w_final_s"))
        measured = m[prefix + "measured_wait_s"]
        assert abs(terms - measured) <= 0.05 * measured, f"{prefix}terms {terms:.6f} s against measured waiting {measured:.6f} s"
    assert g["narrative"].startswith("Begin diagnosing master-worker") and "Diagnosing finished" in g["narrative"]
    assert "Level 3 experiment" in g["narrative"], g["narrative"]
    assert any(f["kind"] == "master-worker" and f["problem"] and (f["problem"]["predicted_gain_s"] or 0) > 0 for f in reported(d)), \
        "no priced master-worker finding"
    print(f"master-worker: all workers' waiting {m['all_t_wait_s'] * 1e3:.1f} ms (measured {m['all_measured_wait_s'] * 1e3:.1f} ms): "
          f"setup {m['all_t_w_setup_s'] / m['all_t_wait_s']:.0%}, bottleneck {m['all_t_w_bn_s'] / m['all_t_wait_s']:.0%}, "
          f"final {m['all_t_w_final_s'] / m['all_t_wait_s']:.0%}, sequential {m['all_t_seq_s'] / m['all_t_wait_s']:.0%}; "
          f"{g['worst']} (efficiency {m['efficiency']:.3f}): {causes}")


def shares_bounded(report, results):
    """Every fired cause's share of the worst entity's lost time lies in [0, 1] and they add
    up to at most 1; in the per-entity table every term is >= 0 and an entity's terms add
    up to at most its lost time (elapsed minus computation)."""
    g = json.load(open(report))["diagnosis"][0]
    shares = {c["id"]: c["share"] for c in g["causes"]}
    assert all(0 <= x <= 1 for x in shares.values()), f"a share outside [0, 1]: {shares}"
    assert sum(shares.values()) <= 1 + 1e-6, f"shares add up to {sum(shares.values()):.4f}: {shares}"
    with h5py.File(results, "r") as f:
        t = f["diagnosis/workers" if g["model"] == "master-worker" else "diagnosis/processes"]
        terms = [k for k in t.keys() if k.startswith("t_") and k.endswith("_s")]
        for i in range(len(t["rank"])):
            eff, comp = float(t["efficiency"][i]), float(t["compute_s"][i])
            loss = comp / eff - comp if eff > 0 else None
            vals = {k: float(t[k][i]) for k in terms}
            assert all(v >= 0 for v in vals.values()), f"rank {t['rank'][i]}: a negative term: {vals}"
            if loss is not None:
                assert sum(vals.values()) <= loss * (1 + 1e-6) + 1e-6, \
                    f"rank {t['rank'][i]}: terms {sum(vals.values()):.6f} s exceed its lost time {loss:.6f} s: {vals}"


def model_idiom(report, results, model, min_confidence, *named):
    """A test app's known answer (tests/apps/mw3.c, task_farm.c, sweep4.c): recognised as
    `model` with at least `min_confidence`; the largest fired cause is one of `named`; the
    shares bounded (shares_bounded)."""
    d = json.load(open(report))
    g = d["diagnosis"]
    assert len(g) == 1 and g[0]["model"] == model, [x["model"] for x in g]
    g = g[0]
    assert g["confidence"] >= float(min_confidence), g["confidence"]
    shares_bounded(report, results)
    shares = {c["id"]: c["share"] for c in g["causes"]}
    top = max(shares, key=shares.get) if shares else None
    assert top in named, f"largest cause {top}, expected one of {named}: {shares}"
    print(f"{report}: {model} (confidence {g['confidence']:.2f}); {g['worst']}: "
          f"{ {k: round(v, 3) for k, v in shares.items()} }")
    return g


def wavefront(report, reference_report):
    """Hercule on tests/apps/wavefront.c at 8 ranks (a 2 x 4 grid) against 4 (2 x 2):
    both recognised; every rank's fill-up is its predecessors' 50 ms each; fill-up and
    empty-up grow with the depth; the relative diagnosis names the deeper pipeline."""
    d, r = json.load(open(report)), json.load(open(reference_report))
    for x, depth in ((d, 5), (r, 3)):
        g = x["diagnosis"]
        assert len(g) == 1 and g[0]["model"] == "wavefront", g
        assert g[0]["confidence"] >= 0.8 and int(g[0]["metrics"]["depth"]) == depth, g[0]["metrics"]
    g = d["diagnosis"][0]
    rel = {m["metric"]: m for m in g["relative"]["metrics"]}
    assert g["relative"]["scaling"] == "weak", g["relative"]["scaling"]
    for term in ("t_pl_fill", "t_pl_empty"):
        assert rel[term]["run"] >= 1.5 * rel[term]["reference"] > 0, f"{term} does not grow with the depth: {rel[term]}"
    assert "pipeline depth from 3 to 5 stages" in g["relative"]["cause"], g["relative"]["cause"]
    # Fill-up of the tail of the first sweep (stage 5): four predecessors computing 50 ms each.
    assert abs(rel["t_pl_fill"]["run"] - 0.100) <= 0.020, f"mean fill-up {rel['t_pl_fill']['run'] * 1e3:.1f} ms, expected 100 ms (0 to 200 ms over 8 ranks)"
    print(f"wavefront: depth 3 -> 5; mean fill-up {rel['t_pl_fill']['reference'] * 1e3:.1f} -> {rel['t_pl_fill']['run'] * 1e3:.1f} ms, "
          f"empty-up {rel['t_pl_empty']['reference'] * 1e3:.1f} -> {rel['t_pl_empty']['run'] * 1e3:.1f} ms per process; {g['relative']['cause']}")


def divide_conquer(results, report):
    """Hercule on tests/apps/divide_conquer.c at 4 ranks: recognised; each rank's divide
    waits are the app's 100, 50, 50, 0 ms and the merge waits on ranks 0 and 2 at least the
    50 ms their odd siblings solve longer (within 20 % of the wait or of a 50 ms split)."""
    d = json.load(open(report))
    g = d["diagnosis"]
    assert len(g) == 1 and g[0]["model"] == "divide-and-conquer", g
    assert g[0]["confidence"] >= 0.8, g[0]["confidence"]
    with h5py.File(results, "r") as f:
        t = f["diagnosis/processes"]
        divide, merge = list(t["t_w_divide_s"]), list(t["t_w_merge_s"])
    for r, expected in enumerate((0.100, 0.050, 0.050, 0.0)):
        assert abs(divide[r] - expected) <= 0.2 * max(expected, 0.050), f"rank {r}: divide wait {divide[r] * 1e3:.1f} ms, expected {expected * 1e3:.0f} ms"
    for r in (0, 2):
        assert merge[r] >= 0.8 * 0.050, f"rank {r}: merge wait {merge[r] * 1e3:.1f} ms, expected at least 50 ms"
    ids = {c["id"] for c in g[0]["causes"]}
    assert "divide_wait" in ids and "merge_wait" in ids, ids
    print(f"divide-and-conquer: divide waits {[round(x * 1e3, 1) for x in divide]} ms, merge waits {[round(x * 1e3, 1) for x in merge]} ms; "
          f"causes {sorted(ids)}")


if __name__ == "__main__":
    checks = {"contract": contract, "finding": finding, "missing": missing, "whatif": whatif, "gain": gain,
              "apart": apart, "master_worker": master_worker, "wavefront": wavefront, "model_idiom": model_idiom,
              "divide_conquer": divide_conquer}
    said = checks[sys.argv[1]](*sys.argv[2:])
    if said:
        print(said)
