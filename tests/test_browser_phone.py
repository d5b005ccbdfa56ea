"""The reviewer's first screen, a phone and a keyboard, measured in a real headless Chromium on the demo:

- at 1280x800 the entry page shows the one-line verdict and every standing flag, with its evidence in
  words, above the fold; a working number of "none" is styled as a warning;
- at 390x844 no page scrolls sideways and the queue's first entry is on the first screen (its filters
  fold); at both sizes the queue's first Tab reaches a skip link that lands on the first entry.
Each page is screenshot to test-artifacts/ at both sizes."""

from __future__ import annotations

import json

import pytest

from tests.test_browser_ui import browser, demo_ui, shot  # noqa: F401  (fixtures)

PHONE = {"width": 390, "height": 844}
DESK = {"width": 1280, "height": 800}


def _pages(base, page, result) -> list[tuple[str, str]]:
    page.goto(f"{base}/entries/{result.featured_entry}.json")
    data = json.loads(page.inner_text("body"))
    recipe = data["recipe"]["recipe_id"]
    snapshot = data["entry"]["snapshot"]
    page.goto(f"{base}/api/entries?flagged=true&limit=200")
    entries = json.loads(page.inner_text("body"))["entries"]
    nothing = next((e["id"] for e in entries if e["working_tps"] is None), None)
    pages = [("/queue", "queue"), (f"/entries/{result.featured_entry}", "entry"), (f"/recipes/{recipe}", "recipe"),
             ("/sources", "sources"), ("/audit-log", "audit-log"), (f"/c/{snapshot}", "citation"), ("/docs", "docs")]
    if nothing is not None:
        pages.append((f"/entries/{nothing}", "entry-none"))
    return pages


def _fold(page, selector: str) -> float:
    return page.evaluate(f"() => document.querySelector({selector!r}).getBoundingClientRect().bottom + window.scrollY")


@pytest.mark.browser
def test_entry_first_screen_says_what_to_quote_and_why(demo_ui, browser):  # noqa: F811
    base, result = demo_ui
    ctx = browser.new_context(viewport=DESK)
    page = ctx.new_page()
    page.goto(f"{base}/entries/{result.featured_entry}")
    verdict = page.locator("#verdict").inner_text()
    assert verdict.startswith("Quote 373 tok/s instead of the headline 1,004.9"), verdict
    assert "steady state" in verdict
    standing = page.locator(".standing-flag")
    assert standing.count() >= 3
    rules = [standing.nth(i).get_attribute("data-rule") for i in range(standing.count())]
    assert rules[0] == "full_acceptance"
    # above the fold: the verdict and every standing flag
    assert _fold(page, "#verdict") <= DESK["height"]
    assert _fold(page, ".standing-list > li:last-child") <= DESK["height"], "standing flags below the fold"
    text = page.locator("#standing-flags").inner_text()
    assert "{" not in text and "[" not in text and "\\u003e" not in text  # words, not JSON
    quote = page.locator(".standing-flag .evidence-quote q").first
    assert quote.count() == 1 and quote.inner_text()
    link = page.locator(".standing-flag .evidence-quote a.cite").first
    assert "/c/" in link.get_attribute("href") and "q=" in link.get_attribute("href")
    shot(page, "entry-first-screen-1280")
    ctx.close()


@pytest.mark.browser
def test_working_number_none_is_a_warning(demo_ui, browser):  # noqa: F811
    base, result = demo_ui
    ctx = browser.new_context(viewport=DESK)
    page = ctx.new_page()
    pages = dict((name, path) for path, name in _pages(base, page, result))
    if "entry-none" not in pages:
        pytest.skip("the demo has no entry without a working number")
    page.goto(base + pages["entry-none"])
    assert page.locator("#verdict").inner_text().startswith("Do not quote")
    box = page.locator(".working-figure")
    assert "working-none" in box.get_attribute("class")
    assert page.inner_text("#working-tps") == "none"
    color = page.evaluate("() => getComputedStyle(document.getElementById('working-tps')).color")
    assert color == "rgb(138, 28, 28)", color  # the critical red, not the success green
    shot(page, "entry-none-1280")
    ctx.close()


