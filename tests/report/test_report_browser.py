"""report.html in a real browser: headless Chromium (Debian's ``chromium``) driven over the DevTools
protocol, with a twenty-line WebSocket client so that the test needs no extra package.

Checks that every figure loads and has a size, every table has rows, sorting a table works, the
page makes no network request and logs no console error, and saves a screenshot.

Also a tool: ``python tests/report/test_report_browser.py REPORT.html OUT.png [WIDTH HEIGHT]`` takes a
screenshot of any report (docs/report-screenshot.png was made this way).
"""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-port=0"]


class WebSocket:
    """Just enough RFC 6455 for the DevTools protocol: masked text frames out, frames in."""

    def __init__(self, url: str, timeout: float = 60):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(head.decode("latin-1"))

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text: str) -> None:
        data = text.encode()
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
                                if n < 65536 else bytes([0x80 | 127]) + struct.pack(">Q", n))
        mask = os.urandom(4)
        body = bytes(b ^ mask[i & 3] for i, b in enumerate(data))
        self.sock.sendall(head + mask + body)

    def recv(self) -> str:
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if op in (0x9, 0xA):
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless Chromium with one page, and the console errors and requests it saw."""

    def __init__(self, width: int = 1280, height: int = 900):
        self.profile = tempfile.mkdtemp(prefix="neardup-chromium-")
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        port = None
        deadline = time.monotonic() + 60
        while port is None and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with status {self.proc.returncode}")
            if "DevTools listening on ws://" in line:
                port = int(line.split("ws://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        if port is None:
            raise RuntimeError("chromium did not open its DevTools port")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            targets = json.load(r)
        page = next(t for t in targets if t["type"] == "page")
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []
        for method in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(method)
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, event: str, timeout: float = 60):
        for i, msg in enumerate(self.events):
            if msg.get("method") == event:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == event:
                return msg
            self.events.append(msg)
        raise TimeoutError(event)

    def evaluate(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        self.evaluate("document.fonts.ready.then(() => true)")

    def errors(self) -> list[str]:
        out = []
        for msg in self.events:
            m, p = msg.get("method"), msg.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
                out.append(f"console.{p['type']}: {[a.get('value', a.get('description')) for a in p['args']]}")
            elif m == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails'].get('text')} {p['exceptionDetails'].get('exception', {})}")
            elif m == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']}: {p['entry']['text']}")
        return out

    def requests(self) -> list[str]:
        return [msg["params"]["request"]["url"] for msg in self.events if msg.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: str, full_page: bool = False) -> None:
        params = {"format": "png"}
        if full_page:
            h = self.evaluate("document.documentElement.scrollHeight")
            w = self.evaluate("document.documentElement.scrollWidth")
            params.update(clip={"x": 0, "y": 0, "width": w, "height": h, "scale": 1}, captureBeyondViewport=True)
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)


CHECKS = r"""
(() => {
  const figs = Array.from(document.querySelectorAll("figure[data-figure] img"));
  const tables = Array.from(document.querySelectorAll("table"));
  return {
    figures: figs.map(img => ({name: img.closest("figure").dataset.figure, complete: img.complete,
                                width: img.naturalWidth, height: img.naturalHeight,
                                shown: img.getBoundingClientRect().width})),
    tables: tables.map(t => ({id: t.id, rows: t.tBodies[0] ? t.tBodies[0].rows.length : 0,
                              width: t.getBoundingClientRect().width})),
    sortable: document.querySelectorAll("table.sortable").length,
    external: Array.from(document.querySelectorAll("[src],[href]")).map(e => e.getAttribute("src") || e.getAttribute("href"))
                   .filter(u => !u.startsWith("data:") && !u.startsWith("#")),
  };
})()
"""

SORT = r"""
(() => {
  const t = document.getElementById("top-pairs"), th = t.tHead.rows[0].cells[3];
  const col = () => Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[3].dataset.value));
  th.click(); const asc = col(); th.click(); const desc = col();
  return {asc, desc, order: th.dataset.order};
})()
"""


needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs /usr/bin/chromium (apt-get install chromium)")


@pytest.mark.browser
@needs_chromium
def test_report_renders_in_chromium(tmp_path):
    pytest.importorskip("matplotlib")
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from test_report import make_site, run_cli

    make_site(str(tmp_path / "site"))
    out = tmp_path / "report"
    res = run_cli("report", str(tmp_path / "site"), "-o", str(out), "--seed-examples", "-j", "1")
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "report.json").read_text())

    browser = Browser()
    try:
        browser.open((out / "report.html").as_uri())
        state = browser.evaluate(CHECKS)
        names = {f["name"] for f in state["figures"]}
        assert names == set(doc["figures"]), names
        for f in state["figures"]:
            assert f["complete"] and f["width"] > 300 and f["height"] > 200 and f["shown"] > 300, f
        tables = {t["id"]: t for t in state["tables"]}
        for table_id in ("pair-summary", "top-pairs", "clusters-main", "exact-groups", "boilerplate", "simhash",
                         "seed-shingles", "seed-by-hand", "seed-stderr", "seed-banding", "seed-simhash", "config"):
            assert tables[table_id]["rows"] > 0 and tables[table_id]["width"] > 100, table_id
        assert tables["top-pairs"]["rows"] == len(doc["top_pairs"])
        assert tables["clusters-main"]["rows"] == len(doc["clusters"]) == 3
        assert tables["seed-shingles"]["rows"] == 15 and tables["seed-by-hand"]["rows"] == 6
        assert state["sortable"] >= 5 and state["external"] == []
        sort = browser.evaluate(SORT)
        assert sort["asc"] == sorted(sort["asc"]) and sort["desc"] == sorted(sort["desc"], reverse=True)
        assert sort["order"] == "desc"
        shot = tmp_path / "report.png"
        browser.screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20000
        target = os.environ.get("NEARDUP_SCREENSHOT")
        if target:
            shutil.copyfile(shot, target)
        assert browser.errors() == []
        assert [u for u in browser.requests() if not u.startswith(("file:", "data:"))] == []
    finally:
        browser.close()


if __name__ == "__main__":
    report, png = sys.argv[1], sys.argv[2]
    size = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (1280, 900)
    b = Browser(*size)
    try:
        b.open("file://" + os.path.abspath(report))
        b.screenshot(png, full_page=len(sys.argv) > 5)
        print("\n".join(b.errors()) or "no console errors")
    finally:
        b.close()
