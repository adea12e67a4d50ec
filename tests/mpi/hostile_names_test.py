"""Region names of any bytes survive the reports: a synthetic store whose regions are
named with an invalid UTF-8 byte (0xff), a truncated sequence, a tab, a newline, quotes,
an escape sequence, `<script>` and `</script>`, and U+2028, analysed under mpirun.

The JSON report must be valid UTF-8 JSON (strict decoding, json.loads) and give the names
back, ill-formed pieces as U+FFFD (as bytes.decode("utf-8", "replace") gives them); the
text report must hold no raw control character but its line ends, and be valid UTF-8; the
HTML report's embedded data must parse and cannot end its <script> element early.

usage: hostile_names_test.py PERFSIFT WORK_DIR
"""
import json
import os
import re
import shutil
import sys

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import harness  # noqa: E402  tests/harness.py
from harness import CAPTURE, captured, run  # noqa: E402

PERFSIFT, WORK = sys.argv[1], os.path.abspath(sys.argv[2])  # every command runs in WORK

# Names without whitespace, analysed by every stage.
NAMES = [
    b"bad\xffbyte",
    b"cut\xe2\x82",
    b'say"hi"',
    b"\x1b[31mred\x1b[0m",
    b"<script>alert(1)<",
    b"x</script><!--",  # also makes the region "x<" (the part before '/')
    "line\u2028sep".encode(),
    "caf\u00e9".encode(),
]
# Names with whitespace and quotes: the what-if questions the stages generate quote them
# (region "tab\there"), so the default pipeline, what-if stages included, analyses them.
SPACED = [b"tab\there", b"new\nline", b'say "hi"', b"\xff\t\x1b[2J", b"main loop",
          b"<img src=x onerror=console.error(\"INJECTED\")>"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def raw(name):
    with open(os.path.join(WORK, name), "rb") as f:
        return f.read()


def text_clean(path):
    """A text report: valid UTF-8, no control byte but newline, no C1 or bidi control."""
    b = raw(path)
    try:
        t = b.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{path} is not valid UTF-8: {e}")
    bad = sorted({hex(c) for c in b if (c < 0x20 and c != 0x0A) or c == 0x7F})
    check(not bad, f"{path} holds raw control bytes {bad}")
    check(not re.search("[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]", t),
          f"{path} holds a raw C1, separator or bidi control")
    return t


def case(tag, names, late, config=None, html=True):
    """synth a store whose regions are `names` (raw bytes: argv is bytes on Linux), region
    `late` imbalanced so a finding names it; analyze it on 2 ranks; check the reports."""
    regions = set(names) | {n[: n.index(b"/")] for n in names if b"/" in n}
    run([PERFSIFT, "synth", "-o", f"{tag}.h5", "--ranks", "4", "--regions", b",".join(names), "--events-per-rank",
         "300", "--inject", b"imbalance:region=" + late + b",ranks=0-1,factor=3"], out=harness.DEVNULL, err=CAPTURE)
    stored = set()
    with h5py.File(os.path.join(WORK, f"{tag}.h5"), "r") as f:

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "SO" and "region" in name:
                for v in obj[()].ravel():
                    stored.add(v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogateescape"))

        f.visititems(visit)
    check(regions <= stored, f"{tag}: the store lacks some names as bytes: {sorted(regions - stored)}")

    cfg = []
    if config:
        with open(os.path.join(WORK, f"{tag}.toml"), "w") as f:
            f.write(config)
        cfg = ["-c", f"{tag}.toml"]
    run(["mpirun", "-n", "2", PERFSIFT, "analyze", f"{tag}.h5", *cfg, "-o", f"{tag}-r.h5", "--json", f"{tag}.json"],
        out=f"{tag}.txt", err=CAPTURE)

    # JSON: strict UTF-8, then JSON; the names back, ill-formed pieces as U+FFFD.
    data = raw(f"{tag}.json")
    try:
        d = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        fail(f"{tag}.json is not valid UTF-8 JSON: {e}")
    check(not any(c < 0x20 and c != 0x0A for c in data), f"{tag}.json holds raw control bytes")
    check(b"\xe2\x80\xa8" not in data, f"{tag}.json holds a raw U+2028")
    paths = {r["path"] for r in d["profile"]["regions"]}
    want = {n.decode("utf-8", "replace") for n in regions}
    check(want <= paths, f"{tag}: names not given back: {sorted(want - paths)} (have {sorted(paths)})")
    wheres = {e["where"] for f in d["findings"] for e in [f] + f.get("evidence", []) + f.get("symptoms", [])}
    wheres |= {n["where"] for n in d.get("notes", [])}
    late_name = late.decode("utf-8", "replace")
    check(any(late_name in w for w in wheres), f"{tag}: no finding names {late_name!r}: {sorted(wheres)}")

    # Text: what analyze printed and what report prints, the same and clean.
    text = text_clean(f"{tag}.txt")
    run([PERFSIFT, "report", f"{tag}-r.h5"], out=f"{tag}-report.txt", err=CAPTURE)
    check(text_clean(f"{tag}-report.txt") == text, f"{tag}: perfsift report and analyze print different text")

    # The same JSON from report; the HTML report's data parses and cannot end its element.
    run([PERFSIFT, "report", f"{tag}-r.h5", "--format", "json"], out=f"{tag}-report.json", err=CAPTURE)
    check(raw(f"{tag}-report.json") == data, f"{tag}: report --format json differs from analyze --json")
    if not html:
        return d, text
    run([PERFSIFT, "report", f"{tag}-r.h5", "--format", "html", "-o", f"{tag}.html"], out=harness.DEVNULL, err=CAPTURE)
    html = raw(f"{tag}.html")
    html.decode("utf-8")
    m = re.search(rb'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    check(m, f"no data element in {tag}.html")
    blob = m.group(1)
    check(b"<" not in blob and b"\xe2\x80\xa8" not in blob, f"{tag}.html: the data holds '<' or a raw U+2028")
    page = json.dumps(json.loads(blob.decode("utf-8")), ensure_ascii=False)
    for n in want:
        check(json.dumps(n, ensure_ascii=False)[1:-1] in page, f"{tag}.html: the data lacks {n!r}")
    check(html.count(b"</script>") == 2, f"{tag}.html has {html.count(b'</script>')} </script> (expected 2)")
    # In headless Chromium (when installed): names that would run script or add elements if
    # inserted as markup stay text: no console message, no script error, the page draws.
    if shutil.which("chromium"):
        cdp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "cdp_check.py")
        r = captured([sys.executable, cdp, f"{tag}.html", f"{tag}.png"], timeout=120)
        try:
            seen = json.loads(r.stdout)
        except ValueError:
            seen = {}
        check(r.returncode == 0 and seen.get("rendered") == "ok" and seen.get("errors") == 0 and not seen.get("console"),
              f"{tag}.html in Chromium: {r.stdout.strip()[:400]} {r.stderr.strip()[-300:]}")
    else:
        print("note: no chromium; the page was not loaded in a browser")
    print(f"{tag}: {len(regions)} names stored as bytes; JSON valid UTF-8 with the names back (U+FFFD for "
          f"ill-formed bytes); text without raw control characters; the HTML data parses")
    return d, text


os.chdir(harness.work_dir(WORK))

d, text = case("all", NAMES, b"<script>alert(1)<")
paths = {r["path"] for r in d["profile"]["regions"]}
check({"bad\ufffdbyte", "cut\ufffd", "caf\u00e9", "line\u2028sep", "\x1b[31mred\x1b[0m"} <= paths, sorted(paths))
check("\\x1b[31mred" in text and "bad\\xffbyte" in text and "cut\\xe2\\x82" in text and "line\\u2028sep" in text,
      f"escapes missing from the text report:\n{text}")

# The default pipeline: the stages' questions about these regions parse back.
d, text = case("spaced", SPACED, b"main loop")
check("tab\\there" in text and "new\\nline" in text, f"tab and newline not shown as \\t, \\n:\n{text}")
check("\ufffd\t\x1b[2J" in {r["path"] for r in d["profile"]["regions"]}, "the 0xff, tab, ESC name")
print("PASS")
