#!/usr/bin/python3
"""Reports of pipelines that ran only some stages (issue "Any program's data survives").

usage: partial_pipelines_test.py PERFSIFT WORK_DIR

A store is synthesized (8 ranks, 4 regions, 2000 events per rank), then analysed under
mpirun -n 2 with `pipeline.stages` set to: every stage but one, for each stage in turn
(with the stages that require what it provides also dropped, else set-up refuses the
pipeline), profile alone, whatif alone and no stage at all. Each results file must render as text, JSON (valid) and
HTML, all exiting 0; the HTML names each view it does not draw and the stage it needs,
and lists the stages that did not run. `perfsift export` works when whatif ran, and
otherwise ends in one line naming whatif and exit code 2.
"""
import json
import os
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402  tests/harness.py
from harness import captured  # noqa: E402


STAGES = ["profile", "dissimilarity", "disparity", "rootcause", "waitstates", "classify", "diagnosis", "whatif",
          "bounds", "domino", "efficiency"]
# Stages that require a product only the key's stage provides (docs/pipeline.md).
NEEDS = {"whatif": ["bounds", "domino"]}
# The HTML's line for a view drawn from a stage's results, when the stage did not run.
VIEWS = {
    "profile": ["no per-rank views (RPPA)", "no rank x region heatmap", "no communication matrix"],
    "dissimilarity": ["no rank clusters"],
    "rootcause": ["Root causes of rank dissimilarity (rough sets)", "Root causes of region disparity (rough sets)"],
    "waitstates": ["Wait states (Scalasca patterns)"],
    "classify": ["Message classes per call-site pair (Vetter)"],
    "diagnosis": ["no model diagnosis"],
    "whatif": ["no predicted timeline", "no predicted gains in the findings", "What-if questions (PerWiz)"],
    "bounds": ["Lower bounds (PerWiz)"],
    "domino": ["no domino path in the predicted timeline"],
}

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def subsets():
    out = []
    for s in STAGES:
        drop = {s, *NEEDS.get(s, [])}
        out.append(("without_" + s, [x for x in STAGES if x not in drop]))
    out.append(("profile_only", ["profile"]))
    out.append(("whatif_only", ["whatif"]))  # a timeline without the profile's views or a domino path
    out.append(("no_stages", []))
    return out


def html_data(html):
    """The JSON the page draws from (the <script id="data"> element)."""
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</")) if m else None


def main():
    perfsift, work = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    os.chdir(harness.work_dir(work))
    r = captured([perfsift, "synth", "-o", "s.h5", "--ranks", "8", "--regions", "4", "--events-per-rank", "2000"])
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        sys.exit("FAIL: perfsift synth")
    for name, stages in subsets():
        absent = [s for s in STAGES if s not in stages]
        Path(name + ".toml").write_text("[pipeline]\nstages = [%s]\n" % ", ".join('"%s"' % s for s in stages))
        res = name + ".h5"
        r = captured(["mpirun", "-n", "2", perfsift, "analyze", "s.h5", "-c", name + ".toml", "-o", res], timeout=300)
        check(r.returncode == 0, f"{name}: analyze exit {r.returncode} {r.stderr.strip()[-300:]}")
        if r.returncode != 0:
            continue
        for fmt in ["text", "json", "html"]:
            out = f"{name}.{fmt}"
            r = captured([perfsift, "report", res, "--format", fmt, "-o", out], timeout=120)
            check(r.returncode == 0 and Path(out).is_file(),
                  f"{name}: report --format {fmt} exit {r.returncode} {r.stderr.strip()[-300:]}")
        if Path(name + ".json").is_file():
            try:
                d = json.loads(Path(name + ".json").read_text())
                check(isinstance(d, dict) and "findings" in d, f"{name}: the JSON report has findings")
            except ValueError as e:
                check(False, f"{name}: the JSON report is not valid JSON: {e}")
        if Path(name + ".html").is_file():
            html = Path(name + ".html").read_text()
            d = html_data(html)
            check(d is not None, f"{name}: the HTML report's data is valid JSON")
            d = d or {}
            check(d.get("stages_not_run") == absent, f"{name}: the HTML lists the stages not run: {absent}")
            text = json.dumps(d)
            for s in absent:
                for view in VIEWS.get(s, []):
                    want = f"the {s} stage did not run (add it to pipeline.stages)"
                    lines = [x for x in re.findall(r'"([^"]*)"', text) if view in x and want in x]
                    lines += [t["title"] + ": " + t["why"] for t in d.get("tables_absent", [])
                              if t["title"] == view and t["why"] == want]
                    check(bool(lines), f"{name}: the HTML says '{view}' is absent because {s} did not run")
            for s in stages:
                for view in VIEWS.get(s, []):
                    check(f"the {s} stage did not run" not in text, f"{name}: the HTML does not call {s} absent")
        r = captured([perfsift, "export", res, "--format", "chrome", "-o", name + ".trace.json"], timeout=120)
        if "whatif" in stages:
            check(r.returncode == 0 and Path(name + ".trace.json").is_file(),
                  f"{name}: export exit {r.returncode} {r.stderr.strip()[-300:]}")
        else:
            err = r.stderr.strip()
            check(r.returncode == 2 and len(err.splitlines()) == 1 and "whatif" in err and "pipeline.stages" in err and res in err and
                  not Path(name + ".trace.json").exists(), f"{name}: export refuses in one line: {err!r}")
    # In headless Chromium (when installed): the partial pages draw without script or
    # console errors, and clicking a finding with no timeline to light is harmless.
    if shutil.which("chromium"):
        cdp = Path(__file__).resolve().parent.parent / "e2e" / "cdp_check.py"
        for name in ["profile_only", "whatif_only", "no_stages", "without_whatif", "without_profile"]:
            if not Path(name + ".html").is_file():
                continue
            r = captured([sys.executable, cdp, name + ".html", name + ".png"], timeout=120)
            try:
                d = json.loads(r.stdout)
            except ValueError:
                d = {}
            check(r.returncode == 0 and d.get("rendered") == "ok" and d.get("errors") == 0 and not d.get("console"),
                  f"{name}: Chromium draws the page without errors: {r.stdout.strip()[:300]} {r.stderr.strip()[-300:]}")
    else:
        print("note: no chromium; the pages were not loaded in a browser")
    if failures:
        sys.exit(f"FAIL: {len(failures)} checks failed")
    print("all partial pipelines report")


if __name__ == "__main__":
    main()
