"""CAVEAT_REPLAY_ORIGIN: archived bytes only from a separate origin, the app's origin refusing them,
and that origin serving nothing else (issue 13). The app in-process, Host headers as a browser sends them."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

from app.main import create_app
from app.capture.http import capture_urls

RAW = "http://raw.caveat.test"
PAGE = "<html><body><p>Decode 412.5 tok/s</p><script>document.title='x'</script></body></html>"


@pytest.fixture
def two_origins(settings, server):
    s = settings.model_copy(update={"replay_origin": RAW})
    application = create_app(s)
    url = server.route("/page", PAGE)
    snap = capture_urls(application.state.db, [url])[0].snapshot
    with TestClient(application, base_url="http://caveat.test") as app_client, \
            TestClient(application, base_url=RAW) as raw_client:
        yield app_client, raw_client, snap
    application.state.db.dispose()


def test_the_app_origin_refuses_archived_bytes_and_names_where_they_are(two_origins):
    app_client, raw_client, snap = two_origins
    r = app_client.get(f"/web/{snap.timestamp}id_/{snap.url}")
    assert r.status_code == 403
    assert f"{RAW}/web/{snap.timestamp}id_/{snap.url}" in r.json()["error"]
    raw = raw_client.get(f"/web/{snap.timestamp}id_/{snap.url}")
    assert raw.status_code == 200 and b"412.5" in raw.content
    csp = raw.headers["content-security-policy"]
    assert csp.startswith("sandbox") and "frame-ancestors http://caveat.test" in csp


def test_the_replay_origin_serves_nothing_but_archived_bytes(two_origins):
    _, raw_client, snap = two_origins
    for path in (f"/c/{snap.citation_id}", f"/web/{snap.timestamp}/{snap.url}", "/queue", "/api/snapshots",
                 "/static/caveat.css"):
        assert raw_client.get(path).status_code == 404, path


def test_the_framed_view_frames_the_replay_origin(two_origins):
    app_client, _, snap = two_origins
    r = app_client.get(f"/web/{snap.timestamp}/{snap.url}")
    assert r.status_code == 200
    frame = BeautifulSoup(r.text, "html.parser").find("iframe")
    assert frame["src"] == f"{RAW}/web/{snap.timestamp}id_/{snap.url}" and frame.has_attr("sandbox") and not frame["sandbox"]
    assert f"frame-src 'self' {RAW};" in r.headers["content-security-policy"]
    assert "script-src 'none'" in r.headers["content-security-policy"]
    page = BeautifulSoup(app_client.get(f"/c/{snap.citation_id}").text, "html.parser")
    assert page.select_one("a.raw-link")["href"] == f"{RAW}/web/{snap.timestamp}id_/{snap.url}"
    assert app_client.get(f"/c/{snap.citation_id}.json").json()["raw_url"].startswith(RAW + "/web/")
    # a short timestamp for raw bytes redirects onto the replay origin
    short = app_client.get(f"/web/2026id_/{snap.url}", follow_redirects=False)
    assert short.status_code == 403   # refused on the app origin before any redirect
