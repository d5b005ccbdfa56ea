"""Wayback-shaped replay: timestamp rules, id_ bytes and headers, the framed view, fixity on read."""

from __future__ import annotations

import pytest

from archive import memento
from tests.replay_fixtures import add_snapshot

URL = "http://leaderboard.test/board"
PAGE = "<html><head><title>Board</title><script>document.title='pwned'</script></head>" \
       "<body><p>Fastest: 412 tok/s</p></body></html>"


@pytest.fixture
def three(app):
    """Captures at 2026-01-01 10:00:00.100, 10:00:00.900 (same second) and 2026-03-01."""
    with app.state.db.Session() as s:
        a = add_snapshot(s, app.state.settings, URL, "20260101100000100", PAGE, headers=[("Set-Cookie", "x=1")])
        b = add_snapshot(s, app.state.settings, URL, "20260101100000900", PAGE.replace("412", "413"))
        c = add_snapshot(s, app.state.settings, URL, "20260301000000000", PAGE.replace("412", "500"))
        s.commit()
        return a, b, c


def test_exact_17_digit_serves_that_record_and_same_second_is_told_apart(client, three):
    a, b, _ = three
    ra = client.get(f"/web/{a.timestamp}id_/{URL}", follow_redirects=False)
    rb = client.get(f"/web/{b.timestamp}id_/{URL}", follow_redirects=False)
    assert ra.status_code == rb.status_code == 200
    assert b"412 tok/s" in ra.content and b"413 tok/s" in rb.content
    assert ra.headers["memento-datetime"] == rb.headers["memento-datetime"] == "Thu, 01 Jan 2026 10:00:00 GMT"


@pytest.mark.parametrize("ts,expected", [
    ("2026", "20260101100000100"),            # padded to 2026-01-01 00:00 -> first capture
    ("20260101100000", "20260101100000100"),  # 14 digits is never exact
    ("202602", "20260301000000000"),          # Feb 1 is nearer to Mar 1 than to Jan 1
    ("20260101100000899", "20260101100000900"),
    ("20260101100000900", None),              # exact
    ("1999", "20260101100000100"),
    ("2030", "20260301000000000"),
])
def test_other_timestamps_redirect_to_the_nearest_exact_url(client, three, ts, expected):
    r = client.get(f"/web/{ts}id_/{URL}", follow_redirects=False)
    if expected is None:
        assert r.status_code == 200
        return
    assert r.status_code == 302
    assert r.headers["location"] == f"http://caveat.test/web/{expected}id_/{URL}"
    r2 = client.get(f"/web/{ts}/{URL}", follow_redirects=False)
    assert r2.status_code == 302 and r2.headers["location"] == f"http://caveat.test/web/{expected}/{URL}"


def test_id_returns_original_status_headers_bytes_with_memento_and_sandbox(client, app):
    with app.state.db.Session() as s:
        add_snapshot(s, app.state.settings, URL + "/gone", "20260101000000000", b"gone\x00\xff", status=404,
                     content_type="application/octet-stream", headers=[("X-Origin", "yes"), ("Set-Cookie", "sid=1")])
        s.commit()
    r = client.get(f"/web/20260101000000000id_/{URL}/gone")
    assert r.status_code == 404
    assert r.content == b"gone\x00\xff"
    assert r.headers["x-archive-orig-x-origin"] == "yes" and "x-origin" not in r.headers  # allow-list: renamed
    assert "set-cookie" not in r.headers and r.headers["x-archive-orig-set-cookie"] == "sid=1"
    assert r.headers["content-security-policy"].startswith("sandbox")
    assert "allow-scripts" not in r.headers["content-security-policy"]
    assert r.headers["memento-datetime"] == "Thu, 01 Jan 2026 00:00:00 GMT"
    links = dict((attrs["rel"], uri) for uri, attrs in memento.parse_link_header(r.headers["link"]))
    assert links["original"] == f"{URL}/gone"
    assert links["timegate"] == f"http://caveat.test/timegate/{URL}/gone"
    assert links["timemap"] == f"http://caveat.test/timemap/link/{URL}/gone"
    assert links["memento"] == f"http://caveat.test/web/20260101000000000id_/{URL}/gone"


