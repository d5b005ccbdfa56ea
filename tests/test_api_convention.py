"""One API convention (docs/api.md), checked over every route of the OpenAPI document the app serves:
the envelope, paging with a correct ``next``, UTC timestamps with their offset, the one error shape
for unknown ids and bad parameters, CORS, strong ETags with 304, HEAD and OPTIONS."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from app.models import Flag, Recipe
from app.accounts import auth
from app.audit import decisions
from app.audit import measurements
from app.audit.engine import audit_entries
from app.capture.http import capture_urls
from tests.audit_data import glm_entries, store

PAGE = b"<html><body><table><tr><td>GLM-5.3-Flash</td><td>373 to 391</td></tr></table></body></html>"
UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00$")
VOLATILE = {"/api/snapshots/{citation_id}"}  # fixity is checked on each read (docs/api.md)
UNKNOWN = {"entry_id": "999999", "recipe_id": "r-000000000000", "citation_id": "ZZZZ-ZZZZ",
           "measurement_id": "999999", "flag_id": "999999", "event_id": "999999", "crawl_id": "999999"}


@pytest.fixture
def seeded(app, server):
    """A real captured snapshot with the seed's ladder stored against it, audited, measured and decided."""
    url = server.route("/board", PAGE)
    snap = capture_urls(app.state.db, [url])[0].snapshot
    db = app.state.db
    with db.session() as s:
        snapshot = s.get(type(snap), snap.id)
        _, _, summary = store(s, glm_entries(), snapshot=snapshot)
        audit_entries(s, db.settings, summary.entry_ids)
        rid = s.scalar(select(Recipe.recipe_id))
        m = measurements.record(s, db.settings, None, recipe_id=rid, tps=352.4, non_repeating_prompts=False,
                                output_checked=True)
        user = auth.create_user(s, "rita", "a long enough passphrase")
        flag = s.scalars(select(Flag).order_by(Flag.id)).first()
        decisions.decide(s, user, flag.id, "confirm", "checked the page", settings=db.settings)
        ids = {"entry_id": str(summary.entry_ids[0]), "recipe_id": rid, "citation_id": snap.citation_id,
               "measurement_id": str(m["id"]), "flag_id": str(flag.id)}
        ids.update(_watch_rows(s, snapshot))
    return ids, url


def _watch_rows(s, snapshot) -> dict:
    """A crawl and a change event (issue 17's /api/crawls/{crawl_id}, /api/changes/{event_id})."""
    from app.models import ChangeEvent, Crawl
    from app.claims.sources import add_source

    src = add_source(s, "watched-board", snapshot.url, "html")
    crawl = Crawl(source_id=src.id, kind="crawl", status="ok", trigger="cli")
    s.add(crawl)
    s.flush()
    ev = ChangeEvent(kind="changed", scope="entry", source_id=src.id, crawl_id=crawl.id, old_snapshot_id=snapshot.id,
                     new_snapshot_id=snapshot.id, old={"figures": {"headline_tps": 1.0}},
                     new={"figures": {"headline_tps": 2.0}}, changes={"headline_tps": [1.0, 2.0]}, cited=False)
    s.add(ev)
    s.flush()
    return {"crawl_id": str(crawl.id), "event_id": str(ev.id)}


def _gets(client) -> list[tuple[str, dict]]:
    doc = client.get("/openapi.json").json()
    return [(path, op) for path, item in doc["paths"].items() for method, op in item.items() if method == "get"]


def _fill(path: str, ids: dict) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)


def _required_query(path: str, op: dict, url: str) -> dict:
    values = {"url": url, "q": "373 to 391" if path.endswith("/quote") else "glm"}
    return {p["name"]: values[p["name"]] for p in op.get("parameters", [])
            if p["in"] == "query" and (p.get("required") or p["name"] in ("url", "q"))}


