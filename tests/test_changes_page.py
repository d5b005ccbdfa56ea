"""Issue 29 item 7: ``/changes`` (HTML) with its ``.json`` twin and filters, the Changes links point to
it, ``/changes.atom`` opened in a browser is a readable page, and an empty feed's ``updated`` is when
the feed began, never a made-up date."""

from __future__ import annotations

from datetime import datetime, timezone

import feedparser
from bs4 import BeautifulSoup

from app.models import Source

from tests.test_watch import _crawl, _source, board

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def _three_events(client, server):
    db = client.app.state.db
    url = server.route("/b", board(500.0), content_type="application/json")
    _source(db, url)
    first = _crawl(db)
    assert client.post("/api/citations", json={"snapshot": first.snapshot}).status_code == 200
    server.route("/b", board(350.0), content_type="application/json")
    _crawl(db)
    server.routes.pop("/b")
    _crawl(db)
    return first


def test_changes_page_and_its_json_twin_with_filters(client, server):
    first = _three_events(client, server)
    r = client.get("/changes")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = BeautifulSoup(r.text, "html.parser")
    items = page.select("li.change")
    assert [li["class"][1] for li in items] == ["change-vanished", "change-changed"]
    changed = items[1]
    cells = [td.get_text(strip=True) for td in changed.select("table.change-table td")]
    assert cells[:3] == ["headline tps", "500.0", "350.0"]
    assert first.snapshot in changed.get_text()
    assert changed.select_one("a")["href"].startswith("/entries/")
    assert page.select_one('link[rel=alternate][type="application/json"]')["href"] == "/changes.json"
    assert page.select_one('link[rel=alternate][type="application/atom+xml"]')["href"] == "/changes.atom"
    j = client.get("/changes.json").json()
    assert list(j)[0] == "ok" and j["ok"] and j["total"] == 2
    assert [c["kind"] for c in j["changes"]] == ["vanished", "changed"]
    assert j["changes"][1]["changes"]["headline_tps"] == [500.0, 350.0]
    assert j["changes"][1]["created_at"].endswith("+00:00")
    # filters, the same on both faces; empty form fields are no filter
    assert client.get("/changes.json?kind=changed").json()["total"] == 1
    assert client.get("/changes.json?kind=&source=&cited=&since=").json()["total"] == 2
    assert client.get("/changes.json?source=nope").json()["total"] == 0
    assert client.get("/changes.json?cited=false").json()["total"] == 0
    assert client.get("/changes.json?since=2999-01-01T00:00Z").json()["total"] == 0
    eid = j["changes"][1]["entry_id"]
    assert client.get(f"/changes.json?entry_id={eid}").json()["total"] == 1
    r = client.get("/changes?kind=changed")
    page = BeautifulSoup(r.text, "html.parser")
    assert len(page.select("li.change")) == 1
    assert page.select_one("select[name=kind] option[selected]")["value"] == "changed"
    assert client.get("/changes?kind=exploded").status_code == 400
    assert client.get("/changes.json?since=yesterday").json()["ok"] is False


def test_changes_links_point_at_the_page(client, server):
    _three_events(client, server)
    sources = BeautifulSoup(client.get("/sources").text, "html.parser")
    link = sources.select_one("p.changes-link a")
    assert link["href"] == "/changes?source=board" and client.get(link["href"]).status_code == 200
    nav = [a["href"] for a in sources.select("header.site nav a")]
    assert "/changes" in nav
    rid = client.get("/changes.json?kind=changed").json()["changes"][0]["recipe_id"]
    recipe = BeautifulSoup(client.get(f"/recipes/{rid}").text, "html.parser")
    hrefs = [a["href"] for a in recipe.select("section.changes a")]
    assert f"/changes?recipe_id={rid}" in hrefs and not any(h.startswith("/api/") for h in hrefs)


def test_atom_feed_in_a_browser_is_a_page_and_a_reader_gets_the_feed(client, server):
    _three_events(client, server)
    r = client.get("/changes.atom?kind=changed", headers={"Accept": BROWSER})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "Accept" in r.headers["vary"]
    page = BeautifulSoup(r.text, "html.parser")
    assert page.select_one("code.feed-url").get_text() == "/changes.atom?kind=changed"
    assert len(page.select("li.change")) == 1
    assert page.select_one('link[rel=alternate][type="application/json"]')["href"] == "/changes.json?kind=changed"
    for accept in ("application/atom+xml", "application/atom+xml, text/html;q=0.5", "*/*", None):
        r = client.get("/changes.atom", headers={"Accept": accept} if accept else {})
        assert r.headers["content-type"].startswith("application/atom+xml"), accept
        assert len(feedparser.parse(r.content).entries) == 2


def test_empty_feed_is_dated_when_it_began(client, settings):
    r = client.get("/changes.atom")
    feed = feedparser.parse(r.content)
    assert not feed.bozo and feed.entries == []
    updated = datetime.fromisoformat(feed.feed.updated.replace("Z", "+00:00"))
    assert updated != datetime(2026, 1, 1, tzinfo=timezone.utc), "a made-up date"
    folder = datetime.fromtimestamp((settings.data_dir / "caveat.db").stat().st_mtime, timezone.utc)
    assert updated <= folder and updated <= datetime.now(timezone.utc)
    # with a source but no change yet: the source's creation
    _source(client.app.state.db, "http://127.0.0.1:9/x", name="quiet")
    with client.app.state.db.Session() as s:
        created = s.query(Source).one().created_at
    feed = feedparser.parse(client.get("/changes.atom").content)
    got = datetime.fromisoformat(feed.feed.updated.replace("Z", "+00:00"))
    assert abs((got - created.replace(tzinfo=created.tzinfo or timezone.utc)).total_seconds()) < 1
