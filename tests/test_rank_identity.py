"""Issue 29 item 1: a rank, # or position column is never part of a row's identity; `source add --key`
names key columns for unusual boards; stored recipes are migrated."""

from __future__ import annotations

import json

from alembic import command
from sqlalchemy import select

from app.claims.identity import entry_keys, recipe_id_for, recipe_key
from app.db import Database, alembic_config
from app.models import ChangeEvent, Entry, EntryVersion, Recipe, Snapshot

BOARD = """# Speeds

| Rank | Model | GPU | Engine | tok/s |
|---|---|---|---|---|
| {a} | Qwen3-32B | RTX 4090 | vLLM | 55.1 |
| {b} | Qwen3-32B | RTX 3090 | llama.cpp | 40.2 |
"""


def test_swapped_ranks_keep_entries_and_recipes_and_make_change_events(cli, server, settings, client):
    url = server.route("/board.md", BOARD.format(a=1, b=2), content_type="text/markdown")
    assert cli("source", "add", "board", url, "--kind", "markdown").exit_code == 0
    assert cli("crawl", "board").exit_code == 0
    server.route("/board.md", BOARD.format(a=2, b=1), content_type="text/markdown")
    r = cli("crawl", "board")
    assert r.exit_code == 0, r.output
    r = cli("quote", "Qwen3-32B", "--json")
    body = json.loads(r.output)
    assert body["count"] == 2, [x.get("recipe_id") for x in body["recipes"]]
    db = Database(settings)
    with db.Session() as s:
        entries = s.scalars(select(Entry)).all()
        assert len(entries) == 2 and not any(e.gone for e in entries)
        events = s.scalars(select(ChangeEvent).where(ChangeEvent.kind == "changed")).all()
        moved = {tuple(e.changes["position"]) for e in events if "position" in (e.changes or {})}
        assert moved == {("1", "2"), ("2", "1")}
    db.dispose()
    res = client.get("/api/quotable", params={"q": "qwen3-32b"}).json()
    assert res["total"] == 2


def test_rank_labels_and_rank_columns_are_never_identity():
    a = {"model": "M", "hardware": "H", "label": "1", "headline_tps": 5}
    b = {**a, "label": "2"}
    assert recipe_key(a) == recipe_key(b) and "label" not in recipe_key(a)
    assert entry_keys([a]) == entry_keys([b])
    named = {"model": "M", "hardware": "H", "label": "fp8 KV"}
    assert recipe_key(named)["label"] == "fp8 kv"
    # an unusual board: the Run column tells rows apart
    r1 = {"model": "M", "hardware": "H", "_extra": {"Run": "alpha"}}
    r2 = {"model": "M", "hardware": "H", "_extra": {"Run": "beta"}}
    assert entry_keys([r1, r2]) == [entry_keys([r1])[0], entry_keys([r1])[0][:-1] + "1"]
    k1, k2 = entry_keys([r1, r2], ["run"])
    assert k1.endswith(":0") and k2.endswith(":0") and k1 != k2
    assert recipe_key(r1, ["Run"]) != recipe_key(r2, ["Run"])


def test_source_add_key_is_stored_and_listed(cli):
    r = cli("source", "add", "odd", "https://example.org/odd", "--key", "Submission", "--key", "Run")
    assert r.exit_code == 0, r.output
    assert "rows keyed by Submission, Run" in r.output
    body = json.loads(cli("source", "list", "--json").output)
    assert body["sources"][0]["key_columns"] == ["Submission", "Run"]


def test_migration_recomputes_rank_split_recipes(settings):
    db = Database(settings)
    cfg = alembic_config(db.url)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "20261202_0010u")
    old_key = {"model": "qwen3-32b", "hardware": "rtx 4090", "label": "1"}
    with db.engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO snapshots (id, citation_id, url, surt, timestamp, captured_at, status, record_type, "
            "warc_file, offset, length, record_id, origin, fixity, access, sha256) VALUES (1, 'AAAA-BBBB', 'https://e.org/', "
            "'org,e)/', '20261201000000', '2026-12-01 00:00:00', 200, 'response', 'x.warc.gz', 0, 1, '<urn:x>', "
            "'capture', 'unchecked', 'public', 'x')")
        for i, (rank, gone) in enumerate((("1", True), ("2", False)), start=1):
            rid = recipe_id_for({**old_key, "label": rank})
            conn.exec_driver_sql("INSERT INTO recipes (recipe_id, key, model, hardware, created_at) VALUES "
                                 f"('{rid}', '{{}}', 'Qwen3-32B', 'RTX 4090', '2026-12-01')")
            conn.exec_driver_sql(
                "INSERT INTO entries (id, source_id, entry_key, recipe_id, current_version_id, gone, created_at, "
                f"updated_at, model, severity_rank, flag_count, open_flag_count, decision_status) VALUES ({i}, NULL, "
                f"'old{i}:0', '{rid}', {i}, {int(gone)}, '2026-12-01', '2026-12-01', 'Qwen3-32B', 0, 0, 0, 'none')")
            fields = json.dumps({"model": "Qwen3-32B", "hardware": "RTX 4090", "label": rank, "headline_tps": 50.0})
            conn.exec_driver_sql(
                "INSERT INTO entry_versions (id, entry_id, snapshot_id, version_no, fields, provenance, created_at) "
                f"VALUES ({i}, {i}, 1, 1, '{fields}', '{{}}', '2026-12-01')")
    db.upgrade()
    with db.Session() as s:
        rows = s.execute(select(Entry.id, Entry.entry_key, Entry.recipe_id).order_by(Entry.id)).all()
        want = recipe_id_for(recipe_key({"model": "Qwen3-32B", "hardware": "RTX 4090", "headline_tps": 50.0}))
        assert {r.recipe_id for r in rows} == {want}
        assert s.scalar(select(Recipe).where(Recipe.recipe_id == want)) is not None
        keys = {r.id: r.entry_key for r in rows}
        assert keys[2].endswith(":0") and keys[1].endswith(":1")    # the entry still on the page comes first
        assert s.scalar(select(EntryVersion.id).where(EntryVersion.entry_id == 1)) == 1
        assert s.scalar(select(Snapshot.id)) == 1
    db.dispose()
