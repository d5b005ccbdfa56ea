"""The fixture site for browser captures: a JavaScript leaderboard on 127.0.0.1 and its hostile cousins.

Three real servers: ``main`` (the board, its JSON API, stylesheet, font, scroll-loaded section and the
bad pages), ``cdn`` (a script from a second origin) and ``forbidden`` (running, but not on the
allow-list: the guard must refuse it, so it must never see a request).
"""

from __future__ import annotations

import json
import struct
import time
import zlib

from tests.helpers import LocalServer

ROWS = [{"model": "Llama-3.1-70B", "hardware": "8x H100", "tps": 181.5},
        {"model": "Qwen2.5-32B", "hardware": "1x H100", "tps": 240.4}]
MORE = [{"model": "Mistral-7B", "hardware": "1x L4", "tps": 95.0}]

BOARD = """<!doctype html><html><head><meta charset="utf-8"><title>Speed board</title>
<link rel="stylesheet" href="/style.css"><script src="{cdn}/fmt.js"></script></head>
<body><h1>Tokens per second</h1><p id="status">Loading...</p>
<table id="board"><thead><tr><th>Model</th><th>Hardware</th><th>Tokens/s</th></tr></thead><tbody></tbody></table>
<div id="spacer" style="height:2400px"></div><section id="more"><h2>More results</h2></section>
<script>
document.body.dataset.runs = String(Number(document.body.dataset.runs || 0) + 1);
function add(rows) {{
  const body = document.querySelector('#board tbody');
  for (const r of rows) {{
    const tr = document.createElement('tr');
    tr.innerHTML = '<td>' + r.model + '</td><td>' + r.hardware + '</td><td class="tps">' + window.fmt(r.tps) + '</td>';
    body.appendChild(tr);
  }}
}}
fetch('/api/rows.json').then(r => r.json()).then(rows => {{
  add(rows); document.getElementById('status').textContent = rows.length + ' results';
}});
fetch('{forbidden}/collect?x=1').then(() => {{ document.title = 'leaked'; }}).catch(() => {{}});
try {{ new WebSocket('{cdn_ws}/live'); }} catch (e) {{}}
if (navigator.serviceWorker) navigator.serviceWorker.register('/sw.js').catch(() => {{}});
new IntersectionObserver((items, obs) => {{
  if (!items.some(i => i.isIntersecting)) return;
  obs.disconnect();
  fetch('/api/more.json').then(r => r.json()).then(add);
}}).observe(document.getElementById('more'));
</script></body></html>"""

STYLE = """@font-face { font-family: Board; src: url(/board.woff2) format("woff2"); }
body { font-family: Board, sans-serif; margin: 0; }
td.tps { background: rgb(255, 0, 0); color: rgb(255, 255, 255); padding: 20px 60px; }"""

NEVER_IDLE = """<!doctype html><html><head><title>Live</title></head><body><p id="n">Model A 100 tok/s</p><script>
setInterval(() => fetch('/tick?' + Math.random()), 100);
</script></body></html>"""

NAV_LOOP = """<!doctype html><html><head><title>Hop</title></head><body><p>hop</p><script>
const n = Number(new URLSearchParams(location.search).get('n') || 0);
setTimeout(() => {{ location.href = '/loop?n=' + (n + 1); }}, 20);
</script></body></html>"""

BUSY = """<!doctype html><html><head><title>Busy</title></head><body><p>busy</p><script>
setTimeout(() => { for (;;) {} }, 50);
</script></body></html>"""

CRASH = """<!doctype html><html><head><title>Crash</title></head><body><p>boom</p><script>
const hoard = [];
setTimeout(() => { for (;;) { hoard.push(new Array(1 << 20).fill(hoard.length + 0.5)); } }, 10);
</script></body></html>"""

BIG_SCRIPT_PAGE = """<!doctype html><html><head><title>Big</title><script src="/big.js"></script></head>
<body><p id="ok">Big model 77 tok/s</p></body></html>"""

MANY = """<!doctype html><html><head><title>Many</title></head><body><p>Many model 12 tok/s</p><script>
let i = 0;
function more() { for (let k = 0; k < 500 && i < 100000; k++) { new Image().src = '/px?' + (i++); } if (i < 100000) setTimeout(more, 0); }
more();
</script></body></html>"""

ENDLESS = """<!doctype html><html><head><title>Endless</title></head><body><div id="feed"></div><script>
let n = 0;
function grow() { const d = document.createElement('div'); d.style.height = '1500px';
  d.textContent = 'row ' + (n++); document.getElementById('feed').appendChild(d); }
grow(); grow();
window.addEventListener('scroll', () => {
  if (window.scrollY + window.innerHeight > document.body.scrollHeight - 800) grow();
});
</script></body></html>"""

