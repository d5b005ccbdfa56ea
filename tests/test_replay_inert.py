"""Archived responses are inert on Caveat's origin: headers by allow-list, statuses that act replaced."""

from __future__ import annotations

import pytest

from tests.replay_fixtures import add_snapshot

URL = "http://hostile.test/page"
ACTING = [("Speculation-Rules", '"/rules.json"'), ("WWW-Authenticate", 'Basic realm="x"'),
          ("Report-To", '{"endpoints":[{"url":"https://evil.test/r"}]}'), ("NEL", '{"report_to":"x"}'),
          ("Reporting-Endpoints", 'default="https://evil.test/r"'), ("Permissions-Policy", "camera=*"),
          ("Origin-Agent-Cluster", "?1"), ("Accept-CH", "Sec-CH-UA"), ("Refresh", "0; url=https://evil.test/"),
          ("Link", "<https://evil.test/x.js>; rel=preload"), ("X-Never-Heard-Of", "acts?")]


def _get(client, app, path, ts, body=b"<p>x</p>", **kw):
    with app.state.db.Session() as s:
        add_snapshot(s, app.state.settings, URL + path, ts, body, **kw)
        s.commit()
    return client.get(f"/web/{ts}id_/{URL}{path}", follow_redirects=False)


def test_only_descriptive_headers_keep_their_names(client, app):
    r = _get(client, app, "/h", "20260101000000000", headers=ACTING + [("ETag", '"abc"')])
    assert r.status_code == 200
    for name, value in ACTING:
        if name == "Link":  # Caveat sends its own Memento Link header; the archived one is not in it
            assert "evil.test" not in r.headers["link"]
        else:
            assert name.lower() not in r.headers, name
        assert r.headers[f"x-archive-orig-{name.lower()}"] == value
    assert r.headers["etag"] == '"abc"' and r.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("status", [401, 407])
def test_an_archived_credentials_prompt_is_a_page(client, app, status):
    r = _get(client, app, f"/auth{status}", f"202601010000000{status - 390:02d}", status=status,
             headers=[("WWW-Authenticate", 'Basic realm="caveat"'), ("Proxy-Authenticate", "Basic")])
    assert r.status_code == 200
    assert "www-authenticate" not in r.headers and "proxy-authenticate" not in r.headers
    assert r.headers["x-archive-orig-status"] == str(status)
    assert f"HTTP {status}" in r.text


def test_an_archived_redirect_stays_inside_the_replay(client, app):
    r = _get(client, app, "/moved", "20260101000000100", b"", status=302,
             headers=[("Location", "https://evil.test/phish")])
    assert r.status_code == 302
    assert r.headers["location"] == "http://caveat.test/web/20260101000000100id_/https://evil.test/phish"
    assert r.headers["x-archive-orig-location"] == "https://evil.test/phish"
    odd = _get(client, app, "/js", "20260101000000200", b"", status=301, headers=[("Location", "javascript:alert(1)")])
    assert odd.status_code == 200 and "not replayed" in odd.text and "location" not in odd.headers
    rel = _get(client, app, "/rel", "20260101000000300", b"", status=303, headers=[("Location", "/next?a=1")])
    assert rel.headers["location"] == "http://caveat.test/web/20260101000000300id_/http://hostile.test/next?a=1"


@pytest.mark.parametrize("status", [101, 103, 600, 999])
def test_statuses_the_server_cannot_send_are_described(client, app, status):
    r = _get(client, app, f"/s{status}", f"20260101000001{status:03d}", b"payload", status=status)
    assert r.status_code == 200
    assert r.headers["x-archive-orig-status"] == str(status)
    assert f"status {status}" in r.text


def test_malformed_archived_headers_are_served_not_a_dropped_connection(live_app):
    """Over a real socket (uvicorn): header names that are not tokens and values with control characters."""
    import httpx

    app, base = live_app
    with app.state.db.Session() as s:
        add_snapshot(s, app.state.settings, URL + "/bad-headers", "20260101000002000", b"<p>x</p>",
                     headers=[("Bad Name", "v"), ("X-Nul", "a\x00b"), ("X:Colon", "c"), ("X-Bell", "d\x07e")])
        s.commit()
    r = httpx.get(f"{base}/web/20260101000002000id_/{URL}/bad-headers", timeout=10)
    assert r.status_code == 200 and r.content == b"<p>x</p>"
    assert r.headers["x-archive-orig-bad_name"] == "v"
    assert r.headers["x-archive-orig-x-nul"] == "a b"
