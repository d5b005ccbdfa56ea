"""Issue 24, items 1 and 2: what is withheld stays withheld, whatever route asks.

After ``caveat restrict`` / ``caveat withdraw`` every route that resolves a capture, a quote or a citation
answers as ``/c/{id}`` does (403 / 410 with the tombstone): never the bytes or any text of the capture,
never the URL, digests or WARC location of a restricted one, and no found/not-found difference for a
quote (a content oracle). The route test is generated from ``app.routes``: every GET/POST path with a
parameter is asked with the withheld capture's id, URL and timestamp, so a new route cannot forget the
check. Real captures from a real HTTP server on 127.0.0.1, the app on a real uvicorn server."""

from __future__ import annotations

import gzip
import json
import re
import zipfile
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.audit.access import change_access
from app.capture.browser import capture_browser_urls
from app.capture.http import capture_urls
from app.db import Database
from app.main import create_app
from app.rebuild.reindex import reindex_all
from app.claims.sources import add_source
from app.models import ChangeEvent, Entry, EntryVersion, Snapshot, Source
from app.watch.schedule import crawl_now
from tests.browser_site import Site
from tests.test_browser_capture import CHROMIUM, guarded
from tests.test_reindex import _lose_database

WORD = "alpha-bravo-charlie"          # in the withheld capture only
SECRET_BEFORE = "XYZZYLEFTSIDE"       # right before WORD: a quote answer's prefix would carry it
SECRET_AFTER = "PLUGHRIGHTSIDE"       # right after WORD
ABSENT = "not-in-any-capture-at-all"


def board(tps: float, note: str) -> str:
    return json.dumps([{"hfId": "zai-org/GLM-5.3-Flash", "hardware": {"gpuName": "RTX PRO 6000 Blackwell", "gpuCount": 2},
                        "engineName": "SGLang", "engineVersion": "0.5.4", "quantization": "NVFP4", "tokSOut": tps,
                        "engineFlags": {"tensorParallel": 2, "concurrency": 1}, "submitter": "alice",
                        "note": note}])


def _crawl(db, name="board"):
    with db.Session() as s:
        src = s.scalar(select(Source).where(Source.name == name))
        s.expunge(src)
    return crawl_now(db, db.settings, src)


@pytest.fixture
def withheld_site(live_app, server):
    """A followed source crawled twice (a public capture, then one holding the secret text, with a change
    event between them); returns what the routes are asked with."""
    app, base = live_app
    db = app.state.db
    url = server.route("/board.json", board(100.0, "nothing to see"), content_type="application/json")
    with db.Session.begin() as s:
        add_source(s, "board", url, "json")
    _crawl(db)
    server.route("/board.json", board(250.0, f"{SECRET_BEFORE} {WORD} {SECRET_AFTER}"),
                 content_type="application/json")
    _crawl(db)
    with db.Session() as s:
        first, snap = s.scalars(select(Snapshot).order_by(Snapshot.id)).all()[-2:]
        s.expunge_all()
        entry = s.scalar(select(Entry).order_by(Entry.id))
        event = s.scalar(select(ChangeEvent).order_by(ChangeEvent.id.desc()))
        versions = s.scalars(select(EntryVersion).where(EntryVersion.snapshot_id == snap.id)).all()
    assert versions, "the second capture was parsed"
    return {"app": app, "base": base, "db": db, "url": url, "snap": snap, "first": first,
            "entry_id": entry.id, "recipe_id": entry.recipe_id, "event_id": event.id if event else 1}



# -- the route table ---------------------------------------------------------------------------------

def all_routes(routes, prefix: str = "") -> list[tuple[str, set[str]]]:
    """(path, methods) of every HTTP route the app serves, included routers flattened."""
    out = []
    for r in routes:
        inner = getattr(r, "original_router", None)
        if inner is not None:   # FastAPI's lazily included router
            ctx = getattr(r, "include_context", None)
            out += all_routes(inner.routes, prefix + (getattr(ctx, "prefix", "") or ""))
        elif getattr(r, "methods", None) and getattr(r, "path", None):
            out.append((prefix + r.path, set(r.methods)))
    return out


