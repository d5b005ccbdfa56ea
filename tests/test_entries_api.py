"""`GET /api/sources`, `GET /api/entries`, `GET /api/entries/{id}`, `GET /api/recipes/{id}` on SQLite and PostgreSQL."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from app.db import Database
from app.models import Flag
from app.claims.store import store_parse
from app.claims.sources import add_source
from tests.test_claims import ladder_result, make_snapshot

ENTRY_FIELDS = {"id", "source", "model", "hardware", "gpu_count", "engine", "engine_version", "quantization",
                "headline_tps", "steady_state", "draft_tokens", "acceptance_rate", "concurrency", "recipe_id",
                "notes", "snapshot", "citation", "working_tps", "basis", "flags"}


@pytest.fixture
def api(backend_settings):
    from app.main import create_app

    db = Database(backend_settings)
    with db.session() as s:
        src = add_source(s, "board", "http://example.org/board", "html")
        s1 = make_snapshot(s, src, "20261201000000000")
        res = ladder_result()
        top = res.entries[-1]
        top.fields.update(steady_low=373.0, steady_high=391.0)
        top.quotes["steady_low"] = "373"
        store_parse(s, src, s1, res)
        s2 = make_snapshot(s, src, "20261202000000000")
        store_parse(s, src, s2, ladder_result(headline_64=990.0, notes=None))
        other = add_source(s, "cards", "http://example.org/cards", "markdown")
        res2 = ladder_result(hardware="H100")
        store_parse(s, other, make_snapshot(s, other, "20261201000000000"), res2)
    with db.session() as s:
        from sqlalchemy import select

        from app.models import Entry

        e = s.scalar(select(Entry).where(Entry.source_id == src.id, Entry.draft_tokens == 8))
        s.add(Flag(entry_id=e.id, rule="saturated-acceptance", severity="critical", explanation="x",
                   evidence={}, ruleset_version="t"))
    db.dispose()
    application = create_app(backend_settings)
    with TestClient(application, base_url="http://caveat.test") as c:
        yield c, s1.citation_id, s2.citation_id
    application.state.db.dispose()


def test_sources_list(api):
    client, *_ = api
    body = client.get("/api/sources").json()
    names = [s["name"] for s in body["sources"]]
    assert names == ["board", "cards"]
    assert body["sources"][0]["entries"] == 6 and body["sources"][0]["kind"] == "html"


def test_entries_have_the_contract_fields_and_paginate(api):
    client, *_ = api
    body = client.get("/api/entries", params={"limit": 5}).json()
    assert body["total"] == 12 and len(body["entries"]) == 5
    assert ENTRY_FIELDS <= set(body["entries"][0])
    page2 = client.get("/api/entries", params={"limit": 5, "offset": 10}).json()
    assert len(page2["entries"]) == 2
    assert {e["id"] for e in body["entries"]}.isdisjoint({e["id"] for e in page2["entries"]})


def test_entry_filters(api):
    client, *_ = api
    get = lambda **p: client.get("/api/entries", params=p).json()  # noqa: E731
    assert get(source="cards")["total"] == 6
    assert get(model="glm-5.3-flash")["total"] == 12
    rid = get(source="board")["entries"][0]["recipe_id"]
    assert get(recipe_id=rid)["total"] == 6
    assert get(flagged="true")["total"] == 1
    assert get(flagged="false")["total"] == 11
    assert get(severity="critical")["total"] == 1 and get(severity="low")["total"] == 0
    r = client.get("/api/entries", params={"severity": "urgent"})
    assert r.status_code == 400 and "critical, high, medium, low" in r.json()["error"]
    assert get(rule="saturated-acceptance")["entries"][0]["draft_tokens"] == 8
    assert get(rule="saturated-acceptance")["entries"][0]["flags"][0]["rule"] == "saturated-acceptance"
    r = client.get("/api/entries", params={"source": "nope"})
    assert r.status_code == 404 and "GET /api/sources" in r.json()["error"]
    r = client.get("/api/entries", params={"limit": 0})
    assert r.status_code == 400 and r.json()["ok"] is False


def test_entry_detail_has_history_provenance_and_citations(api):
    client, c1, c2 = api
    rows = client.get("/api/entries", params={"source": "board"}).json()["entries"]
    top = next(e for e in rows if e["draft_tokens"] == 64)
    assert top["headline_tps"] == 990.0 and top["notes"] is None
    assert top["steady_state"] is None  # the second snapshot's parse gave no steady state
    assert top["snapshot"] == c2
    assert top["citation"] == f"http://caveat.test/c/{c2}?q={quote('990.0')}"
    detail = client.get(f"/api/entries/{top['id']}").json()
    assert [h["version"] for h in detail["history"]] == [1, 2]
    assert detail["history"][0]["snapshot"] == c1 and detail["history"][0]["headline_tps"] == 1004.9
    changed = detail["history"][1]["changed_fields"]
    assert changed["headline_tps"] == [1004.9, 990.0]
    assert changed["notes"] == ["acceptance 64/1.00 on locked attractor", None]
    assert changed["steady_low"] == [373.0, None]
    assert detail["provenance"]["headline_tps"]["quote"] == "990.0"
    assert detail["provenance"]["headline_tps"]["snapshot"] == c2
    assert client.get("/api/entries/999999").status_code == 404


def test_recipe_ladder_orders_rungs_and_keeps_repeats(api):
    client, *_ = api
    rid = client.get("/api/entries", params={"source": "board"}).json()["entries"][0]["recipe_id"]
    body = client.get(f"/api/recipes/{rid}").json()
    assert [r["draft_tokens"] for r in body["ladder"]] == [8, 12, 20, 20, 28, 64]
    assert [r["headline_tps"] for r in body["ladder"]][2:4] == [482.4, 514.3]
    assert body["key"]["hardware"] == "rtx pro 6000"
    r = client.get("/api/recipes/r-000000000000")
    assert r.status_code == 404 and "r-0123456789ab" in r.json()["error"]


def test_entry_provenance_carries_a_selector_that_pins_one_occurrence(client, app, server):
    """Two rows with the same figure: each entry's selector points at its own row."""
    from app.watch.schedule import crawl
    from app.claims.sources import add_source

    page = ("| model | GPU | tok/s |\n| --- | --- | --- |\n| alpha-7B | RTX 4090 | 88.5 |\n"
            "| beta-7B | RTX 4090 | 88.5 |\n")
    url = server.route("/two-rows.md", page, content_type="text/markdown; charset=utf-8")
    db = app.state.db
    with db.session() as s:
        add_source(s, "two-rows", url, "markdown")
    crawl(db, app.state.settings, ["two-rows"])
    listed = client.get("/api/entries", params={"source": "two-rows"}).json()
    items = listed.get("entries") or listed.get("items")
    got = {}
    for item in items:
        one = client.get(f"/api/entries/{item['id']}").json()
        sel = one["provenance"]["headline_tps"]["selector"]
        assert sel["exact"] == one["provenance"]["headline_tps"]["quote"] == "88.5"
        assert page[sel["start"]:sel["end"]] == "88.5"
        got[one["fields"]["model"]] = sel["start"]
    assert set(got) == {"alpha-7B", "beta-7B"}
    assert got["alpha-7B"] != got["beta-7B"]
    assert page.rfind("alpha-7B", 0, got["alpha-7B"]) > page.rfind("beta-7B", 0, got["alpha-7B"])


