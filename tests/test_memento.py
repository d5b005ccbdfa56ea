"""Memento (RFC 7089): TimeGate, TimeMaps and memento headers; unit checks of archive.memento and a
comparison with pywb serving the same WARC file."""

from __future__ import annotations

import json

import httpx
import pytest

from archive import memento
from tests.refbin import Pywb
from tests.replay_fixtures import add_snapshot

URL = "http://leaderboard.test/board"
STAMPS = ["20260101100000100", "20260101100005000", "20260301000000000"]


@pytest.fixture
def captures(app):
    with app.state.db.Session() as s:
        for i, ts in enumerate(STAMPS):
            add_snapshot(s, app.state.settings, URL, ts, f"<p>capture {i}</p>")
        s.commit()
    return app.state.settings.warc_dir / "test-replay.warc.gz"


def test_pad_and_dates():
    assert memento.pad_ts("2026") == "20260101000000000"
    assert memento.pad_ts("20260231") == "20260228000000000"
    assert memento.pad_ts("2026139") == "20261231000000000"  # month 13, day 91 clamped
    assert memento.http_date("20261201004913123") == "Tue, 01 Dec 2026 00:49:13 GMT"
    assert memento.parse_http_date("Tue, 01 Dec 2026 00:49:13 GMT") == "20261201004913000"
    with pytest.raises(ValueError, match="RFC 1123"):
        memento.parse_http_date("yesterday")
    assert memento.nearest("20260201000000000", "20260101000000000", "20260301000000000") == "20260301000000000"
    assert memento.nearest("20260101120000000", "20260101000000000", "20260102000000000") == "20260101000000000"


def test_timegate_honours_accept_datetime(client, captures):
    r = client.get(f"/timegate/{URL}", headers={"Accept-Datetime": "Sun, 01 Feb 2026 00:00:00 GMT"},
                   follow_redirects=False)
    assert r.status_code == 302
    assert r.headers["location"] == f"http://caveat.test/web/20260301000000000/{URL}"
    assert r.headers["vary"] == "accept-datetime"
    rels = {a["rel"] for _, a in memento.parse_link_header(r.headers["link"])}
    assert rels == {"original", "timemap"}
    latest = client.get(f"/timegate/{URL}", follow_redirects=False)
    assert latest.headers["location"].endswith(f"/web/{STAMPS[-1]}/{URL}")
    assert client.get(f"/timegate/{URL}", headers={"Accept-Datetime": "soon"}).status_code == 400
    assert client.get("/timegate/http://never.test/").status_code == 404


def test_timemap_link_format_and_json(client, captures):
    r = client.get(f"/timemap/link/{URL}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/link-format")
    links = memento.parse_link_header(r.text)
    rels = [a["rel"] for _, a in links]
    assert rels[:3] == ["original", "self", "timegate"]
    assert rels[3:] == ["first memento", "memento", "last memento"]
    assert [u for u, a in links[3:]] == [f"http://caveat.test/web/{ts}/{URL}" for ts in STAMPS]
    assert links[1][1]["from"] == "Thu, 01 Jan 2026 10:00:00 GMT"
    j = client.get(f"/timemap/json/{URL}").json()
    assert j["original_uri"] == URL and [m["timestamp"] for m in j["mementos"]["list"]] == STAMPS
    assert j["mementos"]["last"]["uri"].endswith(f"/web/{STAMPS[-1]}/{URL}")
    assert client.get("/timemap/link/http://never.test/").status_code == 404


def test_every_memento_carries_datetime_and_links(client, captures):
    for path in (f"/web/{STAMPS[1]}/{URL}", f"/web/{STAMPS[1]}id_/{URL}"):
        r = client.get(path)
        assert r.headers["memento-datetime"] == "Thu, 01 Jan 2026 10:00:05 GMT"
        rels = {a["rel"] for _, a in memento.parse_link_header(r.headers["link"])}
        assert {"original", "timegate", "timemap", "memento"} <= rels


@pytest.mark.referee
def test_same_answers_as_pywb_on_the_same_warc(client, captures, tmp_path):
    with Pywb(tmp_path / "pywb", [captures]) as wb:
        # TimeMap: the same original and the same memento datetimes
        theirs = memento.parse_link_header(httpx.get(f"{wb.base}/timemap/link/{URL}").text)
        ours = memento.parse_link_header(client.get(f"/timemap/link/{URL}").text)
        assert [a["datetime"] for _, a in theirs if "memento" in a["rel"]] == \
               [a["datetime"] for _, a in ours if "memento" in a["rel"]]
        assert [u for u, a in theirs if a["rel"] == "original"] == [u for u, a in ours if a["rel"] == "original"]
        # TimeGate: the same memento chosen for each Accept-Datetime
        for when in ("Thu, 01 Jan 2026 09:00:00 GMT", "Thu, 01 Jan 2026 10:00:03 GMT",
                     "Sun, 01 Feb 2026 00:00:00 GMT", "Tue, 01 Dec 2026 00:00:00 GMT"):
            pr = httpx.get(f"{wb.base}/{URL}", headers={"Accept-Datetime": when})
            chosen = [a["datetime"] for _, a in memento.parse_link_header(pr.headers["link"])
                      if "memento" in a["rel"]]
            mine = client.get(f"/timegate/{URL}", headers={"Accept-Datetime": when})
            assert mine.status_code == 200
            assert [mine.headers["memento-datetime"]] == chosen, when
        # id_: same bytes, same Memento-Datetime
        for ts in STAMPS:
            pr = httpx.get(f"{wb.base}/{ts[:14]}id_/{URL}")
            mine = client.get(f"/web/{ts}id_/{URL}")
            assert mine.content == pr.content
            assert mine.headers["memento-datetime"] == pr.headers["memento-datetime"]
            assert json.dumps(sorted(pr.headers.get("content-type", "").split(";"))) == \
                   json.dumps(sorted(mine.headers["content-type"].split(";")))


def test_head_works_for_timegate_and_mementos(client, captures):
    r = client.head(f"/timegate/{URL}", headers={"Accept-Datetime": "Thu, 01 Jan 2026 09:00:00 GMT"},
                    follow_redirects=False)
    assert r.status_code == 302 and r.headers["location"].endswith(f"/web/{STAMPS[0]}/{URL}")
    r = client.head(f"/web/{STAMPS[0]}id_/{URL}")
    assert r.status_code == 200 and r.headers["memento-datetime"] == "Thu, 01 Jan 2026 10:00:00 GMT"
