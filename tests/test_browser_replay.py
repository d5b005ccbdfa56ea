"""A real headless Chromium loads replayed pages whose scripts try to change the title and call home,
and proves they did not run (Content-Security-Policy sandbox, banner outside the archived document)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.capture.http import capture_urls

CHROMIUM = os.environ.get("CAVEAT_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update"]

HOSTILE = """<!doctype html><html><head><title>Original title</title>
<script>
document.title = 'pwned';
try { parent.document.title = 'pwned-parent'; } catch (e) {}
try { document.cookie = 'stolen=1'; } catch (e) {}
fetch('/api/pwned-fetch');
new Image().src = '{beacon}';
</script></head>
<body><p id="text">Steady 180 tok/s</p><img src="/no-such-image" onerror="document.title='pwned-onerror'">
<script>document.getElementById('text').textContent = 'rewritten by script';</script></body></html>"""


@pytest.mark.browser
def test_archived_scripts_do_not_run(live_app, server):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; set CAVEAT_CHROMIUM to a Chromium binary")
    from playwright.sync_api import sync_playwright

    app, base = live_app
    beacon = server.url("/beacon")
    url = server.route("/hostile", HOSTILE.replace("{beacon}", beacon))
    snap = capture_urls(app.state.db, [url])[0].snapshot
    seen: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            page.on("request", lambda r: seen.append(r.url))
            # 1. the raw bytes as a top-level document
            page.goto(f"{base}/web/{snap.timestamp}id_/{url}")
            page.wait_for_timeout(300)
            assert page.title() == "Original title"
            assert page.text_content("#text") == "Steady 180 tok/s"
            # 2. the framed view: our banner page around the sandboxed memento
            page.goto(f"{base}/web/{snap.timestamp}/{url}")
            page.wait_for_timeout(300)
            assert "archived" in page.title().lower() and "pwned" not in page.title()
            assert "by Caveat" in page.text_content("#caveat-banner")
            frame = next(f for f in page.frames if "id_/" in f.url)
            assert frame.text_content("#text") == "Steady 180 tok/s"
            assert frame.title() == "Original title"
            assert page.context.cookies() == []
            # 3. the quote view is our own text rendering, no archived markup at all
            page.goto(f"{base}/c/{snap.citation_id}?q=Steady+180+tok/s")
            assert page.text_content("mark#quote") == "Steady 180 tok/s"
            assert "pwned" not in page.title()
        finally:
            browser.close()
    assert not [u for u in seen if "pwned" in u or "beacon" in u], seen
    assert not [r for r in server.requests if r["path"] != "/hostile"], server.requests
