"""Model keys (issue 26 item 4): one model however a page spells it, for recipe grouping, `caveat quote NAME`
and /api/quotable; a migration merges the recipes stored before, keeping entries, measurements and ids."""

from __future__ import annotations

import json

import pytest
from alembic import command
from sqlalchemy import select

from app.audit.quotable import get_quotable
from app.claims.identity import model_key, recipe_id_for, recipe_key, split_model
from app.db import Database, alembic_config
from app.models import Entry, Measurement, Recipe

SPELLINGS = ("Qwen3-30B-A3B", "qwen3 30B.A3B", "Qwen/Qwen3-30B-A3B-Instruct")


@pytest.mark.parametrize("name", SPELLINGS)
def test_three_spellings_are_one_model(name):
    assert model_key(name) == "qwen3-30b-a3b"


@pytest.mark.parametrize("name, key, quant", [
    ("Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b-instruct-2507", None),   # a dated re-release: kept apart
    ("Qwen3-30B-A3B-Base", "qwen3-30b-a3b-base", None),                     # the base model, named as such
    ("Llama-3.1-8B-Instruct-Q4_K_M", "llama-3.1-8b", "q4_k_m"),
    ("meta-llama/Llama-3.3-70B-Instruct-AWQ", "llama-3.3-70b", "awq"),
    ("Qwen2.5-14B-Instruct-GGUF", "qwen2.5-14b", None),                     # a file format, not a precision
    ("Llama 3.1 70B exl2 4.0bpw", "llama-3.1-70b", "4.0bpw"),
    ("gemma-3-27b-it", "gemma-3-27b", None),
    ("Mistral-7B-v0.3", "mistral-7b-v0.3", None),                           # a version's dot stays
    ("GLM-5.3-Flash", "glm-5.3-flash", None),
    ("Q4_K_M", "q4-k-m", None),                                             # a name that is only a quant stays
])
def test_what_a_model_key_keeps_and_drops(name, key, quant):
    assert split_model(name) == (key, quant)


def test_a_quant_tail_is_the_recipe_quantization_unless_the_row_states_one():
    base = {"hardware": "RTX 4090", "engine": "llama.cpp"}
    tail = recipe_key({**base, "model": "Llama-3.1-8B-Instruct-Q4_K_M"})
    stated = recipe_key({**base, "model": "Llama 3.1 8B", "quantization": "Q4_K_M"})
    assert tail == stated and tail["quantization"] == "q4km"
    other = recipe_key({**base, "model": "Llama-3.1-8B-Q8_0"})
    assert recipe_id_for(other) != recipe_id_for(tail)                      # another precision, another recipe
    assert recipe_key({**base, "model": "Llama-3.1-8B-Q8_0", "quantization": "FP8"})["quantization"] == "fp8"


def _board(model: str, tps: float) -> str:
    return f"# Decode speed\n\n| Model | GPU | Engine | tok/s |\n| --- | --- | --- | --- |\n| {model} | RTX 4090 | vLLM | {tps} |\n"


def test_three_spellings_reach_one_recipe_through_the_cli_and_the_api(cli, server, db, client):
    for i, (name, tps) in enumerate(zip(SPELLINGS, (150.5, 142.0, 147.25))):
        url = server.route(f"/b{i}.md", _board(name, tps), content_type="text/markdown")
        assert cli("source", "add", f"b{i}", url, "--kind", "markdown").exit_code == 0
    assert cli("crawl").exit_code == 0
    with db.Session() as s:
        entries = list(s.scalars(select(Entry).where(Entry.status == "read")))
        assert sorted(e.model for e in entries) == sorted(SPELLINGS)
        rids = {e.recipe_id for e in entries}
        assert len(rids) == 1
        rid = rids.pop()
        assert s.scalar(select(Recipe.model_key).where(Recipe.recipe_id == rid)) == "qwen3-30b-a3b"
    for name in SPELLINGS + ("QWEN3_30B_A3B",):
        r = cli("quote", name, "--json")
        assert r.exit_code == 0, r.output
        got = json.loads(r.stdout)
        assert [a["recipe_id"] for a in got["recipes"]] == [rid], name
        assert got["recipes"][0]["headline_tps"] == 150.5
        api = client.get("/api/quotable", params={"model": name}).json()
        assert api["total"] == 1 and api["recipes"][0]["recipe_id"] == rid, name
        words = client.get("/api/quotable", params={"q": name}).json()
        assert [a["recipe_id"] for a in words["recipes"]] == [rid], name
    text = cli("quote", "qwen3 30B.A3B").output
    assert rid in text
    # another model is not reached by these names
    assert client.get("/api/quotable", params={"model": "Qwen3-30B-A3B-Base"}).json()["total"] == 0
    assert cli("quote", "Qwen3-30B-A3B-Base").exit_code != 0