def test_entry_citations_pin_the_occurrence_they_were_read_from(client, app, server):
    """Every citation the entries API emits carries the parser's selector (prefix, suffix, pos), so a
    figure repeated on the page cites its own row; the pinned link resolves to that occurrence."""
    from urllib.parse import parse_qs, urlsplit

    from app.watch.schedule import crawl
    from app.claims.sources import add_source

    page = ("<table><tr><th>Model</th><th>Draft</th><th>tok/s</th></tr>"
            "<tr><td>GLM-5.3-Flash</td><td>20</td><td>482.4</td></tr>"
            "<tr><td>GLM-5.3-Flash</td><td>20</td><td>514.3</td></tr></table>").encode()
    url = server.route("/pins", page, content_type="text/html; charset=utf-8")
    db = app.state.db
    with db.session() as s:
        add_source(s, "pins", url, "html")
    crawl(db, app.state.settings, ["pins"])
    rows = client.get("/api/entries", params={"source": "pins"}).json()["entries"]
    assert len(rows) == 2
    positions = set()
    for row in rows:
        q = parse_qs(urlsplit(row["citation"]).query)
        assert {"q", "prefix", "suffix", "pos"} <= set(q), row["citation"]
        body = client.get(f"/api/entries/{row['id']}").json()
        prov = body["provenance"]["draft_tokens"]
        pq = parse_qs(urlsplit(prov["citation"]).query)
        assert pq["pos"] == [str(prov["selector"]["start"])]
        positions.add(prov["selector"]["start"])
        assert "pos" in parse_qs(urlsplit(body["history"][0]["citation"]).query)
        r = client.get(urlsplit(prov["citation"]).path + "?" + urlsplit(prov["citation"]).query)
        assert r.status_code == 200
    assert len(positions) == 2      # the two "20"s are two occurrences
