"""Migration 20261201_0009 (issue 13): citation URLs stored with a host before are rewritten host-free,
so they are built from CAVEAT_BASE_URL (or the request origin) when served; other URLs are kept."""

from __future__ import annotations

from alembic import command
from sqlalchemy import column, insert, select, table

from app.db import Database, alembic_config
from app.models import Flag


def test_stored_citation_urls_lose_their_host(backend_settings):
    db = Database(backend_settings)
    cfg = alembic_config(db.url)
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "20261201_0008")
    with db.Session() as s:
        # the row as the schema at 20261201_0008 has it (later columns do not exist yet)
        now = Flag.__table__.c.created_at.default.arg(None) if callable(Flag.__table__.c.created_at.default.arg) else None
        # (a bare table of those columns: the model's later columns' defaults must not be sent)
        old = table("entries", *(column(c) for c in ("id", "entry_key", "model", "gone", "created_at", "updated_at",
                                                       "severity_rank", "flag_count", "open_flag_count",
                                                       "decision_status")))
        entry_id = s.execute(insert(old).values(entry_key="k", model="m", gone=False, created_at=now,
                                                updated_at=now, severity_rank=0, flag_count=0,
                                                open_flag_count=0, decision_status="none")
                             .returning(old.c.id)).scalar_one()
        s.add(Flag(entry_id=entry_id, rule="r", severity="high", explanation="x", ruleset_version="v",
                   citation="http://127.0.0.1:8000/c/ABCD-EFGH?q=1%2C004.9",
                   evidence={"numbers": {}, "quotes": [
                       {"field": "headline_tps", "text": "1,004.9", "citation": "http://127.0.0.1:8100/c/ABCD-EFGH?q=1"},
                       {"field": "notes", "text": "n", "citation": "https://example.org/not-ours"}]}))
        s.commit()
    db.upgrade()
    with db.Session() as s:
        f = s.scalar(select(Flag))
        assert f.citation == "/c/ABCD-EFGH?q=1%2C004.9"
        assert [q["citation"] for q in f.evidence["quotes"]] == ["/c/ABCD-EFGH?q=1", "https://example.org/not-ours"]
    db.dispose()
