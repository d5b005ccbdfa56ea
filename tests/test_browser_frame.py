"""The framed view in a real headless Chromium (issue 13): the memento fills the window below the
banner at phone (390 px) and desktop (1280 px) widths, the banner stays outside the frame, and with
CAVEAT_REPLAY_ORIGIN the frame's bytes come from the other origin and still run no script."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.capture.http import capture_urls
from tests.test_browser_replay import CHROMIUM, FLAGS

LONG = ("<!doctype html><html><head><title>Board</title><script>document.title='pwned'</script></head><body>"
        "<h1 id='top'>Decode speed</h1><table>"
        + "".join(f"<tr><td>model {i}</td><td>{100 + i}.5</td></tr>" for i in range(200))
        + "</table></body></html>")


def _measure(page) -> dict:
    return page.evaluate("""() => {
        const f = document.querySelector('iframe#caveat-memento').getBoundingClientRect();
        const b = document.querySelector('#caveat-banner').getBoundingClientRect();
        return {fw: f.width, fh: f.height, ft: f.top, fb: f.bottom, bb: b.bottom, bh: b.height,
                vw: window.innerWidth, vh: window.innerHeight,
                scroll: document.documentElement.scrollWidth};
    }""")


@pytest.mark.browser
@pytest.mark.parametrize("width,height", [(390, 844), (1280, 800)])
def test_the_memento_fills_the_window_below_the_banner(live_app, server, width, height):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; set CAVEAT_CHROMIUM to a Chromium binary")
    from playwright.sync_api import sync_playwright

    app, base = live_app
    url = server.route("/long", LONG)
    snap = capture_urls(app.state.db, [url])[0].snapshot
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{base}/web/{snap.timestamp}/{url}")
            page.wait_for_load_state("load")
            m = _measure(page)
            assert m["fw"] == m["vw"] == width                      # full width
            assert m["ft"] >= m["bb"] - 0.5                         # the banner is above, outside the frame
            assert abs(m["fb"] - m["vh"]) <= 1                      # down to the bottom of the window
            assert m["fh"] >= m["vh"] - m["bh"] - 2 and m["fh"] > 0.5 * height
            assert m["scroll"] <= width                             # no sideways scrolling at 390 px
            frame = next(f for f in page.frames if "id_/" in f.url)
            assert frame.text_content("#top") == "Decode speed" and frame.title() == "Board"
            assert "pwned" not in page.title()
        finally:
            browser.close()


@pytest.mark.browser
def test_with_a_replay_origin_the_frame_loads_from_it_and_runs_no_script(live_app, server):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; set CAVEAT_CHROMIUM to a Chromium binary")
    from playwright.sync_api import sync_playwright

    app, base = live_app
    port = base.rsplit(":", 1)[1]
    raw_origin = f"http://localhost:{port}"                      # the same server under another origin
    app.state.settings = app.state.settings.model_copy(update={"base_url": base, "replay_origin": raw_origin})
    url = server.route("/long", LONG)
    snap = capture_urls(app.state.db, [url])[0].snapshot
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{base}/web/{snap.timestamp}/{url}")
            page.wait_for_load_state("load")
            frame = next(f for f in page.frames if "id_/" in f.url)
            assert frame.url.startswith(raw_origin + "/web/")
            assert frame.text_content("#top") == "Decode speed" and frame.title() == "Board"
            assert _measure(page)["fw"] == 1280
            # the app's origin refuses the same bytes
            r = page.request.get(f"{base}/web/{snap.timestamp}id_/{url}")
            assert r.status == 403
        finally:
            browser.close()