PARAM = re.compile(r"\{([a-z_]+)(?::path)?\}")
# Every path parameter the app has, and what the test asks with. A route with a parameter not named here
# fails the test: whoever adds it says what it resolves, and the leak checks below then run on it.
CAPTURE_PARAMS = {"citation_id", "typed"}


def _values(param: str, path: str, w: dict) -> list[str]:
    snap = w["snap"]
    table = {
        "citation_id": [snap.citation_id], "typed": [snap.citation_id],
        "url": [w["url"]], "spec": [snap.timestamp, snap.timestamp + "id_", "*", "*.json"],
        "entry_id": [str(w["entry_id"])], "recipe_id": [w["recipe_id"]], "event_id": [str(w["event_id"])],
        "ref": [w["recipe_id"]] if path.startswith("/recipes/") else [str(w["entry_id"]), f"{w['entry_id']}.json"],
        "crawl_id": ["2"], "measurement_id": ["1"], "flag_id": ["1"], "name": ["board"], "size": ["1", "2"],
    }
    assert param in table, f"route {path}: add a value for {{{param}}} to this test (what does it resolve?)"
    return table[param]


def concrete(path: str, w: dict) -> list[str]:
    paths = [path]
    for param in PARAM.findall(path):
        paths = [re.sub(r"\{" + param + r"(?::path)?\}", v, p, count=1) for p in paths for v in _values(param, path, w)]
    return paths


def ask(c: httpx.Client, method: str, template: str, path: str, word: str, w: dict) -> httpx.Response:
    if method == "POST":
        return c.post(path, json={"snapshot": w["snap"].citation_id, "q": word})
    if ":path}" in template:   # the query string is part of the archived URL there
        return c.get(path)
    return c.get(path, params={"q": word, "url": w["url"]})


def _normal(text: str, word: str) -> str:
    return text.replace(word, "<Q>").replace(word.replace("-", "%2D"), "<Q>")


@pytest.mark.parametrize("action,status", [("restrict", 403), ("withdraw", 410)])
def test_no_route_leaks_a_withheld_capture(withheld_site, action, status):
    w = withheld_site
    snap = w["snap"]
    with httpx.Client(base_url=w["base"], timeout=30) as c:   # before: the quote API reads the text
        before = c.get(f"/api/snapshots/{snap.citation_id}/quote", params={"q": WORD})
        assert before.status_code == 200 and SECRET_AFTER in before.text
    change_access(w["db"], snap.citation_id, action, "personal data", actor="t")
    routes = [(p, m) for p, methods in all_routes(w["app"].routes) for m in sorted(methods & {"GET", "POST"})]
    assert len(routes) > 30 and any("{citation_id}" in p for p, _ in routes)
    asked = 0
    with httpx.Client(base_url=w["base"], timeout=30) as c:
        for template, method in routes:
            if template.startswith(("/docs", "/api/docs", "/openapi", "/api/openapi")):
                continue
            for path in concrete(template, w):
                present, absent = ask(c, method, template, path, WORD, w), ask(c, method, template, path, ABSENT, w)
                asked += 1
                where = f"{method} {path} ({action})"
                for r in (present, absent):
                    assert r.status_code < 500, (where, r.status_code, r.text[:300])
                    for secret in (SECRET_BEFORE, SECRET_AFTER):
                        assert secret not in r.text, f"{where} leaks text of the withheld capture"
                    if action == "restrict":
                        for fact in (snap.sha256, snap.record_id, snap.payload_digest):
                            assert fact not in r.text, f"{where} leaks the digest or record of a restricted capture"
                # no content oracle: the answer does not depend on whether the word is in the capture
                assert present.status_code == absent.status_code, (where, present.status_code, absent.status_code)
                if "{citation_id}" in template or "{typed}" in template or "/web/{spec}" in template \
                        and snap.timestamp in path and "*" not in path:
                    if not path.endswith("/access"):
                        assert present.status_code == status, (where, present.status_code, present.text[:300])
                        body = present.json() if "json" in present.headers.get("content-type", "") else None
                        if body is not None:
                            assert body["id"] == snap.citation_id and body["access"] == snap_access(action)
    assert asked > 40