@pytest.mark.browser
@pytest.mark.parametrize("viewport", [PHONE, DESK], ids=["390x844", "1280x800"])
def test_no_page_scrolls_sideways_and_each_is_screenshot(demo_ui, browser, viewport):  # noqa: F811
    base, result = demo_ui
    ctx = browser.new_context(viewport=viewport, is_mobile=viewport is PHONE)
    page = ctx.new_page()
    wide = []
    for path, name in _pages(base, page, result):
        page.goto(base + path)
        page.wait_for_load_state("load")
        width = page.evaluate("() => document.documentElement.scrollWidth")
        if width > viewport["width"] + 1:
            culprits = page.evaluate("""(w) => [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > w + 1)
                .slice(-3).map(e => e.tagName + '.' + e.className)""", viewport["width"])
            wide.append((path, width, culprits))
        shot(page, f"{name}-{viewport['width']}")
    assert not wide, wide
    ctx.close()


@pytest.mark.browser
def test_phone_queue_shows_the_first_entry_on_the_first_screen(demo_ui, browser):  # noqa: F811
    base, _ = demo_ui
    ctx = browser.new_context(viewport=PHONE, is_mobile=True)
    page = ctx.new_page()
    page.goto(f"{base}/queue")
    top = page.evaluate("() => document.querySelector('tr.queue-row').getBoundingClientRect().top + window.scrollY")
    assert top < PHONE["height"] - 60, top
    assert page.evaluate("() => document.getElementById('filters').open") is False
    page.click("#filters > summary")  # the filters are one tap away
    assert page.locator("#facet-severity").is_visible()
    ctx.close()


@pytest.mark.browser
@pytest.mark.parametrize("viewport", [PHONE, DESK], ids=["390x844", "1280x800"])
def test_skip_link_reaches_the_first_entry_from_the_keyboard(demo_ui, browser, viewport):  # noqa: F811
    base, _ = demo_ui
    ctx = browser.new_context(viewport=viewport)
    page = ctx.new_page()
    page.goto(f"{base}/queue")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to the first entry"
    page.keyboard.press("Enter")
    if page.evaluate("document.activeElement.id") != "first-entry":
        page.keyboard.press("Tab")  # focus starts at the target; the next Tab is the entry itself
    assert page.evaluate("document.activeElement.id") == "first-entry"
    href = page.evaluate("document.activeElement.getAttribute('href')")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}{href}")
    # tab order without the skip link: the first entry comes before any filter link at 390 px
    page.goto(f"{base}/queue")
    order = []
    for _ in range(40):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id || document.activeElement.className"))
        if order[-1] == "first-entry":
            break
    assert "first-entry" in order, order
    if viewport is PHONE:
        assert len(order) <= 12, order  # folded filters are one stop, not thirty
    ctx.close()


@pytest.mark.browser
def test_api_docs_page_renders_offline_from_vendored_assets(demo_ui, browser):  # noqa: F811
    base, _ = demo_ui
    ctx = browser.new_context(viewport=DESK)
    page = ctx.new_page()
    requested, errors = [], []
    page.on("request", lambda r: requested.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    failed = []
    page.on("response", lambda r: failed.append((r.status, r.url)) if r.status >= 400 else None)
    page.goto(f"{base}/docs")
    page.wait_for_selector(".opblock", timeout=20000)
    assert page.locator(".opblock").count() >= 18
    assert "/api/recipes/{recipe_id}/quotable" in page.inner_text("body")
    shot(page, "docs-rendered-1280")
    assert all(u.startswith(base + "/") for u in requested), [u for u in requested if not u.startswith(base)]
    assert errors == [], errors
    assert failed == [], failed  # /favicon.ico included
    ctx.close()