def test_framed_view_keeps_banner_outside_the_sandboxed_document(client, three):
    from bs4 import BeautifulSoup

    a = three[0]
    r = client.get(f"/web/{a.timestamp}/{URL}")
    assert r.status_code == 200 and "set-cookie" not in r.headers
    assert "script-src 'none'" in r.headers["content-security-policy"]
    soup = BeautifulSoup(r.text, "html.parser")
    assert "Archived on Thu, 01 Jan 2026 10:00:00 GMT by Caveat" in soup.find(id="caveat-banner").get_text(" ")
    frame = soup.find("iframe")
    assert frame.has_attr("sandbox") and not frame["sandbox"] and frame["src"] == f"/web/{a.timestamp}id_/{URL}"
    assert "pwned" not in r.text  # the archived document is not inlined into our page
    inner = client.get(frame["src"])
    assert inner.headers["content-security-policy"].split(";")[0] == "sandbox"
    assert b"document.title='pwned'" in inner.content  # served byte for byte, neutered by CSP


def test_query_string_is_part_of_the_archived_url(client, app):
    with app.state.db.Session() as s:
        add_snapshot(s, app.state.settings, "http://leaderboard.test/api?page=2", "20260101000000000", "{}",
                     content_type="application/json")
        s.commit()
    assert client.get("/web/20260101000000000id_/http://leaderboard.test/api?page=2").status_code == 200
    assert client.get("/web/20260101000000000id_/http://leaderboard.test/api?page=3").status_code == 404


def test_unknown_url_and_bad_timestamp(client, three):
    r = client.get("/web/2026id_/http://never.test/")
    assert r.status_code == 404 and "caveat capture" in r.text
    assert client.get(f"/web/2026xx/{URL}").status_code == 400
    assert client.get(f"/web/123456789012345678id_/{URL}").status_code == 400


def test_fixity_failure_answers_500_with_an_explanation(client, app, three):
    a = three[0]
    path = app.state.settings.warc_dir / a.warc_file
    data = bytearray(path.read_bytes())
    data[a.offset + a.length // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    r = client.get(f"/web/{a.timestamp}id_/{URL}")
    assert r.status_code == 500
    assert "failed its fixity check" in r.text and "412 tok/s" not in r.text
    framed = client.get(f"/web/{a.timestamp}/{URL}", headers={"accept": "text/html"})
    assert framed.status_code == 500 and "failed its fixity check" in framed.text  # no reassuring banner
    api = client.get(f"/api/snapshots/{a.citation_id}")
    assert api.status_code == 200 and api.json()["fixity"] == "failed"  # recomputed on this read
    b = three[1]
    assert client.get(f"/web/{b.timestamp}id_/{URL}").status_code == 200  # neighbours unaffected
    assert client.get(f"/web/{b.timestamp}/{URL}").status_code == 200


def test_same_answers_on_sqlite_and_postgres(backend_settings):
    """Resolution, id_ bytes, the citation page and quote citations on each database backend."""
    from fastapi.testclient import TestClient

    from app.main import create_app

    application = create_app(backend_settings)
    try:
        with application.state.db.Session() as s:
            a = add_snapshot(s, backend_settings, URL, "20260101100000100", PAGE, citation_id="ABCD-EFGH")
            add_snapshot(s, backend_settings, URL, "20260101100000900", PAGE.replace("412", "413"))
            s.commit()
        with TestClient(application, base_url="http://caveat.test") as c:
            r = c.get(f"/web/20260101100000id_/{URL}", follow_redirects=False)
            assert r.headers["location"].endswith(f"/web/{a.timestamp}id_/{URL}")
            assert b"412 tok/s" in c.get(f"/web/{a.timestamp}id_/{URL}").content
            assert c.get("/c/abcd\u2013efgh.json").json()["fixity"] == "ok"
            assert c.get("/c/ABCD-EFGH", params={"q": "Fastest: 412 tok/s"}).status_code == 200
            assert [x["timestamp"] for x in c.get("/api/snapshots", params={"url": URL}).json()["snapshots"]] == \
                   ["20260101100000900", "20260101100000100"]
    finally:
        application.state.db.dispose()
