"""Citation pages /c/{id}, their JSON twin, quote citations, and the snapshots/citations JSON API,
on snapshots made by the real capture service from a real local HTTP server."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup

from app.models import Entry, Snapshot
from app.capture.http import capture_urls
from app.replay.citations import quote_url

PAGE = """<!doctype html><html><head><title>Speed board</title>
<style>.x{color:red}</style><script>var secret = "not visible text";</script></head>
<body><h1>Leaderboard</h1>
<table><tr><th>Model</th><th>t/s</th><th>Notes</th></tr>
<tr><td>Qwen3-8B</td><td>412.5</td><td>Fastest run,
    steady   state 180-210 tok/s
    after warm-up.</td></tr>
<tr><td>Llama-3-8B</td><td>300.1</td><td>steady state 150 tok/s on prose</td></tr></table>
<p>Measured with <a href="/how" title="attribute only text">our harness</a>.</p></body></html>"""


@pytest.fixture
def captured(app, server):
    url = server.route("/board", PAGE, gzip_body=True)
    first = capture_urls(app.state.db, [url])[0]
    second = capture_urls(app.state.db, [url])[0]
    assert first.ok and second.ok, (first.error, second.error)
    return url, first.snapshot, second.snapshot


def test_citation_page_shows_what_when_where_digest_fixity_and_links(client, captured, app):
    url, first, second = captured
    with app.state.db.Session() as s:
        s.add(Entry(source_id=None, entry_key="qwen", model="Qwen3-8B", hardware="RTX 5090", headline_tps=412.5,
                    first_snapshot_id=first.id, last_snapshot_id=first.id))
        s.commit()
        entry_id = s.query(Entry.id).scalar()
    r = client.get(f"/c/{first.citation_id}")
    assert r.status_code == 200
    soup = BeautifulSoup(r.text, "html.parser")
    text = soup.get_text(" ")
    assert url in text and first.timestamp in text and f"sha256:{first.sha256}" in text
    assert "Fixity verified" in text
    assert soup.select_one("a.raw-link")["href"] == f"/web/{first.timestamp}id_/{url}"
    assert soup.select_one(".entries a")["href"] == f"/entries/{entry_id}"
    assert [a["href"] for a in soup.select(".other-captures a")] == [f"/c/{second.citation_id}"]
    alt = soup.find("link", rel="alternate", type="application/json")
    j = client.get(alt["href"]).json()
    assert j["id"] == first.citation_id and j["url"] == url and j["fixity"] == "ok"
    assert j["sha256"] == first.sha256 and j["entries"][0]["id"] == entry_id
    assert j["other_captures"][0]["id"] == second.citation_id
    raw = client.get(soup.select_one("a.raw-link")["href"])
    assert raw.status_code == 200 and raw.headers["content-encoding"] == "gzip"
    assert b"Qwen3-8B" in raw.content  # the client undid the original gzip: the bytes are the original ones


@pytest.mark.parametrize("typed", ["{lo}", "{a} {b}", "{a}\u2013{b}", "{a}{b}", " {a}--{b} "])
def test_tolerant_ids_redirect_to_the_canonical_url(client, captured, typed):
    cid = captured[1].citation_id
    a, b = cid.split("-")
    form = typed.format(lo=cid.lower(), a=a.lower(), b=b)
    r = client.get(f"/c/{form}", params={"q": "Qwen3-8B"}, follow_redirects=False)
    assert r.status_code == 301
    assert urlsplit(r.headers["location"]).path == f"/c/{cid}"
    assert parse_qs(urlsplit(r.headers["location"]).query) == {"q": ["Qwen3-8B"]}
    assert client.get(r.headers["location"]).status_code == 200


def test_unknown_and_malformed_ids_are_404_with_a_clear_message(client, captured):
    assert "no snapshot has citation id" in client.get("/c/ZZZZ-ZZZZ").text
    r = client.get("/c/not-an-id.json")
    assert r.status_code == 404 and "ABCD-EFGH" in r.json()["error"]


def test_quote_is_highlighted_by_the_server_whitespace_insensitively(client, captured):
    cid = captured[1].citation_id
    q = "Fastest run, steady state 180-210 tok/s after warm-up."
    r = client.get(f"/c/{cid}", params={"q": q})
    assert r.status_code == 200
    soup = BeautifulSoup(r.text, "html.parser")
    mark = soup.select_one(".page-text mark#quote")
    assert " ".join(mark.get_text().split()) == q
    assert soup.find("iframe") is None and all(x.get("src") == "/static/quote.js" for x in soup.find_all("script"))  # frameless; only our scroll-to-quote script
    assert "not visible text" not in soup.select_one(".page-text").get_text()
    j = client.get(f"/c/{cid}.json", params={"q": q}).json()
    assert j["matched_in"] == "text" and j["quote"]["exact"] == q


def test_prefix_and_suffix_choose_the_occurrence(client, captured):
    cid = captured[1].citation_id
    first = client.get(f"/c/{cid}.json", params={"q": "steady state"}).json()
    second = client.get(f"/c/{cid}.json", params={"q": "steady state", "suffix": "150 tok/s"}).json()
    assert second["start"] > first["start"]
    assert client.get(f"/c/{cid}.json", params={"q": "steady state", "prefix": "Llama"}).status_code == 404


def test_absent_quote_is_404_saying_so(client, captured):
    cid = captured[1].citation_id
    r = client.get(f"/c/{cid}", params={"q": "9000 tok/s"})
    assert r.status_code == 404 and "is not in snapshot" in r.text


def test_quote_falls_back_to_the_source(client, captured):
    cid = captured[1].citation_id
    j = client.get(f"/c/{cid}.json", params={"q": 'title="attribute only text"'}).json()
    assert j["matched_in"] == "source"


def test_snapshots_api_lists_newest_first_and_shows_one(client, captured):
    url, first, second = captured
    data = client.get("/api/snapshots", params={"url": url}).json()
    assert [s["id"] for s in data["snapshots"]] == [second.citation_id, first.citation_id]
    for s in data["snapshots"]:
        assert {"id", "url", "timestamp", "status", "mime", "sha256", "fixity"} <= set(s)
        assert len(s["timestamp"]) == 17 and s["status"] == 200 and s["mime"] == "text/html"
    one = client.get(f"/api/snapshots/{first.citation_id.lower()}").json()
    assert one["id"] == first.citation_id and one["sha256"] == first.sha256
    assert client.get("/api/snapshots").status_code == 400
    assert client.get("/api/snapshots/ZZZZ-ZZZZ").json()["ok"] is False


def _quote_link(body: dict) -> str:
    """The quote's citation URL in an API answer (``citation`` in the API convention, ``url`` before it)."""
    link = body.get("citation") or body["url"]
    return link if "/c/" in link else body["url"]


