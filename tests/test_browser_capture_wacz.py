"""A browser capture exported as WACZ replays with its scripts in a real ReplayWeb.page (the referee,
pinned in the Makefile): the table the page fills by fetch() after load is filled again from the
archived JSON, which only happens if every request the page made was archived."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from app.db import Database
from app.capture.browser import capture_browser_urls
from tests.browser_site import Site
from tests.test_browser_capture import CHROMIUM, guarded
from tests.test_browser_replaywebpage import EMBED, RWP, static_server  # noqa: F401 - a fixture

pytestmark = [pytest.mark.browser, pytest.mark.referee]


@pytest.fixture
def site():
    s = Site()
    yield s
    s.stop()


def test_the_wacz_of_a_browser_capture_replays_with_its_scripts(settings, cli, site, static_server):  # noqa: F811
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found")
    if not (RWP / "ui.js").exists():
        pytest.skip(f"ReplayWeb.page not found at {RWP}; `make referees` installs it")
    from playwright.sync_api import sync_playwright

    from archive.browser import FLAGS

    root, base = static_server
    db = Database(guarded(settings, site))
    try:
        r = capture_browser_urls(db, [site.url("/board")])[0]
        assert r.error is None
    finally:
        db.dispose()
    assert cli("export-wacz", str(root / "archive.wacz")).exit_code == 0
    shutil.copy(RWP / "ui.js", root / "ui.js")
    (root / "replay").mkdir()
    shutil.copy(RWP / "sw.js", root / "replay" / "sw.js")
    (root / "view.html").write_text(EMBED.format(url=site.url("/board"), ts=r.document.timestamp))
    site.stop()  # replay must come from the WACZ alone
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_context().new_page()
            page.goto(f"{base}/view.html")
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
                            text = frame.text_content("#board", timeout=500)
                        except Exception:  # the frame is still loading
                            continue
                        if text and "181.5" in text:
                            seen = (frame.url, text, frame.text_content("#status"))
                page.wait_for_timeout(250)
            assert seen is not None, [f.url for f in page.frames]
            assert "Llama-3.1-70B" in seen[1] and "240.4" in seen[1]  # fmt.js from the second origin ran too
            assert seen[2] == "2 results"
        finally:
            browser.close()
