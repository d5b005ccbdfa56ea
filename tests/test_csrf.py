"""CSRF by one rule on every state-changing route: a cookie-authenticated request carries its session's
token whatever its content type; JSON is accepted only as application/json; bearer tokens need none.
Tested in-process and from a second origin (another port on 127.0.0.1: same-site, so the browser sends
the cookie) in a real Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.models import ApiToken, Decision
from app.accounts import auth
from tests.test_browser_replay import CHROMIUM, FLAGS

PASSWORD = "a long password 1"


def _login(client, app):
    with app.state.db.Session() as s:
        auth.create_user(s, "rev", PASSWORD)
        s.commit()
    page = client.get("/login")
    import re

    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    r = client.post("/login", data={"username": "rev", "password": PASSWORD, "csrf_token": token, "next": "/"},
                    follow_redirects=False)
    assert r.status_code in (302, 303), r.text


def _count(app, model) -> int:
    with app.state.db.Session() as s:
        return s.scalar(select(func.count()).select_from(model))


@pytest.mark.parametrize("ctype, body", [
    ("text/plain", '{"name": "stolen"}'),
    ("application/x-www-form-urlencoded", "name=stolen"),
    ("application/json", '{"name": "stolen"}'),  # same-site script without the token
])
def test_cookie_writes_without_the_token_are_refused_whatever_the_type(client, app, ctype, body):
    _login(client, app)
    r = client.post("/api/tokens", content=body, headers={"content-type": ctype})
    assert r.status_code in (403, 415), (ctype, r.status_code, r.text)
    r = client.post("/api/flags/1/decision", content=body.replace("name", "action"), headers={"content-type": ctype})
    assert r.status_code in (403, 415), (ctype, r.status_code, r.text)
    assert _count(app, ApiToken) == 0 and _count(app, Decision) == 0


def test_cookie_json_with_the_header_token_and_bearer_without_one_are_accepted(client, app):
    _login(client, app)
    page = client.get("/login")
    import re

    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    r = client.post("/api/tokens", json={"name": "mine"}, headers={"x-csrf-token": token})
    assert r.status_code == 201, r.text
    bearer = r.json()["token"]
    client.cookies.clear()
    # no CSRF for a bearer token; its scopes decide (a reviewer token cannot mint tokens)
    r = client.post("/api/tokens", json={"name": "second"}, headers={"authorization": f"Bearer {bearer}"})
    assert r.status_code == 403 and "admin" in r.json()["error"]
    with app.state.db.session() as s:
        admin = auth.create_token(s, "rev", "admin", "read,admin", 1)
    r = client.post("/api/tokens", json={"name": "second", "scopes": ["read"]},
                    headers={"authorization": f"Bearer {admin}"})
    assert r.status_code == 201, r.text
    r = client.post("/api/tokens", content='{"name": "x"}', headers={"authorization": f"Bearer {admin}",
                                                                     "content-type": "text/plain"})
    assert r.status_code == 415


ATTACK = """<!doctype html><html><body>
<form id="plain" method="post" action="{base}/api/tokens" enctype="text/plain" target="f1">
  <input name='{{"name": "stolen-plain", "x": "' value='"}}'></form>
<form id="url" method="post" action="{base}/api/tokens" enctype="application/x-www-form-urlencoded" target="f2">
  <input name="name" value="stolen-url"></form>
<form id="multi" method="post" action="{base}/api/tokens" enctype="multipart/form-data" target="f3">
  <input name="name" value="stolen-multi"></form>
<iframe name="f1"></iframe><iframe name="f2"></iframe><iframe name="f3"></iframe>
<script>
for (const id of ["plain", "url", "multi"]) document.getElementById(id).submit();
fetch("{base}/api/tokens", {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"content-type": "text/plain"}}, body: '{{"name": "stolen-fetch"}}'}});
fetch("{base}/api/flags/1/decision", {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"content-type": "text/plain"}}, body: '{{"action": "dismiss", "note": "x"}}'}});
</script></body></html>"""


@pytest.mark.browser
def test_a_second_origin_cannot_act_with_the_reviewers_cookie(live_app, server):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found; set CAVEAT_CHROMIUM to a Chromium binary")
    from playwright.sync_api import sync_playwright

    app, base = live_app
    with app.state.db.Session() as s:
        auth.create_user(s, "rev", PASSWORD)
        s.commit()
    attack = server.route("/attack", ATTACK.format(base=base))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page()
            page.goto(f"{base}/login")
            page.fill("#username", "rev")
            page.fill("#password", PASSWORD)
            page.click("form.login-form button[type=submit]")
            page.wait_for_load_state()
            assert any(c["name"] for c in page.context.cookies())  # signed in
            page.goto(attack)
            page.wait_for_timeout(1500)
        finally:
            browser.close()
    assert _count(app, ApiToken) == 0
    assert _count(app, Decision) == 0
