"""`GET /api/recipes/{id}/quotable`, `GET /api/quotable` and `caveat quote`: the answer describes itself."""

from __future__ import annotations

import json

from sqlalchemy import select

from app.models import Recipe
from app.audit import measurements
from app.audit.engine import audit_entries, audit_recipes
from scrapers.fields import ParsedEntry
from tests.audit_data import GLM_BASE, glm_entries, store

FIELDS = {"ok", "recipe_id", "model", "hardware", "gpu_count", "engine", "engine_version", "quantization", "phase",
          "scope", "concurrency", "test", "key", "quotable_tps", "basis", "reason", "headline_tps",
          "inflation_ratio", "steady_state", "measurement", "flags", "citations", "ruleset_version", "computed_at",
          "unreviewed_tps", "roofline"}


def _seed(db, audit=True) -> str:
    with db.session() as s:
        _, _, summary = store(s, glm_entries())
        if audit:
            audit_entries(s, db.settings, summary.entry_ids)
        return s.scalar(select(Recipe.recipe_id))


def _llama_bench(db) -> dict[str, str]:
    """Two llama-bench rows of one setup: prompt processing (pp512) and generation (tg128)."""
    base = dict(model="Llama 3.1 8B Q4_K_M", hardware="RTX 4090", gpu_count=1, engine="llama.cpp",
                quantization="Q4_K_M")
    rows = [ParsedEntry(fields=dict(base, test="pp512", headline_tps=11842.61), quotes={"headline_tps": "11842.61"}),
            ParsedEntry(fields=dict(base, test="tg128", headline_tps=152.3), quotes={"headline_tps": "152.30"})]
    with db.session() as s:
        _, _, summary = store(s, rows)
        audit_entries(s, db.settings, summary.entry_ids)
        return {r.key.get("test"): r.recipe_id for r in s.scalars(select(Recipe))}


def test_quotable_route_serves_cached_answer_describing_itself(client, db):
    rid = _seed(db)
    r = client.get(f"/api/recipes/{rid}/quotable")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == FIELDS and body["ok"] is True
    assert (body["quotable_tps"], body["basis"], body["headline_tps"], body["inflation_ratio"]) == (
        373.0, "steady_state", 1004.9, 2.69)
    assert (body["model"], body["hardware"], body["gpu_count"], body["engine"], body["quantization"],
            body["concurrency"]) == ("GLM-5.3-Flash", "RTX PRO 6000 Blackwell", 2, "SGLang", "NVFP4", 1)
    with db.session() as s:
        assert body["key"] == s.scalar(select(Recipe.key))
    assert body["ruleset_version"] and body["computed_at"].endswith("+00:00")
    assert body["steady_state"]["low"] == 373.0 and body["steady_state"]["high"] == 391.0
    assert body["measurement"] is None
    rules = [f["rule"] for f in body["flags"]]
    assert rules[:2] == ["full_acceptance", "repeat_loop"]
    assert {"headline_above_steady_state", "ladder_top_rung"} <= set(rules)
    assert all(set(f) == {"rule", "severity", "explanation", "evidence", "citation"} for f in body["flags"])
    cited = {c["label"]: c for c in body["citations"]}
    assert cited["steady state"]["value"] == 373.0 and cited["steady state"]["citation"].endswith("?q=373%20to%20391")
    assert cited["headline"]["value"] == 1004.9 and "/c/" in cited["headline"]["citation"]
    assert all(set(c) == {"label", "value", "citation"} for c in body["citations"])


def test_reaudit_that_changes_nothing_keeps_computed_at_and_etag(client, db):
    rid = _seed(db)
    first = client.get(f"/api/recipes/{rid}/quotable")
    with db.session() as s:
        audit_recipes(s, db.settings, [rid])
    again = client.get(f"/api/recipes/{rid}/quotable")
    assert again.json()["computed_at"] == first.json()["computed_at"]
    assert again.headers["etag"] == first.headers["etag"]


def test_measured_answer_names_its_measurement(client, db):
    rid = _seed(db)
    with db.session() as s:
        m = measurements.record(s, db.settings, None, recipe_id=rid, tps=352.4, non_repeating_prompts=True,
                                output_checked=True, n_runs=5, measured_at="2026-11-30T10:00:00Z")
    body = client.get(f"/api/recipes/{rid}/quotable").json()
    assert (body["basis"], body["quotable_tps"]) == ("measured", 352.4)
    ref = body["measurement"]
    assert (ref["id"], ref["tps"], ref["measured_at"]) == (m["id"], 352.4, "2026-11-30T10:00:00+00:00")
    assert ref["citation"].endswith(f"/api/measurements/{m['id']}")
    assert {"label": "measurement", "value": 352.4, "citation": ref["citation"]} in body["citations"]
    got = client.get(f"/api/measurements/{m['id']}")
    assert got.status_code == 200 and got.json()["measurement"]["tps"] == 352.4
    entries = client.get("/api/entries", params={"recipe_id": rid}).json()["entries"]
    measured = [e for e in entries if e["basis"] == "measured"]
    assert measured and all(e["measurement"]["id"] == m["id"] for e in measured)
    assert all(e["measurement"] is None for e in entries if e["basis"] != "measured")
    detail = client.get(f"/api/entries/{measured[0]['id']}").json()
    assert detail["measurement"]["citation"] == ref["citation"]
    missing = client.get("/api/measurements/999999")
    assert missing.status_code == 404 and missing.json()["ok"] is False


