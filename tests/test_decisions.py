"""Reviewer decisions (service, API with token and with cookie + CSRF), the audit log, measurements."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.errors import BadRequest, NotFound
from app.models import Decision, Entry, Flag, Recipe
from app.accounts import auth
from app.audit import decisions
from app.audit.engine import audit_entries
from tests.audit_data import entry_by_draft, glm_entries, store


def _seed(db):
    with db.session() as s:
        _, _, summary = store(s, glm_entries())
        audit_entries(s, db.settings, summary.entry_ids)
        auth.create_user(s, "rev", "reviewer-pass")
        token = auth.create_token(s, "rev", "tests")
        return token, s.scalar(select(Recipe.recipe_id))


def _flag(s, rule, k=64):
    e = entry_by_draft(s, k)
    return s.scalar(select(Flag).where(Flag.entry_id == e.id, Flag.rule == rule))


def test_dismissals_change_working_number_and_reaudit_keeps_them(backend_db):
    token, rid = _seed(backend_db)
    with backend_db.session() as s:
        user = auth.get_user(s, "rev")
        e = entry_by_draft(s, 12)  # 443.1, judged against the recipe's 373-391 steady state
        for f in s.scalars(select(Flag).where(Flag.entry_id == e.id)):
            decisions.decide(s, user, f.id, "dismiss", "checked against the page", settings=backend_db.settings)
        assert e.decision_status == "decided" and e.open_flag_count == 0 and e.severity_rank == 0
        with pytest.raises(BadRequest, match="note"):
            decisions.decide(s, user, f.id, "dismiss", "  ", settings=backend_db.settings)
        with pytest.raises(BadRequest, match="confirm"):
            decisions.decide(s, user, f.id, "ignore", "x", settings=backend_db.settings)
        with pytest.raises(NotFound):
            decisions.decide(s, user, 999999, "dismiss", "x", settings=backend_db.settings)
    with backend_db.session() as s:
        audit_entries(s, backend_db.settings, [entry_by_draft(s, 12).id])
        assert all(f.status == "dismissed" for f in s.scalars(select(Flag).where(
            Flag.entry_id == entry_by_draft(s, 12).id)))
        assert len(decisions.list_decisions(s, entry_id=entry_by_draft(s, 12).id)) >= 2


def test_dismissing_blocking_flags_lets_headline_count(db):
    from scrapers.fields import ParsedEntry

    with db.session() as s:
        _, _, summary = store(s, [ParsedEntry(fields=dict(model="M", hardware="H", engine="E", engine_version="1.0",
                                                         headline_tps=90.0, headline_label="Fastest t/s",
                                                         spread=1.0, n_runs=5, gen_tokens=512,
                                                         context_length=32768))])
        audit_entries(s, db.settings, summary.entry_ids)
        e = s.get(Entry, summary.entry_ids[0])
        assert e.basis == "none"
        user = auth.create_user(s, "rev", "reviewer-pass")
        best = s.scalar(select(Flag).where(Flag.rule == "best_of"))
        decisions.decide(s, user, best.id, "dismiss", "label only; the value is a mean", settings=db.settings)
        assert (e.working_tps, e.basis) == (90.0, "headline")
        decisions.decide(s, user, best.id, "confirm", "on second look it is a max", settings=db.settings)
        assert e.basis == "none"
        assert [d["action"] for d in decisions.list_decisions(s)] == ["confirm", "dismiss"]


def test_api_decision_with_bearer_token(client, db):
    token, rid = _seed(db)
    with db.session() as s:
        fid = _flag(s, "clocks_or_power").id
    r = client.post(f"/api/flags/{fid}/decision", json={"action": "dismiss", "note": "stock clocks per vendor"})
    assert r.status_code == 401
    hdr = {"Authorization": f"Bearer {token}"}
    r = client.post(f"/api/flags/{fid}/decision", json={"action": "dismiss", "note": "stock clocks"}, headers=hdr)
    assert r.status_code == 200, r.text
    assert r.json()["decision"]["flag_status"] == "dismissed" and r.json()["decision"]["user"] == "rev"
    r = client.post(f"/api/flags/{fid}/decision", json={"action": "dismiss"}, headers=hdr)
    assert r.status_code == 400 and "note" in r.json()["error"]
    log = client.get("/api/decisions").json()
    assert log["count"] == 1 and log["decisions"][0]["note"] == "stock clocks"
    with db.session() as s:
        assert s.scalar(select(Decision.rule)) == "clocks_or_power"


def test_api_form_decision_needs_csrf_with_cookie(app, client, db):
    _seed(db)
    with db.session() as s:
        fid = _flag(s, "short_shape").id
        user = auth.get_user(s, "rev")
        cookie = auth.start_session(s, db.settings, user)
    client.cookies.set(auth.SESSION_COOKIE, cookie)
    form = {"action": "confirm", "note": "8k context only"}
    r = client.post(f"/api/flags/{fid}/decision", data=form)
    assert r.status_code == 403 and "CSRF" in r.json()["error"]

    from starlette.requests import Request

    scope = {"type": "http", "app": app, "headers": [(b"cookie", f"{auth.SESSION_COOKIE}={cookie}".encode())]}
    token = auth.csrf_token(Request(scope))
    r = client.post(f"/api/flags/{fid}/decision", data=dict(form, csrf_token=token, next="/entries/1"),
                    follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/entries/1"


def test_measurement_api_moves_working_number(client, db):
    token, rid = _seed(db)
    hdr = {"Authorization": f"Bearer {token}"}
    body = {"recipe_id": rid, "tps": 352.4, "non_repeating_prompts": True, "output_checked": True, "n_runs": 5}
    assert client.post("/api/measurements", json=body).status_code == 401
    r = client.post("/api/measurements", json=body, headers=hdr)
    assert r.status_code == 201 and r.json()["measurement"]["counts_as_measured"]
    q = client.get(f"/api/recipes/{rid}/quotable").json()
    assert (q["quotable_tps"], q["basis"]) == (352.4, "measured")
    r = client.post("/api/measurements", json=dict(body, tps=-1), headers=hdr)
    assert r.status_code == 400
    r = client.post("/api/measurements", json=dict(body, recipe_id="r-nope"), headers=hdr)
    assert r.status_code == 404
    unchecked = dict(body, tps=100.0, output_checked=False)
    assert client.post("/api/measurements", json=unchecked, headers=hdr).json()["measurement"][
        "counts_as_measured"] is False
    assert client.get(f"/api/recipes/{rid}/quotable").json()["quotable_tps"] == 352.4
    assert len(client.get(f"/api/recipes/{rid}/measurements").json()["measurements"]) == 2


def test_cli_measurement_add(cli, db):
    _, rid = _seed(db)
    r = cli("measurement", "add", rid, "360", "--non-repeating", "--output-checked", "--user", "rev")
    assert r.exit_code == 0 and "counts as the measured basis" in r.output
    r = cli("measurement", "add", rid, "200")
    assert "does not count" in r.output
    with db.session() as s:
        assert s.scalar(select(Recipe.basis)) == "measured"


def test_audit_log_is_append_only_in_the_database(backend_db):
    """The database itself (a trigger from migration 20261201_0002) refuses to change or delete a decision."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    _seed(backend_db)
    with backend_db.session() as s:
        user = auth.get_user(s, "rev")
        flag = _flag(s, "full_acceptance")
        decisions.decide(s, user, flag.id, "dismiss", "seen on the page", settings=backend_db.settings)
    for stmt in ("UPDATE decisions SET note = 'rewritten'", "DELETE FROM decisions"):
        with pytest.raises(DBAPIError, match="append-only"):
            with backend_db.engine.begin() as conn:
                conn.execute(text(stmt))
    with backend_db.session() as s:
        kept = s.scalars(select(Decision)).all()
        assert [(d.action, d.note) for d in kept] == [("dismiss", "seen on the page")]


