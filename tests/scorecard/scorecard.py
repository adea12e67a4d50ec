"""The scorecard of perfsift's merged diagnosis (docs/scorecard.md).

Generates test cases with 0, 1 or 2 injected problems of known place and culprit ranks —
synthetic stores (`perfsift synth`) and small programs collected here (`perfsift collect`)
— runs `perfsift analyze` on each, and scores the ranked problems of its JSON report
against what was injected:

  found        an injected problem is matched by a reported problem at its place with
               its culprit ranks (each reported problem matches at most one injection)
  false alarm  any other reported problem that weighs >= 1 % of the run (its predicted
               gain when the what-if replay priced it, else its time at stake)
  ranked       the injected problems are the top ones, in any order

A case passes when every injection is found and ranked and there is no false alarm.
Precision = found / (found + false alarms), recall = found / injected, overall and per
kind (a false alarm counts against the kind its finding's kind belongs to).

usage: scorecard.py --perfsift PERFSIFT --apps DIR --work DIR (--ci | --cases N [--seed S])
                    [--min-precision P --min-recall R] [--json OUT]
DIR of --apps holds the programs (app_spmd, app_master_worker, app_task_farm,
app_wavefront, app_sweep4). Exit 1 when precision or recall is below the minimum.
"""
import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402  tests/harness.py

FALSE_ALARM_SHARE = 0.01  # of the run: a problem this large that nobody injected is a false alarm
KINDS = ["imbalance", "late-sender", "io", "network", "master", "fill-up"]

# The finding kinds of each injected kind (for false alarms: which kind a report blames).
BLAMED = {
    "load-imbalance": "imbalance", "dissimilarity": "imbalance", "disparity": "io",
    "late-sender": "late-sender", "late-receiver": "late-sender", "wait-at-barrier": "imbalance",
    "wait-at-nxn": "imbalance", "late-broadcast": "late-sender", "early-reduce": "late-sender",
    "mpi-time": "network", "master-worker": "master", "wavefront": "fill-up",
}


def blamed_kind(problem):
    k = problem["kind"]
    if k in BLAMED:
        return BLAMED[k]
    if k.startswith("late-"):  # message classes (classify)
        return "late-sender"
    return "other"


# ---------------------------------------------------------------------------------------
# Ranks


def parse_ranks(text, nranks):
    """'0-3,7' or 'all' -> a set of ranks."""
    if text.strip() == "all":
        return set(range(nranks))
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def format_ranks(ranks):
    ranks = sorted(ranks)
    parts, k = [], 0
    while k < len(ranks):
        j = k
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[k]) if j == k else f"{ranks[k]}-{ranks[j]}")
        k = j + 1
    return ",".join(parts)


# ---------------------------------------------------------------------------------------
# Cases


