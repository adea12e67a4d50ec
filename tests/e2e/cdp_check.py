"""Drives headless Chromium through its DevTools protocol (stdlib only: a minimal
WebSocket client): loads the report, collects console errors and exceptions, clicks a
finding with real mouse events at its on-screen position, reads what the timeline lit,
and takes a screenshot.

usage: cdp_check.py REPORT.html SCREENSHOT.png
prints one JSON object: {"rendered", "errors", "console", "highlighted", "selected", "screenshot_bytes", "page"}
where "page" is what a reader sees: each matrix chart's plot size in CSS pixels, axis titles,
tick label boxes and legend; the answer's paragraphs; the lines at the top that call views
absent; the timeline's note; the operations table's rows and the line set apart.
"""
import base64
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


class WebSocket:
    def __init__(self, url):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.buf = b""

    def send(self, text):
        data, mask = text.encode(), os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536
                                   else bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("DevTools closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            message += self._read(n)
            if b0 & 0x80:
                return message.decode()


# What a reader sees, read from the drawn page (boxes: [left, top, right, bottom]).
SEEN = """(() => {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const texts = (root, sel) => [...root.querySelectorAll(sel)].map(e => e.textContent);
  const charts = {};
  for (const svg of document.querySelectorAll("svg.matrix")) {
    const plot = svg.querySelector("rect.plot").getBoundingClientRect();
    charts[svg.dataset.chart] = {width: plot.width, height: plot.height, axes: texts(svg, "text.axis-row, text.axis-col"),
      row_ticks: [...svg.querySelectorAll("text.tick-row")].map(box), col_ticks: [...svg.querySelectorAll("text.tick-col")].map(box),
      legend: svg.querySelector("g.legend rect.scale") ? box(svg.querySelector("g.legend rect.scale")) : null,
      legend_title: texts(svg, "text.legend-title").join(" "), legend_ticks: texts(svg, "text.legend-tick")};
  }
  const note = document.querySelector("#timeline .note");
  return {charts: charts, answer: texts(document, "#answer p, #answer li"), answer_lines: (JSON.parse(document.getElementById("data").textContent).answer || []).length,
          absent: texts(document, "#absent li"), timeline_note: note ? note.textContent : "",
          operations: [...document.querySelectorAll("#operations tbody tr")].map(r => r.cells[0].textContent),
          lifecycle: texts(document, "#lifecycle-ops").join(" ")};
})()"""


class Page:
    def __init__(self, ws):
        self.ws, self.next_id, self.events = ws, 0, []

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def eval(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return r.get("result", {}).get("value")


def main(report, screenshot):
    profile = tempfile.mkdtemp(prefix="perfsift-chromium-")
    chrome = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-port=0",
                               f"--user-data-dir={profile}", "--window-size=1280,1600", "about:blank"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                              env={**os.environ, "TMPDIR": profile})  # its scratch files go with the profile
    try:
        port = None
        deadline = time.time() + 30
        while port is None and time.time() < deadline:
            line = chrome.stderr.readline()
            m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if m:
                port = int(m.group(1))
        assert port, "Chromium did not open its DevTools port"
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
        page = Page(WebSocket(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"]))
        for domain in ("Runtime", "Log", "Page"):
            page.call(domain + ".enable")
        page.call("Page.navigate", url="file://" + os.path.abspath(report))
        deadline = time.time() + 30
        while page.eval("document.body && document.body.dataset.rendered") != "ok" and time.time() < deadline:
            time.sleep(0.1)
        rendered = page.eval("document.body.dataset.rendered")
        seen = page.eval(SEEN)
        # A real click: the first finding's row, scrolled into view, hit at its centre (a
        # report without findings has no row: nothing is clicked, selected is false).
        rect = page.eval("(() => { const r = document.querySelector('#findings tbody tr'); if (!r) return null;"
                         " r.scrollIntoView({block: 'center'});"
                         " const b = r.getBoundingClientRect(); return {x: b.x + b.width / 2, y: b.y + b.height / 2}; })()")
        if rect:
            for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
                page.call("Input.dispatchMouseEvent", type=kind, x=rect["x"], y=rect["y"], button="left", clickCount=1)
            time.sleep(0.3)
        highlighted = int(page.eval("document.body.dataset.highlighted") or 0)
        selected = bool(rect) and page.eval("document.querySelector('#findings tbody tr').classList.contains('sel')")
        page.eval("window.scrollTo(0, 0)")
        shot = base64.b64decode(page.call("Page.captureScreenshot", format="png")["data"])
        open(screenshot, "wb").write(shot)
        errors = int(page.eval("document.body.dataset.errors") or 0)
        console = [e["params"] for e in page.events
                   if e.get("method") == "Runtime.exceptionThrown"
                   or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error")
                   or (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")]
        print(json.dumps({"rendered": rendered, "errors": errors, "console": console, "highlighted": highlighted,
                          "selected": selected, "screenshot_bytes": len(shot), "page": seen}))
    finally:
        # Chromium's own children (renderer, GPU, zygote) share its session: all of them go
        # before its profile directory does.
        try:
            os.killpg(chrome.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        chrome.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
