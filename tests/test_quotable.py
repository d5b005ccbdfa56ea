"""`GET /api/recipes/{id}/quotable`, `GET /api/quotable` and `caveat quote`."""

from __future__ import annotations

import json

from sqlalchemy import select

from app.models import Recipe
from app.services.audit import audit_entries
from tests.audit_data import glm_entries, store

FIELDS = {"recipe_id", "quotable_tps", "basis", "reason", "headline_tps", "inflation_ratio", "steady_state",
          "flags", "citations"}


def _seed(db, audit=True) -> str:
    with db.session() as s:
        _, _, summary = store(s, glm_entries())
        if audit:
            audit_entries(s, db.settings, summary.entry_ids)
        return s.scalar(select(Recipe.recipe_id))


def test_quotable_route_serves_cached_answer(client, db):
    rid = _seed(db)
    r = client.get(f"/api/recipes/{rid}/quotable")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == FIELDS
    assert (body["quotable_tps"], body["basis"], body["headline_tps"], body["inflation_ratio"]) == (
        373.0, "steady_state", 1004.9, 2.69)
    assert body["steady_state"]["low"] == 373.0 and body["steady_state"]["high"] == 391.0
    rules = [f["rule"] for f in body["flags"]]
    assert rules[:2] == ["full_acceptance", "repeat_loop"]
    assert {"headline_above_steady_state", "ladder_top_rung"} <= set(rules)
    assert all(set(f) == {"rule", "severity", "explanation", "evidence", "citation"} for f in body["flags"])


def test_unaudited_recipe_is_audited_on_first_read(client, db):
    rid = _seed(db, audit=False)
    assert client.get(f"/api/recipes/{rid}/quotable").json()["quotable_tps"] == 373.0
    with db.session() as s:
        assert s.scalar(select(Recipe.quotable_tps)) == 373.0


def test_unknown_recipe_is_404_with_hint(client):
    r = client.get("/api/recipes/r-000000000000/quotable")
    assert r.status_code == 404 and "caveat quote" in r.json()["error"]


def test_quotable_listing_filters(client, db):
    _seed(db)
    r = client.get("/api/quotable", params={"model": "glm-5.3", "hardware": "rtx pro"})
    assert r.json()["count"] == 1 and set(r.json()["recipes"][0]) == FIELDS
    assert client.get("/api/quotable", params={"engine": "vllm"}).json()["count"] == 0
    r = client.get("/api/quotable")
    assert r.status_code == 400 and "model=" in r.json()["error"]


def test_cli_quote_text_and_json(cli, db):
    rid = _seed(db)
    r = cli("quote", "GLM-5.3-Flash rtx")
    assert r.exit_code == 0, r.output
    assert "quotable:  373 tok/s  (basis: steady_state)" in r.output
    assert "[critical] full_acceptance" in r.output and "2.69x" in r.output
    r = cli("quote", rid, "--json")
    assert json.loads(r.output)["quotable_tps"] == 373.0
    r = cli("quote", "nonexistent-model")
    assert r.exit_code == 1 and "No recipe matches" in r.output


def test_cli_audit_all(cli, db):
    _seed(db, audit=False)
    r = cli("audit", "--all")
    assert r.exit_code == 0 and "audited 6 entries in 1 recipes" in r.output
    assert cli("audit").exit_code == 1