def snap_access(action: str) -> str:
    return {"restrict": "restricted", "withdraw": "withdrawn"}[action]


def test_snapshot_routes_answer_with_the_tombstone_of_c(withheld_site):
    w = withheld_site
    snap, cid = w["snap"], w["snap"].citation_id
    change_access(w["db"], cid, "restrict", "personal data", actor="t")
    with httpx.Client(base_url=w["base"], timeout=30) as c:
        tomb = c.get(f"/c/{cid}.json")
        assert tomb.status_code == 403
        for r in (c.get(f"/api/snapshots/{cid}"), c.get(f"/api/snapshots/{cid}/quote", params={"q": WORD}),
                  c.get(f"/api/snapshots/{cid}/quote", params={"q": ABSENT}),
                  c.post("/api/citations", json={"snapshot": cid, "q": WORD}),
                  c.post("/api/citations", json={"snapshot": cid}), c.get(f"/log/inclusion/{cid}.json")):
            assert r.status_code == 403 and r.json() == tomb.json(), r.text
            assert w["url"] not in r.text and snap.warc_file not in r.text
        listed = c.get("/api/snapshots", params={"url": w["url"]}).json()
        assert listed["total"] == 1 and [s["id"] for s in listed["snapshots"]] == [w["first"].citation_id]
        # the newest public capture of the URL is what a citation by URL names
        by_url = c.post("/api/citations", json={"url": w["url"]}).json()
        assert by_url["id"] == w["first"].citation_id
        # reinstated: everything answers again
        change_access(w["db"], cid, "reinstate", "cleared", actor="t")
        assert c.get(f"/api/snapshots/{cid}").status_code == 200
        assert c.get("/api/snapshots", params={"url": w["url"]}).json()["total"] == 2
        assert SECRET_AFTER in c.get(f"/api/snapshots/{cid}/quote", params={"q": WORD}).text


def test_entries_and_changes_read_from_a_withdrawn_capture_show_no_figures_or_quotes(withheld_site):
    w = withheld_site
    cid = w["snap"].citation_id
    with httpx.Client(base_url=w["base"], timeout=30) as c:
        assert "250" in c.get("/changes.atom").text
        change_access(w["db"], cid, "withdraw", "takedown", actor="t")
        entry = c.get(f"/api/entries/{w['entry_id']}").json()
        assert entry["withheld"]["snapshot"] == cid and entry["withheld"]["status"] == 410
        assert entry["headline_tps"] is None and entry["notes"] is None and entry["provenance"] == {}
        assert entry["citation"] == f"http://caveat.test/c/{cid}" and "?q=" not in json.dumps(entry["history"][-1])
        assert entry["history"][0]["headline_tps"] == 100.0   # the public version is still shown
        change = c.get("/api/changes").json()["changes"][0]
        assert change["withheld"] is True and change["new"]["figures"] is None and change["new"]["citation"] is None
        assert change["changes"]["headline_tps"] == [100.0, None] and change["old"]["figures"]["headline_tps"] == 100.0
        feed = c.get("/changes.atom").text
        assert "250" not in feed and f"/c/{cid}" not in feed and "100.0" in feed


# -- item 2: withheld bytes through other records ------------------------------------------------------

PAGE = "<html><body><p>same bytes every time: 373 tok/s and PLUGHRIGHTSIDE</p></body></html>"


def test_a_later_capture_of_a_withheld_page_is_stored_whole_not_as_its_revisit(client, app, server):
    db = app.state.db
    url = server.route("/same", PAGE)
    a = capture_urls(db, [url])[0].snapshot
    change_access(db, a.citation_id, "restrict", "personal data", actor="t")
    b = capture_urls(db, [url])[0].snapshot
    assert b.record_type == "response" and b.refers_to_id is None, "never a revisit of a withheld record"
    # B is a capture in its own right: public, whole, and served from its own record
    raw = client.get(f"/web/{b.timestamp}id_/{url}")
    assert raw.status_code == 200 and "PLUGHRIGHTSIDE" in raw.text
    assert client.get(f"/web/{a.timestamp}id_/{url}").status_code == 403
    c = capture_urls(db, [url])[0].snapshot   # a third: a revisit of the public B, as before
    assert c.record_type == "revisit" and c.refers_to_id == b.id


