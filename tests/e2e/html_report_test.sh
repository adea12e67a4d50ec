#!/usr/bin/env bash
# The HTML report in a real browser (headless Chromium, Debian's `chromium`): a tests/apps
# run is analysed, `perfsift report --format html` writes one file that fetches nothing;
# Chromium renders every view without script errors or console errors, the screenshot is
# not blank, and a mouse click on a finding, sent through Chromium's DevTools protocol
# (tests/e2e/cdp_check.py), lights that finding's region and ranks in the timelines. What a
# reader sees is checked on this run and on a synthetic one of 96 ranks with more calls than
# the timeline draws one by one (tests/e2e/page_views_check.py): charts at a readable size
# with axes, thinned labels and a legend, the answer in paragraphs, the real call count.
# usage: html_report_test.sh PERFSIFT STORE WORK_DIR
set -euo pipefail
perfsift=$1 store=$2 work=$3
# shellcheck source=../../jobs/deps.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../jobs/deps.sh"
perfsift_test_mpi_env
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
command -v chromium > /dev/null || { echo "SKIP: no chromium (apt-get install chromium)"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && cd "$work"
mpirun -n 2 "$perfsift" analyze "$store" -o r.h5 --json r.json > analyze.txt 2>&1 || { cat analyze.txt; fail "analyze failed"; }
"$perfsift" report r.h5 --format html -o report.html
bytes=$(stat -c %s report.html)
echo "report.html: $bytes bytes"
# Self-contained: no scripts, styles, images or fonts from anywhere else.
if grep -Eo '(src|href)="[^"#]+"|@import|url\(' report.html | grep -q .; then fail "the report refers to outside resources"; fi
grep -Eo 'https?://[^" )]+' report.html | grep -v '^http://www.w3.org/2000/svg$' | grep -q . && fail "the report names a URL to fetch" || true
browse() {  # URL OUT: the DOM after the page's script ran, and the browser's log
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000 --enable-logging=stderr --v=0 \
    --dump-dom "$1" > "$2.html" 2> "$2.log" || { cat "$2.log"; fail "chromium failed on $1"; }
}
browse "file://$PWD/report.html" page
attr() { grep -o "data-$1=\"[^\"]*\"" "$2" | head -1 | sed 's/.*="\(.*\)"/\1/'; }
[ "$(attr rendered page.html)" = ok ] || fail "the page did not finish drawing"
[ "$(attr errors page.html)" = 0 ] || fail "$(attr errors page.html) script errors"
rects=$(grep -o '<rect' page.html | wc -l)
lines=$(grep -o '<line[^>]*class="msg"' page.html | wc -l)
[ "$rects" -gt 20 ] && [ "$lines" -gt 0 ] || fail "timelines: $rects calls and $lines message lines drawn"
for view in findings timeline rppa heatmap clusters comm diagnosis tables; do
  $py - "$view" page.html <<'PY' || fail "view $view is empty"
import re, sys
view, path = sys.argv[1], sys.argv[2]
html = open(path).read()
m = re.search(r'<div id="%s">(.*?)</div>\s*<h2' % view, html, re.S) or re.search(r'<div id="%s">(.*)' % view, html, re.S)
sys.exit(0 if m and len(re.sub(r"\s", "", m.group(1))) > 40 else 1)
PY
done
# Through the DevTools protocol: console errors, a mouse click on finding 1, a screenshot.
$py "$(dirname "$0")/cdp_check.py" report.html shot.png > cdp.json || fail "the DevTools session failed"
cat cdp.json
$py -c "import json, sys; d = json.load(open('cdp.json')); sys.exit(0 if d['rendered'] == 'ok' and d['errors'] == 0 and not d['console'] and d['selected'] and d['highlighted'] > 0 else 1)" \
  || fail "console errors, or the click lit nothing"
lit=$($py -c "import json; print(json.load(open('cdp.json'))['highlighted'])")
$py "$(dirname "$0")/page_views_check.py" 4 < cdp.json || fail "what the page shows"
"$perfsift" synth -o many.h5 --ranks 96 --regions "setup,solve,solve/smooth_the_residual_on_the_fine_grid,io" \
  --events-per-rank 700 --inject imbalance:region=solve/smooth_the_residual_on_the_fine_grid,ranks=5-8,factor=3 > synth.txt
calls=$("$perfsift" info many.h5 | grep -o '[0-9]* MPI events' | cut -d' ' -f1)
mpirun -n 2 "$perfsift" analyze many.h5 -o many_r.h5 > many.txt 2>&1 || { cat many.txt; fail "analyze of the 96-rank run failed"; }
"$perfsift" report many_r.h5 --format html -o many.html
$py "$(dirname "$0")/cdp_check.py" many.html many.png > many.json || fail "the DevTools session failed on the 96-rank page"
$py "$(dirname "$0")/page_views_check.py" 96 "$calls" < many.json || fail "what the 96-rank page shows ($calls calls)"
$py - shot.png <<'PY' || fail "the screenshot is blank"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat = 8, b""
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(idat)
distinct = len(set(raw))
print(f"screenshot: {len(raw)} bytes of pixels, {distinct} distinct byte values")
sys.exit(0 if distinct > 32 else 1)
PY
echo "html report: $bytes bytes, drawn in $(attr render-ms page.html) ms, no script or console errors; $rects calls and $lines message lines; a click on finding 1 lit $lit calls"
