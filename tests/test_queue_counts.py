"""The queue's counts after a decision: carried over by the decision's delta (no recount), and equal to
what a recount gives, for every cached filter set; a rolled-back decision carries nothing."""

from __future__ import annotations

from sqlalchemy import select

from app.models import Flag
from app.accounts import auth
from app.audit import decisions
from app.audit import queue
from app.audit.engine import audit_entries
from app.audit.queue import QueueFilters, review_queue
from tests.audit_data import glm_entries, store

FILTER_SETS = [QueueFilters(), QueueFilters(severity="critical"), QueueFilters(decision="pending"),
               QueueFilters(rule="repeat_loop"), QueueFilters(source="board"), QueueFilters(decision="decided")]


def _counts(db, f):
    with db.Session() as s:
        return review_queue(s, db.settings, f)["counts"]


def test_decision_moves_every_cached_count_like_a_recount(db):
    queue.clear_cache()
    with db.session() as s:
        _, _, summary = store(s, glm_entries())
        audit_entries(s, db.settings, summary.entry_ids)
        user = auth.create_user(s, "rita", "a long enough passphrase")
    before = {f: _counts(db, f) for f in FILTER_SETS}  # fills the cache
    with db.Session() as s:
        top = s.scalar(select(Flag.entry_id).where(Flag.rule == "full_acceptance"))
        ids = list(s.scalars(select(Flag.id).where(Flag.entry_id == top, Flag.active.is_(True))))
    for n, flag_id in enumerate(ids):  # dismiss every flag of the headline entry: severity and decision move
        with db.session() as s:  # the first in its own transaction, the rest together in one
            decisions.decide(s, s.get(type(user), user.id), flag_id, "dismiss", "checked", settings=db.settings)
            if n:
                for rest in ids[n + 1:]:
                    decisions.decide(s, s.get(type(user), user.id), rest, "dismiss", "checked", settings=db.settings)
        if n:
            break
    with db.Session() as s:
        fp = queue.fingerprint(s)
    carried = {k[1] for k in queue._cache if k[2] == fp}
    assert set(FILTER_SETS) <= carried  # every cached filter set was carried, none is recounted
    after = {f: _counts(db, f) for f in FILTER_SETS}
    queue.clear_cache()
    recount = {f: _counts(db, f) for f in FILTER_SETS}
    for f in FILTER_SETS:
        assert after[f] == recount[f], (f, after[f], recount[f])
    assert after != before  # the decision did move them (decided went up)
    decided = {c["value"]: c["count"] for c in after[QueueFilters()]["decision"]}
    assert sum(decided.values()) == sum(c["count"] for c in before[QueueFilters()]["decision"])


def test_a_rolled_back_decision_carries_nothing(db):
    queue.clear_cache()
    with db.session() as s:
        _, _, summary = store(s, glm_entries())
        audit_entries(s, db.settings, summary.entry_ids)
        user = auth.create_user(s, "rita", "a long enough passphrase")
    _counts(db, QueueFilters())
    keys = set(queue._cache)
    with db.Session() as s:
        flag = s.scalars(select(Flag)).first()
        decisions.decide(s, s.get(type(user), user.id), flag.id, "confirm", "checked", settings=db.settings)
        s.rollback()
        s.commit()  # a later commit of the same session must not carry the rolled-back decision
    assert set(queue._cache) == keys