def test_audit_log_cannot_be_replaced_or_truncated(backend_db):
    """SQLite's INSERT OR REPLACE (which fires no delete trigger) and PostgreSQL's TRUNCATE are refused too
    (migration 20261201_0004), and so is an upsert that would update a decision."""
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    _seed(backend_db)
    with backend_db.session() as s:
        user = auth.get_user(s, "rev")
        flag = _flag(s, "full_acceptance")
        decisions.decide(s, user, flag.id, "dismiss", "seen on the page", settings=backend_db.settings)
    with backend_db.Session() as s:
        d = s.scalars(select(Decision)).one()
        cols = [c.key for c in Decision.__table__.columns]
        row = {c: getattr(d, c) for c in cols}
    row["note"] = "rewritten"
    names = ", ".join(cols)
    params = ", ".join(f":{c}" for c in cols)
    if backend_db.engine.dialect.name == "sqlite":
        statements = [f"INSERT OR REPLACE INTO decisions ({names}) VALUES ({params})",
                      f"REPLACE INTO decisions ({names}) VALUES ({params})",
                      f"INSERT INTO decisions ({names}) VALUES ({params}) ON CONFLICT(id) DO UPDATE SET note = 'x'"]
    else:
        statements = ["TRUNCATE decisions CASCADE",
                      f"INSERT INTO decisions ({names}) VALUES ({params}) ON CONFLICT (id) DO UPDATE SET note = 'x'"]
    for stmt in statements:
        with pytest.raises(DBAPIError, match="append-only"):
            with backend_db.engine.begin() as conn:
                conn.execute(text(stmt), row)
    with backend_db.session() as s:
        kept = s.scalars(select(Decision)).all()
        assert [(d.action, d.note) for d in kept] == [("dismiss", "seen on the page")]