def test_quote_apis_return_the_citation_url(client, captured, settings):
    cid = captured[1].citation_id
    r = client.get(f"/api/snapshots/{cid}/quote", params={"q": "412.5"})
    assert r.status_code == 200
    assert quote_url(settings, cid, "412.5") == f"http://caveat.test/c/{cid}?q=412.5"
    # every citation Caveat emits pins one occurrence: prefix, suffix and the source position
    link = _quote_link(r.json())
    pinned = parse_qs(urlsplit(link).query)
    assert pinned["q"] == ["412.5"] and pinned["prefix"][0].endswith("Qwen3-8B") and "pos" in pinned
    assert link.startswith(f"http://caveat.test/c/{cid}?q=412.5&prefix=")
    # a quote that occurs twice gets prefix/suffix so the link names one place
    r = client.post("/api/citations", json={"snapshot": cid, "q": "steady state"})
    u = urlsplit(_quote_link(r.json()))
    params = parse_qs(u.query)
    assert params["q"] == ["steady state"] and "prefix" in params
    assert client.get(f"{u.path}?{u.query}").status_code == 200
    assert client.post("/api/citations", json={"snapshot": cid, "q": "absent words"}).status_code == 404
    r = client.post("/api/citations", json={"url": captured[1].url})
    assert r.json()["id"] == captured[2].citation_id
    assert client.post("/api/citations", json={}).status_code == 400


