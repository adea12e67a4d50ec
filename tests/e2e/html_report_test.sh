#!/usr/bin/env bash
# The HTML report in a real browser (headless Chromium, Debian's `chromium`): a tests/apps
# run is analysed, `perfsift report --format html` writes one file that fetches nothing;
# Chromium renders every view without script errors, the screenshot is not blank, and a
# click on a finding (a DOM click event, dispatched by the page for "#click=N") lights
# that finding's region and ranks in the timelines.
# usage: html_report_test.sh PERFSIFT STORE WORK_DIR
set -euo pipefail
perfsift=$1 store=$2 work=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
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
browse "file://$PWD/report.html#click=0" clicked
attr() { grep -o "data-$1=\"[^\"]*\"" "$2" | head -1 | sed 's/.*="\(.*\)"/\1/'; }
[ "$(attr rendered clicked.html)" = ok ] || fail "the page did not finish drawing"
[ "$(attr errors clicked.html)" = 0 ] || fail "$(attr errors clicked.html) script errors"
if grep -E "Uncaught|CONSOLE.*(Error|error)" clicked.log; then fail "console errors"; fi
lit=$(attr highlighted clicked.html)
[ "$lit" -gt 0 ] || fail "clicking finding 1 lit no call in the timelines"
grep -q 'tr data-i="0" class="sel"' clicked.html || fail "the clicked finding is not marked"
rects=$(grep -o '<rect' clicked.html | wc -l)
lines=$(grep -o '<line[^>]*class="msg"' clicked.html | wc -l)
[ "$rects" -gt 20 ] && [ "$lines" -gt 0 ] || fail "timelines: $rects calls and $lines message lines drawn"
for view in findings timeline rppa heatmap clusters comm diagnosis tables; do
  $py - "$view" clicked.html <<'PY' || fail "view $view is empty"
import re, sys
view, path = sys.argv[1], sys.argv[2]
html = open(path).read()
m = re.search(r'<div id="%s">(.*?)</div>\s*<h2' % view, html, re.S) or re.search(r'<div id="%s">(.*)' % view, html, re.S)
sys.exit(0 if m and len(re.sub(r"\s", "", m.group(1))) > 40 else 1)
PY
done
# A screenshot of the top of the page is not blank.
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=10000 --window-size=1280,1600 \
  --screenshot="$PWD/shot.png" "file://$PWD/report.html" > /dev/null 2>&1 || fail "no screenshot"
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
echo "html report: $bytes bytes, rendered in $(attr render-ms clicked.html) ms, no script errors; $rects calls and $lines message lines drawn; finding 1 lit $lit calls"
