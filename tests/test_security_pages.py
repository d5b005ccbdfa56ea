"""Caveat's own pages are safe to open beside hostile archives: only http(s) URLs become links, every
app page sends a strict Content-Security-Policy and refuses to be framed, and a non-http target URI is
refused at import."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.replay_fixtures import add_snapshot
from tests.test_browser_replay import CHROMIUM, FLAGS

XSS = "javascript:fetch('/api/tokens',{method:'POST'});document.title='pwned'"


@pytest.fixture
def xss_snapshot(app):
    with app.state.db.Session() as s:
        snap = add_snapshot(s, app.state.settings, XSS, "20260101000000000", "<p>Steady 180 tok/s</p>")
        s.commit()
        return snap.citation_id, snap.timestamp


def test_archived_non_http_urls_are_text_never_links(client, xss_snapshot):
    from bs4 import BeautifulSoup

    cid, ts = xss_snapshot
    for path in (f"/c/{cid}", f"/c/{cid}?q=Steady+180"):
        r = client.get(path)
        assert r.status_code == 200, path
        soup = BeautifulSoup(r.text, "html.parser")
        hrefs = [a.get("href", "") for a in soup.find_all("a")]
        assert not [h for h in hrefs if h.lower().startswith(("javascript:", "data:", "file:"))], (path, hrefs)
        assert "fetch(" in soup.get_text()  # still shown, as text


def test_app_pages_send_a_strict_policy_and_refuse_framing(client, xss_snapshot):
    cid, ts = xss_snapshot
    for path in ("/", "/queue", f"/c/{cid}", "/login", "/api/entries"):
        r = client.get(path)
        csp = r.headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0], path
        assert "frame-ancestors 'none'" in csp and r.headers["x-frame-options"] == "DENY", path
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "same-origin"
    raw = client.get(f"/web/{ts}id_/{XSS}")
    assert raw.headers["content-security-policy"].startswith("sandbox")  # its own policy, kept
    assert raw.headers["x-frame-options"] == "SAMEORIGIN"  # framed by Caveat's replay wrapper only


def test_import_refuses_non_http_target_uris_and_keeps_the_rest(db, tmp_path):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from app.rebuild.importer import import_warcs

    path = tmp_path / "xss.warc.gz"
    with open(path, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for uri in ("http://fine.test/a", XSS, "data:text/html,<script>alert(1)</script>", "file:///etc/passwd",
                    "https://fine.test/b"):
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(uri, "response", payload=io.BytesIO(b"<p>x</p>"), http_headers=http))
    (report,) = import_warcs(db, [path])
    assert sorted(s.url for s in report.imported) == ["http://fine.test/a", "https://fine.test/b"]
    assert len([p for p in report.problems if "not an http(s) URL" in p]) == 3


@pytest.mark.browser
def test_a_signed_in_reviewer_clicking_an_archived_javascript_url_runs_nothing(live_app):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; set CAVEAT_CHROMIUM to a Chromium binary")
    from playwright.sync_api import sync_playwright

    from app.accounts import auth

    app, base = live_app
    with app.state.db.Session() as s:
        auth.create_user(s, "reviewer", "a long password 1")
        snap = add_snapshot(s, app.state.settings, XSS, "20260101000000000", "<p>Steady 180 tok/s</p>")
        s.commit()
        cid = snap.citation_id
    posts: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and "/api/" in r.url else None)
            page.goto(f"{base}/login?next=/c/{cid}")
            page.fill("#username", "reviewer")
            page.fill("#password", "a long password 1")
            page.click("form.login-form button[type=submit]")
            page.wait_for_url(f"{base}/c/{cid}*")
            for link in page.locator("a").all():
                href = link.get_attribute("href") or ""
                assert not href.lower().startswith("javascript:"), href
            page.evaluate("() => { for (const el of document.querySelectorAll('dd, .original-url')) el.click(); }")
            page.wait_for_timeout(300)
            assert "pwned" not in page.title()
            # and a script that got in anyway could not run: the policy forbids inline script on app pages
            ran = page.evaluate("""() => new Promise(done => {
                const s = document.createElement('script'); s.textContent = "window.__ran = 1";
                document.body.appendChild(s); setTimeout(() => done(window.__ran === 1), 100); })""")
            assert ran is False
        finally:
            browser.close()
    assert posts == []
    with app.state.db.Session() as s:
        from sqlalchemy import func, select

        from app.models import ApiToken

        assert s.scalar(select(func.count()).select_from(ApiToken)) == 0
