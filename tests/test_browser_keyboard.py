"""Issue 29 item 10 (-m browser): the entry page by keyboard and on a phone, in Chromium at 1366x900 and
390x844, asserted on layout and focus (never pixels): the first Tab is a skip link to the first open
flag's note field; after a decision focus is on its confirmation, on screen; a decided flag is collapsed
(no note field or buttons showing); the citation's cell wording says which row."""

from __future__ import annotations

import re

import pytest

from tests.test_browser_ui import browser, demo_ui  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width, height", [(1366, 900), (390, 844)])
def test_entry_page_by_keyboard(demo_ui, browser, width, height):  # noqa: F811
    base, result = demo_ui
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{base}/login?next=/entries/{result.featured_entry}")
    page.fill("#username", result.username)
    page.fill("#password", "demo-password-1")
    page.click("form.login-form button[type=submit]")
    page.wait_for_url(f"{base}/entries/{result.featured_entry}*")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to the first open flag"
    page.keyboard.press("Enter")
    focused = page.evaluate("document.activeElement.id")
    assert focused.startswith("note-"), focused          # one Tab and Enter, where it took 24 Tabs
    flag_id = focused.split("-", 1)[1]
    page.keyboard.type("Checked against the notes: the steady state is the number.")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")                              # Confirm, then Dismiss
    assert page.evaluate("document.activeElement.className") == "dismiss"
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"decided=\d+&flag={flag_id}#decided-{flag_id}$"))
    active = page.evaluate("document.activeElement.id")
    assert active == f"decided-{flag_id}", active          # focus on the confirmation, not <body>
    box = page.locator(f"#decided-{flag_id}").bounding_box()
    assert box and -1 <= box["y"] and box["y"] + box["height"] <= height + 1, box
    article = page.locator(f"article#flag-{flag_id}")
    assert article.locator(".flag-status").inner_text() == "dismissed"
    assert not article.locator("textarea").is_visible()     # collapsed: no note field, no buttons
    assert not article.locator("button.confirm").is_visible()
    assert article.locator("details.revise summary").is_visible()
    # the skip link now goes to the next open flag, if any, never the decided one
    page.goto(f"{base}/entries/{result.featured_entry}")
    skip = page.locator("a.skip-link").first
    if skip.inner_text() == "Skip to the first open flag":
        assert skip.get_attribute("href") != f"#note-{flag_id}"
    page.close()
