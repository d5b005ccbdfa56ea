"""The reviewer UI in a real headless Chromium (Playwright, Debian's chromium) on the demo data: the
queue lists the GLM-5.3-Flash entry with a critical flag; its page shows 1,004.9 and 373 and the chart
holds the ladder; a reviewer signs in, dismisses a flag and the audit log shows it; a citation link opens
the archived page with the quote highlighted. A screenshot of each page goes to test-artifacts/."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn

from app.main import create_app
from app.demo.run import DemoSite, demo_settings, run_demo
from app.audit.queue import clear_cache

CHROMIUM = os.environ.get("CAVEAT_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
LADDER = [(8, 300.7), (12, 443.1), (20, 482.4), (20, 514.3), (28, 808.5), (64, 1004.9)]


@pytest.fixture
def demo_ui(settings):
    """The demo crawled into this test's data folder and the UI served by uvicorn on a free port."""
    clear_cache()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    s = demo_settings(settings.model_copy(update={"database_url": None}), base)
    site = DemoSite().start()
    result = run_demo(s, site, password="demo-password-1")
    assert not result.failed, [(r.name, r.error) for r in result.failed]
    app = create_app(s)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield base, result
    server.should_exit = True
    thread.join(10)
    site.stop()
    app.state.db.dispose()


@pytest.fixture
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; `make test` installs Debian's chromium (or set CAVEAT_CHROMIUM)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"ui-{name}.png"), full_page=True)


@pytest.mark.browser
def test_reviewer_journey_on_the_demo(demo_ui, browser):
    base, result = demo_ui
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # the queue: the GLM-5.3-Flash entry is listed with a critical flag
    page.goto(f"{base}/")
    assert page.url == f"{base}/queue"
    row = page.locator(f"tr#entry-{result.featured_entry}")
    assert "GLM-5.3-Flash" in row.locator(".entry-link").inner_text()
    assert row.locator(".sev").first.inner_text().strip().lower() == "critical"
    assert row.locator("td.headline").inner_text() == "1,004.9"
    shot(page, "queue")

    # keyboard: the first Tab reaches the skip link, and following it moves focus to the content
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"

    # the entry page: headline beside the working number, and the chart holds the ladder and the band
    row.locator(".entry-link").click()
    page.wait_for_url(f"{base}/entries/{result.featured_entry}")
    assert page.inner_text("#headline-tps") == "1,004.9"
    assert page.inner_text("#working-tps") == "373"
    assert "steady_state" in page.inner_text("#basis")
    page.wait_for_function("window.caveatLadderChart && window.caveatLadderChart.data.datasets.length === 3")
    datasets = page.evaluate("""() => window.caveatLadderChart.data.datasets.map(d => ({
        label: d.label, points: d.data.map(p => [p.x, p.y])}))""")
    ladder = next(d for d in datasets if d["label"].startswith("Headline"))
    assert sorted(tuple(p) for p in ladder["points"]) == LADDER
    band = sorted({p[1] for d in datasets if d["label"].startswith("Stated") for p in d["points"]})
    assert band == [373, 391]
    drawn = page.evaluate("() => window.caveatLadderChart.getDatasetMeta(2).data.length")
    assert drawn == 6
    assert page.evaluate("() => document.getElementById('ladder-chart').width") > 0
    shot(page, "entry")

    # a reviewer signs in and dismisses a flag; the page and the audit log show it
    page.click(".sign-in-hint a >> nth=0")
    page.fill("#username", result.username)
    page.fill("#password", "demo-password-1")
    page.click("form.login-form button[type=submit]")
    page.wait_for_url(f"{base}/entries/{result.featured_entry}*")
    assert page.inner_text(".signed-in .username") == result.username
    flag = page.locator('article.flag[data-rule="repeat_loop"]')
    # keyboard only: focus the note, type, Tab past "Confirm" to "Dismiss", press Enter
    flag.locator("textarea").focus()
    page.keyboard.type("The notes call it an attractor; keep the steady state as the number.")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "confirm"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "dismiss"
    page.keyboard.press("Enter")
    page.wait_for_url("**decided=**")
    assert page.locator('article.flag[data-rule="repeat_loop"] .flag-status').inner_text() == "dismissed"
    assert page.locator(".notice").is_visible()
    shot(page, "entry-decided")
    page.goto(f"{base}/audit-log")
    first = page.locator("tr.decision-row").first
    assert first.locator(".who").inner_text() == result.username
    assert first.locator(".rule").inner_text() == "repeat_loop"
    assert first.locator(".action").inner_text() == "dismissed"
    shot(page, "audit-log")

    # a citation link opens the archived page with the quote highlighted by our server
    page.goto(f"{base}/entries/{result.featured_entry}")
    mark_link = page.locator(".notes-text mark.evidence a").first
    quote = mark_link.inner_text()
    mark_link.click()
    page.wait_for_url("**/c/**q=**")
    assert page.locator("mark#quote").inner_text() == quote
    assert "acceptance 64/1.00 on locked attractor" in quote
    shot(page, "citation-quote")

    for path, name in ((f"/recipes/{page_recipe(page, base, result)}", "recipe"), ("/sources", "sources")):
        page.goto(base + path)
        assert page.locator("h1").count() == 1
        shot(page, name)
    assert errors == []
    assert requested and all(u.startswith(base + "/") for u in requested), [
        u for u in requested if not u.startswith(base)]

    # readable on a phone: no sideways scrolling of the page itself
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    mp = phone.new_page()
    for path, name in (("/queue", "queue-phone"), (f"/entries/{result.featured_entry}", "entry-phone")):
        mp.goto(base + path)
        width = mp.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390 + 1, (path, width)
        shot(mp, name)
    phone.close()
    context.close()


def page_recipe(page, base, result) -> str:
    page.goto(f"{base}/entries/{result.featured_entry}.json")
    import json

    return json.loads(page.inner_text("body"))["recipe"]["recipe_id"]
