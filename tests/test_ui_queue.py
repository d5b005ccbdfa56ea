"""The queue service on SQLite and PostgreSQL: order (NULL ratios last on both), filters, counts, and
counts that follow a decision at once (the count cache is keyed on the data's change markers)."""

from __future__ import annotations

import pytest

from app.models import Entry, Flag, User
from app.accounts import auth
from app.audit.engine import audit_entries
from app.audit.decisions import decide
from app.audit.queue import QueueFilters, clear_cache, filter_link, review_queue
from app.errors import BadRequest
from scrapers.fields import ParsedEntry
from tests.audit_data import glm_entries, make_snapshot, make_source, store


@pytest.fixture
def seeded(backend_db, backend_settings):
    clear_cache()
    with backend_db.session() as s:
        _, _, glm = store(s, glm_entries())
        extra = [
            ParsedEntry(fields=dict(model="Peaky", hardware="RTX 4090", headline_tps=250.0, notes="peak of 5 runs"),
                        quotes={"headline_tps": "250", "notes": "peak of 5 runs"}),
        ]
        _, _, other = store(s, extra, source=make_source(s, "other-board"),
                           snapshot=make_snapshot(s, "https://leaderboard.test/other"))
        audit_entries(s, backend_settings, glm.entry_ids + other.entry_ids)
        user = auth.create_user(s, "rev", "long enough password")
        return {"glm": glm.entry_ids, "peaky": other.entry_ids[0], "user_id": user.id}


def q(db, settings, **kw):
    with db.session() as s:
        return review_queue(s, settings, QueueFilters(**kw))


def test_order_and_filters_on_both_backends(backend_db, backend_settings, seeded):
    data = q(backend_db, backend_settings)
    rows = data["entries"]
    assert rows[0]["model"] == "GLM-5.3-Flash" and rows[0]["severity"] == "critical"
    ranks = [{"critical": 4, "high": 3, "medium": 2, "low": 1}.get(r["severity"], 0) for r in rows]
    assert ranks == sorted(ranks, reverse=True)
    by_ratio = q(backend_db, backend_settings, sort="inflation")["entries"]
    ratios = [r["inflation_ratio"] for r in by_ratio]
    known = [x for x in ratios if x is not None]
    assert known == sorted(known, reverse=True)
    assert ratios[:len(known)] == known  # entries without a ratio come last, on SQLite and on PostgreSQL
    peaky = q(backend_db, backend_settings, model="Peaky")
    assert [r["id"] for r in peaky["entries"]] == [seeded["peaky"]] and peaky["total"] == 1
    assert q(backend_db, backend_settings, rule="best_of", model="Peaky")["total"] == 1
    assert q(backend_db, backend_settings, rule="ladder_top_rung")["total"] == 1
    with pytest.raises(BadRequest):
        q(backend_db, backend_settings, decision="maybe")


def test_counts_follow_a_decision_at_once(backend_db, backend_settings, seeded):
    before = q(backend_db, backend_settings, model="Peaky")
    assert before["counts"]["decision"] == [{"value": "pending", "count": 1}]
    with backend_db.session() as s:
        user = s.get(User, seeded["user_id"])
        for flag in s.query(Flag).filter(Flag.entry_id == seeded["peaky"], Flag.active.is_(True)).all():
            decide(s, user, flag.id, "dismiss", "checked by hand", settings=backend_settings)
    after = q(backend_db, backend_settings, model="Peaky")
    assert after["counts"]["decision"] == [{"value": "decided", "count": 1}]
    assert after["entries"][0]["open_flag_count"] == 0
    assert {"value": "none", "count": 1} in after["counts"]["severity"]
    with backend_db.session() as s:
        assert s.get(Entry, seeded["peaky"]).decision_status == "decided"


def test_filter_links_keep_other_filters_and_reset_the_page():
    f = QueueFilters(severity="high", source="board", page=3)
    assert filter_link(f, rule="best_of") == "/queue?severity=high&rule=best_of&source=board"
    assert filter_link(f, ".json", severity=None) == "/queue.json?source=board"
    assert filter_link(f, page=4) == "/queue?severity=high&source=board&page=4"
    assert filter_link(QueueFilters(), sort="inflation") == "/queue?sort=inflation"


@pytest.mark.parametrize("filters", [{}, {"severity": "high"}, {"model": "Peaky"}, {"rule": "best_of"},
                                     {"severity": "high", "decision": "pending"},
                                     {"source": "other-board", "model": "Peaky", "rule": "best_of"}])
def test_counts_match_a_brute_force_count(db, settings, filters):
    """Every filter's counts equal a count over the rows, applying all the *other* filters."""
    clear_cache()
    with db.session() as s:
        _, _, glm = store(s, glm_entries())
        _, _, other = store(s, [ParsedEntry(fields=dict(model="Peaky", hardware="x", headline_tps=250.0,
                                                        notes="peak of 5 runs"),
                                            quotes={"headline_tps": "250", "notes": "peak of 5 runs"})],
                            source=make_source(s, "other-board"), snapshot=make_snapshot(s, "https://o.test/"))
        audit_entries(s, settings, glm.entry_ids + other.entry_ids)
    with db.session() as s:
        rows = []
        for e in s.query(Entry).filter(Entry.flag_count > 0, Entry.gone.is_(False)):
            rules = {f.rule for f in s.query(Flag).filter(Flag.entry_id == e.id, Flag.active.is_(True))}
            src = "other-board" if e.model == "Peaky" else "board"
            rows.append({"severity": e.max_severity or "none", "decision": e.decision_status, "source": src,
                         "model": e.model, "rules": rules})
        data = review_queue(s, settings, QueueFilters(**filters))

    def passes(r, skip):
        for k, v in filters.items():
            if k == skip:
                continue
            if (k == "rule" and v not in r["rules"]) or (k != "rule" and r[k] != v):
                return False
        return True

    for facet in ("severity", "decision", "source", "model"):
        want: dict = {}
        for r in rows:
            if passes(r, facet):
                want[r[facet]] = want.get(r[facet], 0) + 1
        assert {c["value"]: c["count"] for c in data["counts"][facet]} == want, facet
    want_rules: dict = {}
    for r in rows:
        if passes(r, "rule"):
            for rule in r["rules"]:
                want_rules[rule] = want_rules.get(rule, 0) + 1
    assert {c["value"]: c["count"] for c in data["counts"]["rule"]} == want_rules
    assert data["total"] == sum(1 for r in rows if passes(r, None)) == len(data["entries"])


def test_queue_json_twin_carries_the_api_list_envelope(backend_db, backend_settings, seeded):
    """/queue.json keeps its page's page=N paging and also answers in the API's list shape: count, total,
    limit, offset and a next that is null on the last page."""
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(backend_settings)) as c:
        body = c.get("/queue.json").json()
        assert body["count"] == len(body["entries"]) and body["total"] >= body["count"] > 0
        assert body["limit"] == body["per_page"] and body["offset"] == 0 and body["next"] is None
