"""A real ReplayWeb.page (npm `replaywebpage`, pinned in the Makefile, installed by `make test`; AGPL,
used only as a referee here) loads Caveat's WACZ from 127.0.0.1 in headless Chromium and, asked for
each capture's own 17-digit timestamp, shows that capture: two captures a second apart are told apart."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from app.capture.http import capture_urls
from tests.test_browser_replay import CHROMIUM, FLAGS

ROOT = Path(__file__).resolve().parent.parent
RWP = Path(os.environ.get("CAVEAT_REPLAYWEBPAGE", ROOT / ".referees" / "replaywebpage" / "package"))

EMBED = """<!doctype html><html><head><meta charset="utf-8"><script src="/ui.js"></script></head>
<body><replay-web-page source="/archive.wacz" url="{url}" ts="{ts}" replayBase="/replay/" embed="replayonly"
style="display:block;width:1000px;height:700px"></replay-web-page></body></html>"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def static_server(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield root, f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.browser
@pytest.mark.referee
def test_replaywebpage_shows_the_capture_each_timestamp_names(app, server, cli, static_server):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; set CAVEAT_CHROMIUM to a Chromium binary")
    if not (RWP / "ui.js").exists():
        pytest.skip(f"ReplayWeb.page not found at {RWP}; `make referees` installs it (or set CAVEAT_REPLAYWEBPAGE)")
    from playwright.sync_api import sync_playwright

    root, base = static_server
    url = server.route("/board", "<html><body><p id='v'>capture one: 100 tok/s</p></body></html>")
    first = capture_urls(app.state.db, [url])[0].snapshot
    time.sleep(1.05)
    server.route("/board", "<html><body><p id='v'>capture two: 200 tok/s</p></body></html>")
    second = capture_urls(app.state.db, [url])[0].snapshot
    assert first.timestamp[:14] != second.timestamp[:14]   # a second apart
    assert cli("export-wacz", str(root / "archive.wacz")).exit_code == 0
    shutil.copy(RWP / "ui.js", root / "ui.js")
    (root / "replay").mkdir()
    shutil.copy(RWP / "sw.js", root / "replay" / "sw.js")
    for n, snap in ((1, first), (2, second)):
        (root / f"view{n}.html").write_text(EMBED.format(url=url, ts=snap.timestamp))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            for n, expected in ((1, "capture one: 100 tok/s"), (2, "capture two: 200 tok/s")):
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{base}/view{n}.html")
                seen = None
                deadline = time.monotonic() + 90
                reload_at = time.monotonic() + 20
                while time.monotonic() < deadline and seen is None:
                    if time.monotonic() > reload_at:  # the service worker took control after the first load
                        page.reload()
                        reload_at = time.monotonic() + 20
                    for frame in page.frames:
                        if "mp_/" in frame.url:
                            try:
                                text = frame.text_content("#v", timeout=500)
                            except Exception:  # the frame is still loading
                                continue
                            seen = (frame.url, text)
                    page.wait_for_timeout(250)
                assert seen is not None, [f.url for f in page.frames]
                assert seen[1] == expected, seen
                context.close()
        finally:
            browser.close()