def _timestamps(value, where="") -> list[tuple[str, str]]:
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k.endswith("_at") and isinstance(v, str):
                found.append((f"{where}.{k}", v))
            found += _timestamps(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _timestamps(v, f"{where}[{i}]")
    return found


def test_openapi_document_is_served_at_both_addresses_without_fastapi_422(client):
    doc = client.get("/openapi.json")
    assert doc.status_code == 200
    assert client.get("/api/openapi.json").json() == doc.json()
    ops = [op for item in doc.json()["paths"].values() for op in item.values()]
    assert len(ops) >= 18
    for op in ops:
        assert "422" not in op["responses"]
        assert op["responses"]["400"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody")
        ok = op["responses"].get("200") or op["responses"].get("201") or op["responses"].get("202")
        assert ok["content"]["application/json"]["schema"].get("$ref"), op["operationId"]  # typed, not {}


def test_every_get_route_answers_in_the_envelope_with_utc_timestamps(client, seeded):
    ids, url = seeded
    for path, op in _gets(client):
        r = client.get(_fill(path, ids), params=_required_query(path, op, url))
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        body = r.json()
        assert body["ok"] is True, path
        if "count" in body:  # a list: the one paging envelope
            assert {"count", "total", "limit", "offset", "next"} <= set(body), path
            assert body["count"] <= body["limit"] and body["total"] >= body["count"]
        for where, stamp in _timestamps(body):
            assert UTC.match(stamp), (path, where, stamp)


def test_every_get_route_with_an_unknown_id_is_404_in_the_error_shape(client, seeded):
    _, url = seeded
    for path, op in _gets(client):
        if "{" not in path:
            continue
        r = client.get(_fill(path, UNKNOWN), params=_required_query(path, op, url))
        assert r.status_code == 404, (path, r.status_code, r.text[:200])
        assert r.json() == {"ok": False, "error": r.json()["error"], "status": 404}, path
        assert r.json()["error"].strip(), path


def test_every_paged_route_refuses_bad_limits_and_offsets_with_a_message(client, seeded):
    ids, url = seeded
    checked = 0
    for path, op in _gets(client):
        names = {p["name"] for p in op.get("parameters", [])}
        if not {"limit", "offset"} <= names:
            continue
        for bad in ({"limit": "0"}, {"limit": "many"}, {"offset": "-1"}):
            r = client.get(_fill(path, ids), params={**_required_query(path, op, url), **bad})
            assert r.status_code == 400, (path, bad, r.status_code)
            body = r.json()
            assert body["ok"] is False and body["status"] == 400
            assert next(iter(bad)) in body["error"], (path, body["error"])
        checked += 1
    assert checked >= 7


def test_next_walks_every_page_and_is_null_on_the_last(client, seeded):
    seen, url, pages = [], "/api/entries?limit=4", 0
    while url:
        body = client.get(url).json()
        seen += [e["id"] for e in body["entries"]]
        pages += 1
        url = body["next"]
        if url:
            assert "limit=4" in url and "offset=" in url
    assert pages == 2 and len(seen) == len(set(seen)) == 6
    last = client.get("/api/entries?limit=4&offset=4").json()
    assert last["next"] is None and last["count"] == 2
    assert client.get("/api/entries?limit=6").json()["next"] is None


def test_public_reads_send_cors_strong_etag_and_304(client, seeded):
    ids, url = seeded
    for path, op in _gets(client):
        target, params = _fill(path, ids), _required_query(path, op, url)
        r = client.get(target, params=params, headers={"origin": "https://elsewhere.test"})
        assert r.headers["access-control-allow-origin"] == "*", path
        tag = r.headers["etag"]
        assert tag.startswith('"') and not tag.startswith("W/"), path
        assert "max-age" in r.headers["cache-control"], path
        again = client.get(target, params=params, headers={"if-none-match": tag})
        if path in VOLATILE:  # recomputed on every read, with the time of that check: a new tag each time
            assert again.status_code == 200 and again.headers["etag"] != tag, path
            continue
        assert again.status_code == 304 and again.content == b"", path
        other = client.get(target, params=params, headers={"if-none-match": '"something-else"'})
        assert other.status_code == 200 and other.content == r.content, path
        head = client.head(target, params=params)
        assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == tag, path
        pre = client.options(target, headers={"origin": "https://elsewhere.test",
                                              "access-control-request-method": "GET"})
        assert pre.status_code == 204, path
        assert pre.headers["access-control-allow-methods"] == "GET, HEAD, OPTIONS"


def test_errors_are_not_cached_and_the_quotable_fast_path_has_etags(client, seeded):
    ids, _ = seeded
    miss = client.get("/api/recipes/r-000000000000/quotable")
    assert miss.headers["cache-control"] == "no-store" and "etag" not in miss.headers
    hit = client.get(f"/api/recipes/{ids['recipe_id']}/quotable")
    assert hit.json()["ok"] is True
    assert client.get(f"/api/recipes/{ids['recipe_id']}/quotable",
                      headers={"if-none-match": hit.headers["etag"]}).status_code == 304


def test_memento_json_endpoints_answer_errors_in_json(client):
    r = client.get("/timemap/json/http://never-archived.test/", headers={"accept": "text/html"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/json")
    assert r.json()["ok"] is False and r.json()["status"] == 404
    r = client.get("/timemap/json/http://[::1", headers={"accept": "text/html"})
    assert r.status_code == 400 and r.json()["ok"] is False


def test_writes_refuse_bad_bodies_in_the_error_shape(client):
    for path in ("/api/measurements", "/api/tokens", "/api/flags/1/decision"):
        r = client.post(path, json={"nonsense": True})
        assert r.status_code in (400, 401), (path, r.status_code)
        assert r.json()["ok"] is False and r.json()["error"]
    r = client.post("/api/citations", json={"snapshot": "ZZZZ-ZZZZ"})
    assert r.status_code == 404 and r.json()["ok"] is False


def test_docs_page_uses_only_vendored_assets(client):
    page = client.get("/docs")
    assert page.status_code == 200
    srcs = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert srcs and all(s.startswith("/") for s in srcs), srcs  # nothing from a CDN
    for s in srcs:
        assert client.get(s).status_code == 200, s
    assert client.get("/static/vendor/swagger-ui/LICENSE").status_code == 200
    assert client.get("/api/docs", follow_redirects=False).headers["location"] == "/docs"


def test_every_typed_query_parameter_refuses_a_wrong_type_naming_the_parameter(client, seeded):
    ids, url = seeded
    doc = client.get("/openapi.json").json()
    checked = 0
    for path, item in doc["paths"].items():
        op = item.get("get")
        if not op:
            continue
        for p in op.get("parameters", []):
            schema = p.get("schema", {})
            types = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
            if p["in"] != "query" or not types & {"integer", "boolean"}:
                continue
            r = client.get(_fill(path, ids), params={**_required_query(path, op, url), p["name"]: "not-a-value"})
            assert r.status_code == 400, (path, p["name"], r.status_code)
            body = r.json()
            assert body["ok"] is False and p["name"] in body["error"], (path, p["name"], body)
            checked += 1
    assert checked >= 15


def test_every_integer_path_id_refuses_a_word_with_the_error_shape(client):
    doc = client.get("/openapi.json").json()
    for path, item in doc["paths"].items():
        for method, op in item.items():
            ints = [p["name"] for p in op.get("parameters", []) if p["in"] == "path"
                    and p.get("schema", {}).get("type") == "integer"]
            if not ints:
                continue
            target = re.sub(r"\{(\w+)\}", lambda m: "abc" if m.group(1) in ints else "x", path)
            r = client.request(method.upper(), target, json={})
            assert r.status_code in (400, 401), (method, path, r.status_code)
            assert r.json()["ok"] is False and r.json()["error"], (method, path)


def test_audit_log_twin_pages_with_offset_and_a_next_that_ends(client, app, seeded):
    ids, _ = seeded
    db = app.state.db
    with db.session() as s:
        user = auth.get_user(s, "rita")
        for n in range(51):  # 52 decisions with the seeded one: two pages of 50
            decisions.decide(s, user, int(ids["flag_id"]), "confirm" if n % 2 else "dismiss", f"look {n}",
                             settings=db.settings)
    first = client.get("/audit-log.json").json()
    assert (first["ok"], first["count"], first["total"], first["next"]) == (True, 50, 52, "/audit-log.json?offset=50")
    last = client.get(first["next"]).json()
    assert (last["count"], last["next"]) == (2, None)
    assert {d["id"] for d in first["decisions"]}.isdisjoint(d["id"] for d in last["decisions"])
    html = client.get("/audit-log")
    assert 'href="/audit-log?offset=50"' in html.text