POPUP = """<!doctype html><html><head><title>Popup</title></head><body><p>Popup model 33 tok/s</p><script>
window.open('/popped', '_blank');
const a = document.createElement('a'); a.href = '/popped2'; a.target = '_blank'; document.body.appendChild(a); a.click();
</script></body></html>"""

DOWNLOAD = """<!doctype html><html><head><title>Download</title></head><body><p>Download model 44 tok/s</p><script>
const a = document.createElement('a'); a.href = '/file.bin'; a.download = 'file.bin'; document.body.appendChild(a); a.click();
</script></body></html>"""


def _tick(handler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", "2")
    handler.end_headers()
    handler.wfile.write(b"ok")


def _big(size: int):
    def handler(h) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/javascript")
        h.send_header("Content-Length", str(size))
        h.end_headers()
        chunk = b"/" * 2 + b" " * (1024 * 1024 - 3) + b"\n"
        left = size
        while left > 0:
            part = chunk[:min(left, len(chunk))]
            h.wfile.write(part)
            left -= len(part)
    return handler


class Site:
    def __init__(self):
        self.main, self.cdn, self.forbidden = LocalServer(), LocalServer(), LocalServer()
        for s in (self.main, self.cdn, self.forbidden):
            s.start()
        m = self.main
        m.route("/board", BOARD.format(cdn=self.cdn.url("").rstrip("/"), forbidden=self.forbidden.url("").rstrip("/"),
                                       cdn_ws=self.cdn.url("").rstrip("/").replace("http://", "ws://")))
        m.route("/sw.js", "self.addEventListener('fetch', e => e.respondWith(fetch(e.request)));",
                content_type="text/javascript")
        m.route("/style.css", STYLE, content_type="text/css")
        m.route("/board.woff2", b"wOF2" + b"\0" * 60, content_type="font/woff2")
        m.route("/api/rows.json", json.dumps(ROWS), content_type="application/json", gzip_body=True)
        m.route("/api/more.json", json.dumps(MORE), content_type="application/json")
        m.route("/live", NEVER_IDLE)
        m.routes["/tick"] = _route(_tick)
        m.route("/loop", NAV_LOOP.replace("{{", "{").replace("}}", "}"))
        m.route("/crash", CRASH)
        m.route("/busy", BUSY)
        m.route("/big", BIG_SCRIPT_PAGE)
        m.routes["/big.js"] = _route(_big(50_000_000))
        m.route("/many", MANY)
        m.routes["/px"] = _route(_tick)
        m.route("/endless", ENDLESS)
        m.route("/popup", POPUP)
        m.route("/popped", "<p>popped</p>")
        m.route("/popped2", "<p>popped</p>")
        m.route("/download", DOWNLOAD)
        m.route("/file.bin", b"\x00binary" * 100, content_type="application/octet-stream",
                headers=[("Content-Disposition", 'attachment; filename="file.bin"')])
        self.cdn.route("/fmt.js", "window.fmt = function (x) { return x.toFixed(1); };", content_type="text/javascript")
        self.forbidden.route("/collect", "stolen")

    def url(self, path: str) -> str:
        return self.main.url(path)

    @property
    def allow(self) -> str:
        """CAVEAT_ALLOW_PRIVATE_HOSTS for this site: main and cdn, not forbidden."""
        return f"127.0.0.1:{self.main.port},127.0.0.1:{self.cdn.port}"

    def paths(self, server=None) -> list[str]:
        return [r["path"] for r in (server or self.main).requests]

    def stop(self) -> None:
        for s in (self.main, self.cdn, self.forbidden):
            s.stop()


def _route(handler):
    from tests.helpers import Route

    return Route(handler=handler)


def wait_for(pred, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return False


def png_header(data: bytes) -> tuple[int, int]:
    """Check a PNG's structure (signature, every chunk's CRC, IHDR, IDAT inflates, IEND): (width, height)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, size, ended = 8, b"", None, False
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        crc = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        assert zlib.crc32(kind + chunk) == crc, f"bad CRC in {kind!r}"
        if kind == b"IHDR":
            size = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            ended = True
            break
        pos += 12 + length
    assert size and ended and zlib.decompress(idat)
    return size


def red_pixels(data: bytes, chromium: str) -> int:
    """How many pure-red pixels (the board's Tokens/s cells) the PNG shows, decoded by a real Chromium."""
    import base64

    from playwright.sync_api import sync_playwright

    from archive.browser import FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            src = "data:image/png;base64," + base64.b64encode(data).decode()
            return page.evaluate("""async (src) => {
              const img = new Image(); img.src = src; await img.decode();
              const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
              const g = c.getContext('2d'); g.drawImage(img, 0, 0);
              const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
              for (let i = 0; i < d.length; i += 4) if (d[i] > 240 && d[i + 1] < 20 && d[i + 2] < 20) n++;
              return n; }""", src)
        finally:
            browser.close()
