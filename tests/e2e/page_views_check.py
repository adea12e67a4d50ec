"""Checks what a reader sees on the HTML report, from cdp_check.py's "page" (one JSON
object on stdin): every matrix chart (rank x region heatmap, message matrix, binned
timelines) at a readable size with both axes titled, tick labels that do not overlap
(all of them when the ranks are few), and a colour legend with units; the answer as
paragraphs, one per answer line; no view called absent for what a stage found nothing of;
the operations table without start-up and shut-down, set apart.

usage: page_views_check.py RANKS [CALLS]   (CALLS: the run's MPI calls when the timeline is binned)
"""
import json
import re
import sys

ranks = int(sys.argv[1])
calls = int(sys.argv[2]) if len(sys.argv) > 2 else None
page = json.load(sys.stdin)["page"]
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def apart(boxes, vertical):
    """Whether consecutive tick labels leave each other room (0.5 px for rounding)."""
    a, b = (1, 3) if vertical else (0, 2)
    return all(boxes[i][b] <= boxes[i + 1][a] + 0.5 for i in range(len(boxes) - 1))


charts = page["charts"]
wanted = {"heatmap": ("rank", "region"), "comm": ("sender rank", "receiver rank")}
if calls is not None:
    wanted["binned-measured"] = ("rank", "time")
for name, (rows, cols) in wanted.items():
    c = charts.get(name)
    if not c:
        problems.append(f"{name}: not drawn as a chart")
        continue
    check(c["width"] >= 300 and c["height"] >= 150, f"{name}: {c['width']:.0f} x {c['height']:.0f} px, under 300 x 150")
    check(len(c["axes"]) == 2 and c["axes"][0].startswith(rows) and c["axes"][1].startswith(cols),
          f"{name}: axis titles {c['axes']}, not {rows} / {cols}")
    row_ticks = c["row_ticks"]
    check(len(row_ticks) == ranks if ranks <= 16 else 4 <= len(row_ticks) < ranks,
          f"{name}: {len(row_ticks)} rank labels for {ranks} ranks")
    check(apart(row_ticks, True), f"{name}: rank labels overlap")
    check(len(c["col_ticks"]) >= 1, f"{name}: no column labels")
    check(c["legend"] is not None and c["legend"][3] - c["legend"][1] >= 60, f"{name}: no colour legend")
    check(re.search(r"%|\(s\)|bytes", c["legend_title"]) is not None, f"{name}: legend without units: {c['legend_title']!r}")
    check(len(c["legend_ticks"]) >= 2, f"{name}: legend without values")
comm = charts.get("comm")
if comm:
    check(apart(comm["col_ticks"], False), "comm: receiver labels overlap")
check(len(page["answer"]) == page["answer_lines"] and page["answer"] and page["answer"][0].startswith("Answer:"),
      f"answer: {len(page['answer'])} paragraphs for {page['answer_lines']} answer lines: {page['answer']}")
check(not [a for a in page["absent"] if "stored no" in a], f"absent views: {page['absent']}")
check(page["operations"] and not {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"} & set(page["operations"]),
      f"operations table rows: {page['operations']}")
check("MPI_Init" in page["lifecycle"], f"start-up not set apart: {page['lifecycle']!r}")
if calls is not None:
    m = re.match(r"([\d,]+) calls are too many", page["timeline_note"])
    check(m is not None and int(m.group(1).replace(",", "")) == calls,
          f"timeline: {page['timeline_note']!r}, the run has {calls} calls")
for p in problems:
    print("FAIL:", p)
sizes = ", ".join(f"{k} {v['width']:.0f}x{v['height']:.0f} px, {len(v['row_ticks'])} rank labels" for k, v in charts.items())
print(f"page views: {sizes}; answer in {len(page['answer'])} paragraphs; {len(page['operations'])} operations")
sys.exit(1 if problems else 0)