def synth_leaves(regions):
    """Leaf regions of `perfsift synth --regions` (pipeline/cli/synth.cpp), in path order."""
    if regions.isdigit():
        n = int(regions)
        parents = max(1, n // 8)
        paths = {f"phase{p:02d}" for p in range(parents)}
        made, k = parents, 0
        while made < n:
            for p in range(parents):
                if made >= n:
                    break
                paths.add(f"phase{p:02d}/kernel{k:02d}")
                made += 1
            k += 1
    else:
        paths = set()
        for item in regions.split(","):
            parts = item.split("/")
            for i in range(1, len(parts) + 1):
                paths.add("/".join(parts[:i]))
    paths = sorted(paths)
    return [p for p in paths if not any(q.startswith(p + "/") for q in paths)]


def pick_ranks(rng, nranks, allow_all=False):
    """Culprits: one rank, a block of ranks or a scattered few, at most a third of them."""
    if allow_all and rng.random() < 0.3:
        return set(range(nranks))
    k = rng.randint(1, max(1, nranks // 3))
    if rng.random() < 0.5:
        start = rng.randrange(nranks - k + 1)
        return set(range(start, start + k))
    return set(rng.sample(range(nranks), k))


def synth_case(rng, seed, n):
    """A synthetic SPMD run (synth.cpp: per leaf, computation of 1-4 ms then a ring
    exchange; an Allreduce per iteration) with n problems, each 8-30 % of the run (above
    the analysis's 5 % reporting threshold for imbalance; a slow network makes MPI 35-60 %
    of every rank's time, above the 25 % threshold for mpi-time)."""
    nranks = rng.randint(4, 12)
    regions = rng.choice(["8", "16", "64", "setup,solve,solve/smooth,solve/restrict,io,halo"])
    leaves = synth_leaves(regions)
    base = {leaf: 1e-3 * (1 + i % 4) for i, leaf in enumerate(leaves)}
    iteration = sum(base.values())  # s, without problems
    iters = rng.randint(30, 50) if len(leaves) < 20 else rng.randint(8, 16)
    kinds = rng.sample(["imbalance", "late-sender", "io", "network"], n)
    used = set()
    inject, expect, message_bytes = [], [], 0
    for kind in kinds:
        share = rng.uniform(0.08, 0.30)
        extra = share * iteration / (1 - share)  # s per iteration
        if kind == "network":
            mpi = rng.uniform(0.35, 0.60)
            per_leaf = mpi * iteration / (1 - mpi) / len(leaves)
            message_bytes = int(per_leaf * 5e9)  # synth: 5 GB/s
            expect.append({"kind": "network", "where": "(program)", "ranks": "all",
                           "size": f"{message_bytes / 1e6:.1f} MB messages"})
            continue
        region = rng.choice([leaf for leaf in leaves if leaf not in used])
        used.add(region)
        ranks = pick_ranks(rng, nranks, allow_all=kind == "io")
        r = format_ranks(ranks)
        if kind == "imbalance":
            factor = 1 + extra / base[region]
            inject.append(f"imbalance:region={region},ranks={r},factor={factor:.3f}")
            size = f"factor {factor:.2f}"
        elif kind == "late-sender":
            inject.append(f"late-sender:region={region},ranks={r},delay={extra:.6f}")
            size = f"delay {extra * 1e3:.2f} ms"
        else:
            inject.append(f"io:region={region},ranks={r},bytes={extra * 1e9:.0f}")
            size = f"{extra:.3g} GB"
        expect.append({"kind": kind, "where": region,
                       "ranks": "all" if len(ranks) == nranks else r, "size": f"{size}, {share:.0%}"})
    events = iters * (3 * len(leaves) + 1) + 2
    args = ["synth", "--ranks", str(nranks), "--regions", regions, "--events-per-rank", str(events),
            "--seed", str(seed), "--message-bytes", str(message_bytes)]
    for s in inject:
        args += ["--inject", s]
    return {"source": "synth", "ranks": nranks, "synth": args, "expect": expect}


SPMD_REGIONS = ["setup", "solve/smooth", "solve/restrict", "output"]


def spmd_case(rng, n):
    """tests/scorecard/spmd.c on 3-6 ranks: imbalance in a region and/or a late sender,
    each 10-30 % of the run (an iteration sleeps 45 ms without them)."""
    nranks = rng.randint(3, 6)
    iteration = 45.0  # ms: setup 10, smooth 20, restrict 10, output 5
    args, expect = [], []
    for kind in rng.sample(["imbalance", "late-sender"], n) if n <= 2 else []:
        share = rng.uniform(0.10, 0.30)
        ms = share * iteration / (1 - share)
        ranks = pick_ranks(rng, nranks)
        r = format_ranks(ranks)
        if kind == "imbalance":
            region = rng.choice(SPMD_REGIONS)
            args.append(f"imb={region}:{r}:{ms:.1f}")
        else:
            region = "exchange"
            args.append(f"late={r}:{ms:.1f}")
        expect.append({"kind": kind, "where": region, "ranks": r, "size": f"{ms:.1f} ms, {share:.0%}"})
    return {"source": "app", "app": "app_spmd", "ranks": nranks, "args": args, "expect": expect}


def model_case(rng):
    """A program with a known model problem (tests/apps): the master of a master-worker
    program or a task farm is the bottleneck; a wavefront's pipeline fills up."""
    app = rng.choice(["app_master_worker", "app_task_farm", "app_wavefront", "app_sweep4"])
    if app in ("app_master_worker", "app_task_farm"):
        nranks = rng.randint(3, 5) if app == "app_master_worker" else rng.randint(4, 6)
        expect = [{"kind": "master", "where": "master", "ranks": "0", "size": "fixed"}]
    else:
        nranks = rng.choice([4, 6]) if app == "app_sweep4" else rng.choice([4, 6, 8])
        expect = [{"kind": "fill-up", "where": "fill-up", "ranks": "all", "size": "fixed"}]
    return {"source": "app", "app": app, "ranks": nranks, "args": [], "expect": expect}


def generate(seed, with_apps=True):
    """Case `seed`: reproducible from the seed alone."""
    rng = random.Random(seed)
    n = rng.choice([0, 1, 1, 2, 2])
    r = rng.random()
    if not with_apps or r < 0.65:
        case = synth_case(rng, seed, n)
    elif r < 0.85:
        case = spmd_case(rng, min(n, 2))
    else:
        case = model_case(rng)
    case["seed"] = seed
    return case


# Fixed for CI (about 25 s): synthetic stores (deterministic) with no problem, a slow
# network, imbalance and a late sender in a region, I/O on every rank; collected programs:
# spmd.c with an imbalance and a late sender, a master-worker program and a task farm.
CI_SEEDS = [1019, 1039, 1011, 1012, 1006, 1022, 1009, 1013, 1049, 1010]


# ---------------------------------------------------------------------------------------
# Running


def run_case(case, a, work):
    """Makes the store, analyses it; returns the JSON report."""
    d = harness.work_dir(work / f"case{case['seed']}")
    perfsift = harness.Perfsift(a.perfsift)
    # Waiting ranks poll (no yield_when_idle), as when the thresholds in CMakeLists.txt were measured.
    kw = dict(log=d / "log.txt", env={"OMP_NUM_THREADS": "2"}, mpi=harness.OPEN_MPI_ENV, timeout=300)
    store = d / "store.h5"
    if case["source"] == "synth":
        harness.run([a.perfsift, *case["synth"], "-o", store], what="perfsift synth failed", **kw)
    else:
        app = Path(a.apps) / case["app"]
        perfsift.collect(store, case["ranks"], app, *case["args"], what="perfsift collect failed", **kw)
    perfsift.analyze(store, d / "results.h5", "--json", d / "report.json", ranks=a.analysis_ranks,
                     what="perfsift analyze failed", **kw)
    return json.load(open(d / "report.json"))


# ---------------------------------------------------------------------------------------
# Scoring


def weight(p):
    g = p.get("predicted_gain_s")
    return g if g is not None else p.get("lost_s") or 0.0


def matches(p, e, nranks):
    """Whether reported problem p is injection e: its place and its culprit ranks."""
    got = parse_ranks(p["ranks"], nranks) if p["ranks"] else set()
    if e["kind"] == "network":
        return p["where"] == "(program)" and p["kind"] == "mpi-time"
    if e["kind"] == "master":
        # Hercule's master-worker causes master_bottleneck or master_setup name the master in
        # their place ("master_setup (master rank 0)"); their ranks are the worst worker's.
        return (p["kind"] == "master-worker" and p["where"].split(" ")[0] in ("master_bottleneck", "master_setup")
                and "(master rank 0)" in p["where"])
    if e["kind"] == "fill-up":
        # Hercule's wavefront causes: the first sweep filling the pipeline (fill_up), or a
        # sweep from another corner filling it again (direction_change).
        return p["kind"] == "wavefront" and p["where"].split(" ")[0] in ("fill_up", "direction_change")
    return p["where"] == e["where"] and got == parse_ranks(e["ranks"], nranks)


def score(case, d):
    """The verdict of one case from its JSON report."""
    nranks = d["run"]["ranks"]
    run_s = d["run"]["wall_time_s"]
    problems = d["findings"]
    expect = case["expect"]
    found = [None] * len(expect)  # the reported problem's index
    for k, e in enumerate(expect):
        for i, p in enumerate(problems):
            if i not in found and matches(p, e, nranks):
                found[k] = i
                break
    alarms = [i for i, p in enumerate(problems)
              if i not in found and weight(p) >= FALSE_ALARM_SHARE * run_s]
    extra = [i for i, p in enumerate(problems) if i not in found]
    ranked = all(i is not None and i < len(expect) for i in found)
    ok = all(i is not None for i in found) and ranked and not alarms
    notes = d.get("notes", [])

    def show(p):
        g = p.get("predicted_gain_s")
        return (f"{p['kind']} at {p['where']} on {p['ranks']}: lost {p['lost_s'] * 1e3:.1f} ms, "
                + (f"gain {g * 1e3:.1f} ms" if g is not None else "not priced")
                + f" ({weight(p) / run_s:.1%} of the run)")

    return {
        "seed": case["seed"], "source": case.get("app", "synth"), "ranks": nranks, "run_s": run_s,
        "injected": expect, "pass": ok, "ranked": ranked,
        "found": [(e, show(problems[i]) if i is not None else None) for e, i in zip(expect, found)],
        "false_alarms": [(blamed_kind(problems[i]), show(problems[i])) for i in alarms],
        "extra": len(extra),
        "below_alarm": [show(problems[i]) for i in extra if i not in alarms],
        "top": [show(p) for p in problems[:4]],
        "notes": [f"{n['kind']} at {n['where']} on {n['ranks']}: {n.get('reason', '')}" for n in notes[:6]],
        "answer_kind": problems[0]["kind"] if problems else None,
    }


def tally(verdicts):
    """Precision and recall overall and per kind."""
    rows = {k: {"injected": 0, "found": 0, "alarms": 0} for k in KINDS + ["other"]}
    for v in verdicts:
        for e, hit in v["found"]:
            rows[e["kind"]]["injected"] += 1
            rows[e["kind"]]["found"] += hit is not None
        for kind, _ in v["false_alarms"]:
            rows[kind]["alarms"] += 1
    total = {"injected": sum(r["injected"] for r in rows.values()), "found": sum(r["found"] for r in rows.values()),
             "alarms": sum(r["alarms"] for r in rows.values())}

    def pr(r):
        p = r["found"] / (r["found"] + r["alarms"]) if r["found"] + r["alarms"] else 1.0
        q = r["found"] / r["injected"] if r["injected"] else 1.0
        return p, q

    return rows, total, pr


def print_table(verdicts, out=sys.stdout):
    for v in verdicts:
        inj = "; ".join(f"{e['kind']} {e['where']} on {e['ranks']} ({e['size']})" for e in v["injected"]) or "none"
        print(f"case {v['seed']:>4} {v['source']:<17} {v['ranks']:>2} ranks  {'PASS' if v['pass'] else 'FAIL'}  "
              f"injected: {inj}", file=out)
        if v.get("error"):
            print(f"      error: {v['error']}", file=out)
            continue
        for e, hit in v["found"]:
            if hit is None:
                print(f"      MISS {e['kind']} at {e['where']} on {e['ranks']}", file=out)
            elif not v["ranked"]:
                print(f"      found below the top: {hit}", file=out)
        for _, s in v["false_alarms"]:
            print(f"      FALSE ALARM {s}", file=out)
        for s in v.get("below_alarm", []):
            print(f"      extra (under {FALSE_ALARM_SHARE:.0%}): {s}", file=out)
        if not v["pass"]:
            for s in v["top"]:
                print(f"        reported: {s}", file=out)
            for s in v["notes"]:
                print(f"        note: {s}", file=out)
    rows, total, pr = tally(verdicts)
    print(f"\n{'kind':<12} {'injected':>8} {'found':>6} {'alarms':>7} {'precision':>10} {'recall':>7}", file=out)
    for k, r in list(rows.items()) + [("all", total)]:
        if not (r["injected"] or r["alarms"]) and k != "all":
            continue
        p, q = pr(r)
        print(f"{k:<12} {r['injected']:>8} {r['found']:>6} {r['alarms']:>7} {p:>10.2f} {q:>7.2f}", file=out)
    for source in sorted({v["source"] for v in verdicts}):
        mine = [v for v in verdicts if v["source"] == source]
        p, q = pr(tally(mine)[1])
        print(f"  {source:<17} {sum(v['pass'] for v in mine):>3} of {len(mine):>3} pass, precision {p:.2f}, recall {q:.2f}",
              file=out)
    passed = sum(v["pass"] for v in verdicts)
    scored = [v for v in verdicts if not v.get("error")]
    extra = sum(v.get("extra", 0) for v in scored)
    print(f"{extra / max(1, len(scored)):.2f} problems a case beyond the injected ({extra} in {len(scored)} cases)",
          file=out)
    print(f"{passed} of {len(verdicts)} cases pass", file=out)
    return pr(total)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--perfsift", required=True)
    ap.add_argument("--apps", required=True, help="directory of the programs")
    ap.add_argument("--work", required=True)
    ap.add_argument("--ci", action="store_true", help="the fixed CI seeds")
    ap.add_argument("--cases", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1000, help="first seed of --cases")
    ap.add_argument("--synth-only", action="store_true")
    ap.add_argument("--analysis-ranks", type=int, default=1)
    ap.add_argument("--min-precision", type=float, default=0.0)
    ap.add_argument("--min-recall", type=float, default=0.0)
    ap.add_argument("--json", help="write the verdicts here")
    a = ap.parse_args()
    seeds = CI_SEEDS if a.ci else list(range(a.seed, a.seed + a.cases))
    if not seeds:
        ap.error("give --ci or --cases N")
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    verdicts = []
    t0 = time.time()
    for s in seeds:
        case = generate(s, with_apps=not a.synth_only)
        t = time.time()
        try:
            v = score(case, run_case(case, a, work))
        except (harness.CommandFailed, subprocess.TimeoutExpired) as e:
            v = {"seed": s, "source": case.get("app", "synth"), "ranks": case["ranks"], "injected": case["expect"],
                 "pass": False, "ranked": False, "found": [(e2, None) for e2 in case["expect"]], "false_alarms": [],
                 "top": [], "notes": [], "error": str(e)}
        v["seconds"] = time.time() - t
        verdicts.append(v)
        print(f"case {s}: {'pass' if v['pass'] else 'FAIL'} ({v['seconds']:.1f} s)", file=sys.stderr, flush=True)
    print(f"scorecard: {len(seeds)} cases in {time.time() - t0:.0f} s\n")
    precision, recall = print_table(verdicts)
    if a.json:
        json.dump(verdicts, open(a.json, "w"), indent=1)
    bad = []
    if precision < a.min_precision:
        bad.append(f"precision {precision:.2f} < {a.min_precision:.2f}")
    if recall < a.min_recall:
        bad.append(f"recall {recall:.2f} < {a.min_recall:.2f}")
    if bad:
        print("scorecard: " + ", ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