def test_quote_url_round_trips_awkward_text(client, captured, settings):
    cid = captured[1].citation_id
    url = quote_url(settings, cid.lower(), "Fastest run,\nsteady state", prefix="412.5", suffix="180-210")
    u = urlsplit(url)
    assert u.path == f"/c/{cid}"
    assert client.get(f"{u.path}?{u.query}").status_code == 200


def test_fixity_failure_is_said_plainly(client, captured, app):
    snap = captured[1]
    path = app.state.settings.warc_dir / snap.warc_file
    data = bytearray(path.read_bytes())
    data[snap.offset + snap.length - 12] ^= 0x55
    path.write_bytes(bytes(data))
    r = client.get(f"/c/{snap.citation_id}")
    assert r.status_code == 200
    assert "FIXITY FAILED" in BeautifulSoup(r.text, "html.parser").select_one("[role=alert]").get_text()
    j = client.get(f"/c/{snap.citation_id}.json").json()
    assert j["fixity"] == "failed" and j["ok"] is False and j["fixity_detail"]
    assert client.get(f"/c/{snap.citation_id}", params={"q": "Qwen3-8B"}).status_code == 500
    with app.state.db.Session() as s:  # reads never write: the row keeps what `caveat verify` recorded
        assert s.get(Snapshot, snap.id).fixity == "unchecked"


def test_head_on_a_citation_answers_like_get_without_a_body(client, captured):
    _, first, _ = captured
    r = client.head(f"/c/{first.citation_id}")
    assert r.status_code == 200 and r.content == b""
    assert r.headers["content-type"].startswith("text/html")
    assert client.head("/c/ZZZZ-ZZZZ").status_code == 404


def test_a_citation_answers_while_another_process_holds_the_write_lock(client, captured, app):
    """Reads never write: /c/{id} and the raw replay answer while a writer holds SQLite's lock."""
    import subprocess
    import sys

    snap = captured[1]
    db_path = app.state.settings.db_url.removeprefix("sqlite:///")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE'); c.execute(\"UPDATE sources SET url = url\")\n"
         "print('locked', flush=True); time.sleep(120)", db_path],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = client.get(f"/c/{snap.citation_id}")
        assert r.status_code == 200 and "Fixity verified just now" in r.text
        assert client.get(f"/c/{snap.citation_id}.json").json()["fixity"] == "ok"
        assert client.get(f"/web/{snap.timestamp}id_/{snap.url}").status_code == 200
        assert holder.poll() is None  # the lock was held throughout
    finally:
        holder.kill()
        holder.wait()


# The stored citation references are built by a fast percent-encoder: it must give exactly what the
# standard library gives, for any text (a changed byte would change every stored citation).
from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402
from urllib.parse import quote as _std_quote, urlencode as _std_urlencode  # noqa: E402

from app.replay import citations as _citations  # noqa: E402

_texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)


@hsettings(max_examples=400, deadline=None)
@given(_texts)
def test_the_fast_percent_encoder_matches_the_standard_library(text):
    assert _citations._pct(text) == _std_quote(text, safe="")


@hsettings(max_examples=200, deadline=None)
@given(_texts.filter(bool), st.one_of(st.none(), _texts), st.one_of(st.none(), _texts),
       st.one_of(st.none(), st.integers(min_value=0, max_value=10**9)))
def test_a_quote_reference_is_the_standard_query_string(quote, prefix, suffix, pos):
    params = [("q", quote)]
    if prefix:
        params.append(("prefix", prefix))
    if suffix:
        params.append(("suffix", suffix))
    if pos is not None:
        params.append(("pos", str(pos)))
    want = "/c/ABCD-EFGH?" + _std_urlencode(params, quote_via=_std_quote)
    assert _citations.quote_ref("ABCD-EFGH", quote, prefix, suffix, pos) == want
