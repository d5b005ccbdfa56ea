"""Issue 27 in Chromium (-m browser) against a real `caveat serve` (a subprocess on a free port): a reviewer
fixes a wrong model on the entry page by keyboard, adds a missed figure by selecting it on the archived
page view, rejects a false entry and marks the page checked; `caveat reparse` keeps all three; a
correction without the CSRF token is refused. At 390x844 the forms fit the screen (no sideways scroll) and
a tap on a figure the reader did not read opens the add form."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import select

from app.accounts import auth
from app.models import Correction, Snapshot
from tests.test_browser_ui import browser  # noqa: F401  (fixture)
from tests.test_corrections import _entry, _live
from tests.test_corrections_pages import NOTES

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "reviewer-pass-1"


@pytest.fixture
def served(settings, cli, server, db):
    """The board crawled into this test's data folder, a reviewer, and `caveat serve` on a free port."""
    url = server.route("/board.md", NOTES, content_type="text/markdown")
    assert cli("source", "add", "board", url, "--kind", "markdown").exit_code == 0
    assert cli("crawl").exit_code == 0
    with db.Session() as s:
        auth.create_user(s, "rev", PASSWORD)
        s.commit()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CAVEAT_DATA_DIR": str(settings.data_dir),
           "CAVEAT_DATABASE_URL": settings.database_url, "CAVEAT_SECRET_KEY": settings.secret_key,
           "CAVEAT_ALLOW_PRIVATE_ADDRESSES": "true", "CAVEAT_BASE_URL": base}
    proc = subprocess.Popen([sys.executable, "-c", "from app.cli import main; main(prog_name='caveat')", "serve", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/queue", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(proc.stdout.read().decode())
                time.sleep(0.1)
        with db.Session() as s:
            cid = s.scalar(select(Snapshot.citation_id).where(Snapshot.source_id.is_not(None)))
        yield base, cid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _sign_in(page, base, target):
    page.goto(f"{base}/login?next={target}")
    page.fill("#username", "rev")
    page.fill("#password", PASSWORD)
    page.click("form.login-form button[type=submit]")
    page.wait_for_url(f"{base}{target}*")


def _select(page, selector):
    """Select the text of an element with the mouse, as a reviewer does (press at its left, release at its right)."""
    el = page.locator(selector)
    el.scroll_into_view_if_needed()
    box = el.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + 1, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, y)
    page.mouse.move(box["x"] + box["width"] - 1, y)
    page.mouse.up()


def test_reviewer_corrects_in_chromium_and_reparse_keeps_it(served, browser, cli, db):  # noqa: F811
    base, cid = served
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    llama = _entry(db, "Llama-3-8B")
    _sign_in(page, base, f"/entries/{llama.id}")
    other = browser.new_page(viewport={"width": 1366, "height": 900})   # a second reviewer, loaded before the fix
    _sign_in(other, base, f"/entries/{llama.id}")
    # fix a wrong model, by keyboard: c focuses the first field, Ctrl+Enter saves
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.id") == "fix-model"
    page.keyboard.press("Control+a")
    page.keyboard.type("Llama-3.1-8B")
    page.fill("#fix-why", "the page's title says 3.1")
    page.focus("#fix-why")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"corrected=\d+"))
    assert page.evaluate("document.activeElement.id") == "corrected-notice"
    row = page.locator('#correct-form tr[data-field="model"]')
    assert row.locator(".provenance-badge").inner_text() == "reviewer"
    assert page.input_value("#fix-model") == "Llama-3.1-8B"
    # the second tab's correction is stale: 409, the notice says so and shows the current state; nothing stored
    other.fill("#fix-model", "Llama-3-70B")
    other.fill("#fix-why", "I read it differently")
    with other.expect_navigation() as nav:
        other.focus("#fix-why")
        other.keyboard.press("Control+Enter")
    assert nav.value.status == 409
    assert other.evaluate("document.activeElement.id") == "correction-problem"
    assert "someone corrected this entry" in other.inner_text("#correction-problem")
    assert other.input_value("#fix-model") == "Llama-3.1-8B"
    other.close()
    # a correction without the CSRF token is refused (the signed-in cookie alone is not enough)
    status = page.evaluate("""async (id) => {
        const body = new URLSearchParams({action: 'fix', model: 'X', why: 'forged', version: '9'});
        const r = await fetch('/entries/' + id + '/correct', {method: 'POST', body, credentials: 'same-origin'});
        return r.status; }""", llama.id)
    assert status == 403
    # add a missed figure by selecting it on the archived page view
    page.goto(f"{base}/c/{cid}/review")
    first = page.locator("#archived-page mark.fig", has_text="140.2").first
    n = first.get_attribute("data-n")
    _select(page, f"#fig-{n}")
    page.wait_for_selector("#add-form:not([hidden])")
    assert page.inner_text("#add-exact") == "140.2"
    assert page.evaluate("document.activeElement.id") == "add-model"
    page.fill("#add-model", "Mistral-7B")
    page.fill("#add-why", "the footnote's figure")
    page.click("#add-submit")
    page.wait_for_url(re.compile(r"/entries/\d+\?corrected=\d+"))
    assert "Mistral-7B" in page.inner_text("h1")
    # reject a false entry: x focuses the reason
    qwen = _entry(db, "Qwen3-32B")
    page.goto(f"{base}/entries/{qwen.id}")
    page.keyboard.press("x")
    assert page.evaluate("document.activeElement.id") == "reject-why"
    page.keyboard.type("a vendor's advertised figure, not a run")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"corrected=\d+"))
    assert "Rejected as not a claim" in page.inner_text("#corrections")
    # mark the page checked
    page.goto(f"{base}/c/{cid}/review")
    page.fill("#checked-why", "every row and the footnote read")
    page.click("#checked-submit")
    page.wait_for_url(re.compile(r"checked=\d+"))
    assert page.inner_text("#checked-title") == "Every figure checked"
    page.close()
    with db.Session() as s:
        assert [c.kind for c in s.scalars(select(Correction).order_by(Correction.id))] == ["fix", "add", "reject",
                                                                                            "checked"]
    want = [("Llama-3.1-8B", 120.5), ("Mistral-7B", 140.2)]
    assert _live(db) == want
    r = cli("reparse")
    assert r.exit_code == 0, r.output
    assert _live(db) == want


def test_forms_fit_a_phone(served, browser, db):  # noqa: F811
    base, cid = served
    page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    llama = _entry(db, "Llama-3-8B")
    _sign_in(page, base, f"/entries/{llama.id}")
    for target in (f"/entries/{llama.id}", f"/c/{cid}/review"):
        page.goto(f"{base}{target}")
        width = page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= 390, (target, width)
    page.goto(f"{base}/entries/{llama.id}")
    box = page.locator("#fix-model").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["height"] >= 28, box
    page.goto(f"{base}/c/{cid}/review")
    page.locator("#archived-page mark.fig-unread").first.tap()
    page.wait_for_selector("#add-form:not([hidden])")
    assert page.inner_text("#add-exact") in ("61.0", "95.5")
    assert page.input_value("#add-model") == "Qwen3-32B"     # the reader's guess from the nearest entry
    box = page.locator("#add-submit").bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    page.close()
