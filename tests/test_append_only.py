"""Issue 24, item 5: every table documented as append-only (its model's docstring says so: decisions,
access_events, change_events) refuses, in the database itself, UPDATE, DELETE, an upsert, SQLite's
INSERT OR REPLACE / REPLACE (which deletes the old row without firing delete triggers) and
PostgreSQL's TRUNCATE; on SQLite and on PostgreSQL. A withdrawal cannot be turned into a
reinstatement by rewriting its row."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from app.models import AccessEvent, Correction, Base, ChangeEvent, Decision, utcnow
from tests.audit_data import make_snapshot

APPEND_ONLY = sorted(m.class_.__tablename__ for m in Base.registry.mappers
                     if "append-only" in (m.class_.__doc__ or "").lower())


def test_the_append_only_tables_are_the_documented_ones():
    assert APPEND_ONLY == ["access_events", "change_events", "corrections", "decisions"]


def _seed(db, table: str) -> dict:
    """One row of ``table`` (decisions through a reviewer and a flag); its column values."""
    with db.session() as s:
        snap = make_snapshot(s)
        if table == "access_events":
            row = AccessEvent(snapshot_id=snap.id, citation_id=snap.citation_id, action="withdraw",
                              reason="asked to", actor="rev", created_at=utcnow())
        elif table == "corrections":
            row = Correction(kind="fix", citation_id=snap.citation_id, record_id=snap.record_id,
                             selector={"exact": "1.0", "prefix": "", "suffix": ""}, fields={"model": "X"},
                             reason="the row names the model", actor="rev", created_at=utcnow())
        elif table == "change_events":
            row = ChangeEvent(kind="changed", scope="entry", new_snapshot_id=snap.id, detail="x", cited=False,
                              created_at=utcnow())
        else:
            from tests.test_decisions import _flag, _seed as seed_decisions
            from app.accounts import auth
            from app.audit import decisions

            s.commit()
            seed_decisions(db)
            with db.session() as s2:
                decisions.decide(s2, auth.get_user(s2, "rev"), _flag(s2, "full_acceptance").id, "dismiss",
                                 "seen on the page", settings=db.settings)
            row = None
        if row is not None:
            s.add(row)
    model = {"access_events": AccessEvent, "change_events": ChangeEvent, "corrections": Correction,
             "decisions": Decision}[table]
    with db.Session() as s:
        got = s.scalars(select(model)).one()
        return {c.key: getattr(got, c.key) for c in model.__table__.columns}


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_an_append_only_table_cannot_be_rewritten(backend_db, table):
    row = _seed(backend_db, table)
    before = dict(row)
    text_col = {"access_events": "action", "change_events": "detail", "corrections": "reason", "decisions": "note"}[table]
    new_value = "reinstate" if table == "access_events" else "rewritten"
    changed = dict(row, **{text_col: new_value})
    cols = list(changed)
    names, params = ", ".join(cols), ", ".join(f":{c}" for c in cols)
    statements = [f"UPDATE {table} SET {text_col} = '{new_value}'", f"DELETE FROM {table}",
                  f"INSERT INTO {table} ({names}) VALUES ({params}) ON CONFLICT (id) DO UPDATE SET {text_col} = "
                  f"'{new_value}'"]
    if backend_db.engine.dialect.name == "sqlite":
        statements += [f"INSERT OR REPLACE INTO {table} ({names}) VALUES ({params})",
                       f"REPLACE INTO {table} ({names}) VALUES ({params})"]
    else:
        statements += [f"TRUNCATE {table} CASCADE", f"TRUNCATE {table} RESTART IDENTITY CASCADE"]
    for stmt in statements:
        with pytest.raises(DBAPIError, match="append-only"):
            with backend_db.engine.begin() as conn:
                conn.execute(text(stmt), {k: _param(v) for k, v in changed.items()})
    with backend_db.engine.connect() as conn:
        rows = conn.execute(text(f"SELECT id, {text_col} FROM {table}")).all()
    assert rows == [(before["id"], before[text_col])], stmt
    # appending is still allowed
    with backend_db.engine.begin() as conn:
        conn.execute(text(f"INSERT INTO {table} ({names}) VALUES ({params})"),
                     {k: _param(v) for k, v in dict(changed, id=before["id"] + 1).items()})


def _param(v):
    import json

    return json.dumps(v) if isinstance(v, (dict, list)) else v