def test_revisits_and_derived_records_follow_a_withdrawal_and_a_reinstatement(client, app, server, cli, tmp_path):
    db = app.state.db
    url = server.route("/same", PAGE)
    a = capture_urls(db, [url])[0].snapshot
    b = capture_urls(db, [url])[0].snapshot
    assert b.record_type == "revisit" and b.refers_to_id == a.id
    assert client.get(f"/web/{b.timestamp}id_/{url}").status_code == 200
    out = change_access(db, a.citation_id, "restrict", "personal data", actor="t")
    assert [x["citation_id"] for x in out["also"]] == [b.citation_id]
    for path in (f"/web/{b.timestamp}id_/{url}", f"/web/{b.timestamp}/{url}", f"/c/{b.citation_id}",
                 f"/c/{b.citation_id}.json", f"/api/snapshots/{b.citation_id}"):
        r = client.get(path)
        assert r.status_code == 403 and "PLUGHRIGHTSIDE" not in r.text, path
    assert client.get(f"/timemap/link/{url}").status_code == 404   # no capture of it is shown
    with db.Session() as s:
        assert s.get(Snapshot, b.id).access == "restricted"
    # the WARC files say so too: a reindex restores both
    db2 = _lose_database(db)
    reindex_all(db2, reparse=False)
    with db2.Session() as s:
        got = {x.citation_id: x.access for x in s.scalars(select(Snapshot))}
        assert got == {a.citation_id: "restricted", b.citation_id: "restricted"}
    db2.dispose()
    change_access(db, a.citation_id, "reinstate", "cleared", actor="t")
    assert client.get(f"/web/{b.timestamp}id_/{url}").status_code == 200


def test_a_revisit_made_before_the_cascade_existed_still_inherits_the_withholding(client, app, server):
    """Data from before this change: the original withdrawn, its revisit left public."""
    db = app.state.db
    url = server.route("/same", PAGE)
    a = capture_urls(db, [url])[0].snapshot
    b = capture_urls(db, [url])[0].snapshot
    with db.Session.begin() as s:
        s.get(Snapshot, a.id).access = "withdrawn"
        s.get(Snapshot, a.id).access_reason = "takedown"
    for path in (f"/web/{b.timestamp}id_/{url}", f"/c/{b.citation_id}.json", f"/api/snapshots/{b.citation_id}"):
        r = client.get(path)
        assert r.status_code == 410 and "PLUGHRIGHTSIDE" not in r.text, path
    j = client.get(f"/c/{b.citation_id}.json").json()
    assert j["id"] == b.citation_id and j["revisit_of"] == a.citation_id and j["reason"] == "takedown"


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} not found (make system-packages)")
def test_withdrawing_a_browser_capture_withdraws_its_dom_screenshot_and_pageinfo(settings, cli, tmp_path):
    site = Site()
    try:
        db = Database(guarded(settings, site))
        try:
            r = capture_browser_urls(db, [site.url("/board")])[0]
            assert r.error is None and r.snapshot and r.screenshot and r.pageinfo
            out = change_access(db, r.document.citation_id, "withdraw", "takedown", actor="t")
        finally:
            db.dispose()
    finally:
        site.stop()
    followed = {x["citation_id"] for x in out["also"]}
    assert {r.snapshot.citation_id, r.screenshot.citation_id, r.pageinfo.citation_id} <= followed
    app = create_app(settings)
    try:
        with TestClient(app, base_url="http://caveat.test") as client:
            for rec in (r.snapshot, r.screenshot, r.pageinfo):
                assert client.get(f"/c/{rec.citation_id}").status_code == 410
                assert client.get(f"/web/{rec.timestamp}id_/{rec.url}").status_code == 410
    finally:
        app.state.db.dispose()
    wacz = tmp_path / "x.wacz"
    assert cli("export-wacz", str(wacz)).exit_code == 0
    with zipfile.ZipFile(wacz) as z:
        cdx = gzip.decompress(z.read("indexes/index.cdx.gz")).decode()
    assert "urn:dom:" not in cdx and "urn:fullPage:" not in cdx and "urn:pageinfo:" not in cdx