def test_prompt_processing_figure_is_not_quoted_as_decode(client, db, cli):
    ids = _llama_bench(db)
    pp = client.get(f"/api/recipes/{ids['pp512']}/quotable").json()
    assert (pp["quotable_tps"], pp["basis"], pp["phase"], pp["test"]) == (None, "none", "prefill", "pp512")
    assert "only decode figures" in pp["reason"] and pp["inflation_ratio"] is None
    tg = client.get(f"/api/recipes/{ids['tg128']}/quotable").json()
    assert (tg["basis"], tg["phase"], tg["quotable_tps"]) == ("headline", "decode", 152.3)
    r = cli("quote", "llama 8B")
    assert r.exit_code == 0, r.output
    blocks = r.output.strip().split("\n\n")
    headers = [b.splitlines()[0] for b in blocks]
    assert len(headers) == 2 and len(set(headers)) == 2, headers  # the two setups are told apart
    pp_block = next(b for b in blocks if "pp512" in b.splitlines()[0])
    assert "quotable:  none" in pp_block and "prefill" in pp_block.splitlines()[0]
    assert "11,842.61" not in next(line for line in pp_block.splitlines() if "quotable:" in line)


def test_unaudited_recipe_is_audited_on_first_read(client, db):
    rid = _seed(db, audit=False)
    assert client.get(f"/api/recipes/{rid}/quotable").json()["quotable_tps"] == 373.0
    with db.session() as s:
        assert s.scalar(select(Recipe.quotable_tps)) == 373.0


def test_unknown_recipe_is_404_with_hint(client):
    r = client.get("/api/recipes/r-000000000000/quotable")
    assert r.status_code == 404 and "caveat quote" in r.json()["error"]
    assert r.json() == {"ok": False, "error": r.json()["error"], "status": 404}


def test_quotable_listing_filters_whole_names_and_words(client, db):
    _seed(db)
    r = client.get("/api/quotable", params={"model": "glm-5.3-flash", "hardware": "rtx pro 6000 blackwell"})
    body = r.json()
    assert (body["ok"], body["count"], body["total"], body["next"]) == (True, 1, 1, None)
    assert set(body["recipes"][0]) == FIELDS - {"ok"}
    assert client.get("/api/quotable", params={"model": "glm-5.3"}).json()["count"] == 0  # whole names
    assert client.get("/api/quotable", params={"q": "glm rtx"}).json()["count"] == 1  # words anywhere
    assert client.get("/api/quotable", params={"engine": "vllm"}).json()["count"] == 0
    r = client.get("/api/quotable")
    assert r.status_code == 400 and "model=" in r.json()["error"]


def test_quotable_listing_pages_past_the_first_page(client, db):
    with db.session() as s:
        rows = [ParsedEntry(fields=dict(GLM_BASE, quantization=f"q{i}", headline_tps=100.0 + i),
                            quotes={"headline_tps": str(100 + i)}) for i in range(5)]
        _, _, summary = store(s, rows)
        audit_entries(s, db.settings, summary.entry_ids)
    seen, url = [], "/api/quotable?q=glm&limit=2"
    while url:
        body = client.get(url).json()
        assert body["total"] == 5 and body["limit"] == 2
        seen += [r["recipe_id"] for r in body["recipes"]]
        url = body["next"]
    assert len(seen) == 5 == len(set(seen))


def test_cli_quote_text_and_json(cli, db):
    rid = _seed(db)
    r = cli("quote", "GLM-5.3-Flash rtx")
    assert r.exit_code == 0, r.output
    assert "quotable:  373 tok/s  (basis: steady_state)" in r.output
    assert "[critical] full_acceptance" in r.output and "2.69x" in r.output
    for query in (rid, "GLM-5.3-Flash rtx"):
        r = cli("quote", query, "--json")
        body = json.loads(r.output)
        assert (body["ok"], body["count"]) == (True, 1) and body["recipes"][0]["quotable_tps"] == 373.0
        assert set(body["recipes"][0]) == FIELDS - {"ok"}
    r = cli("quote", "nonexistent-model")
    assert r.exit_code == 1 and "No recipe matches" in r.output
    r = cli("quote", "nonexistent-model", "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["ok"] is False


def test_cli_audit_all(cli, db):
    _seed(db, audit=False)
    r = cli("audit", "--all")
    assert r.exit_code == 0 and "audited 6 entries in 1 recipes" in r.output
    assert cli("audit").exit_code == 1
    r = cli("audit", "r-nope")
    assert r.exit_code == 1 and "r-nope" in r.output


def test_concurrent_fast_path_reads_each_get_their_own_answer(live_app):
    """Requests arriving together are read in batches (one query for many recipes) off the event loop:
    each still gets its own recipe's answer, and an unknown recipe its 404."""
    import asyncio

    import httpx

    app, base = live_app
    db = app.state.db
    with db.session() as s:
        rows = [ParsedEntry(fields=dict(GLM_BASE, quantization=f"q{i}", headline_tps=100.0 + i),
                            quotes={"headline_tps": str(100 + i)}) for i in range(12)]
        _, _, summary = store(s, rows)
        audit_entries(s, db.settings, summary.entry_ids)
        ids = {r.recipe_id: r.quotable_tps for r in s.scalars(select(Recipe))}
    targets = list(ids) * 8 + ["r-000000000000"] * 4

    async def run():
        async with httpx.AsyncClient(base_url=base) as client:
            return await asyncio.gather(*(client.get(f"/api/recipes/{rid}/quotable") for rid in targets))

    answers = asyncio.run(run())
    for rid, r in zip(targets, answers):
        if rid == "r-000000000000":
            assert r.status_code == 404 and r.json()["ok"] is False
        else:
            assert r.status_code == 200 and r.json()["recipe_id"] == rid and r.json()["quotable_tps"] == ids[rid]