def _old_state(conn) -> None:
    conn.exec_driver_sql(
        "INSERT INTO snapshots (id, citation_id, url, surt, timestamp, captured_at, status, record_type, "
        "warc_file, offset, length, record_id, origin, fixity, access, sha256) VALUES (1, 'AAAA-BBBB', 'https://e.org/', "
        "'org,e)/', '20261201000000', '2026-12-01 00:00:00', 200, 'response', 'x.warc.gz', 0, 1, '<urn:x>', "
        "'capture', 'unchecked', 'public', 'x')")
    for i, (name, rid, tps) in enumerate(((SPELLINGS[0], "r-aaaaaaaaaaaa", 150.5),
                                          (SPELLINGS[2], "r-bbbbbbbbbbbb", 142.0)), start=1):
        conn.exec_driver_sql("INSERT INTO recipes (recipe_id, key, model, hardware, created_at, quotable) VALUES "
                             f"('{rid}', '{{}}', '{name}', 'RTX 4090', '2026-12-01', '{{\"stale\": true}}')")
        conn.exec_driver_sql(
            "INSERT INTO entries (id, source_id, entry_key, recipe_id, current_version_id, gone, created_at, "
            f"updated_at, model, headline_tps, severity_rank, flag_count, open_flag_count, decision_status) VALUES "
            f"({i}, NULL, 'old{i}:0', '{rid}', {i}, 0, '2026-12-01', '2026-12-01', '{name}', {tps}, 0, 0, 0, 'none')")
        fields = json.dumps({"model": name, "hardware": "RTX 4090", "headline_tps": tps})
        conn.exec_driver_sql(
            "INSERT INTO entry_versions (id, entry_id, snapshot_id, version_no, fields, provenance, created_at) "
            f"VALUES ({i}, {i}, 1, 1, '{fields}', '{{}}', '2026-12-01')")
    conn.exec_driver_sql(
        "INSERT INTO measurements (id, recipe_id, tps, non_repeating_prompts, output_checked, measured_at, created_at, "
        "origin, verified) VALUES (1, 'r-bbbbbbbbbbbb', 120.0, 1, 1, '2026-12-01', '2026-12-01', 'manual', 1)")


def test_the_migration_merges_recipes_that_now_share_a_key(settings):
    db = Database(settings)
    cfg = alembic_config(db.url)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "20261206_0011r")
    with db.engine.begin() as conn:
        _old_state(conn)
    db.upgrade()
    want = recipe_id_for(recipe_key({"model": SPELLINGS[0], "hardware": "RTX 4090"}))
    with db.Session() as s:
        assert {e.recipe_id for e in s.scalars(select(Entry))} == {want}      # both entries, kept, in one recipe
        merged = {r.recipe_id: r for r in s.scalars(select(Recipe))}
        assert merged["r-aaaaaaaaaaaa"].merged_into == want and merged["r-bbbbbbbbbbbb"].merged_into == want
        assert merged[want].model_key == "qwen3-30b-a3b" and merged["r-aaaaaaaaaaaa"].quotable is None
        assert s.scalar(select(Measurement.recipe_id)) == want                 # the measurement moved with it
        # an old id still answers: with the merged recipe's answer, the measurement counted
        answer = get_quotable(s, settings, "r-bbbbbbbbbbbb")
        assert answer["recipe_id"] == want and answer["basis"] == "measured" and answer["quotable_tps"] == 120.0
        s.commit()
    db.dispose()
