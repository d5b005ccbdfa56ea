"""Reviewer decisions on flags: confirm or dismiss with a note, kept in an append-only log.

``decide`` appends a ``decisions`` row (who, when, what, why), sets the flag's status and recomputes
the entry's (and its recipe's) working number at once. Re-audits never change a flag's status, so a
decision stands until a reviewer makes another one. Rows in ``decisions`` are never updated or deleted.
"""

from __future__ import annotations

from sqlalchemy import event, func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, NotFound
from app.models import Decision, Flag, User
from app.audit.engine import audit_entries
from app.audit import queue

ACTIONS = {"confirm": "confirmed", "dismiss": "dismissed"}
MAX_NOTE = 4000
MAX_LIST = 500


def decide(session: Session, user: User, flag_id: int, action: str, note: str,
           settings: Settings | None = None) -> dict:
    """Record ``user``'s decision on a flag and recompute the working numbers it affects.

    Pass ``settings`` (``request.app.state.settings``) so re-cited evidence uses the right base URL.
    """
    settings = settings or Settings()
    if action not in ACTIONS:
        raise BadRequest(f"action must be 'confirm' or 'dismiss', not {action!r}.")
    note = (note or "").strip()
    if not note:
        raise BadRequest("A decision needs a note saying why (it goes into the audit log).")
    if len(note) > MAX_NOTE:
        raise BadRequest(f"The note is {len(note)} characters; keep it under {MAX_NOTE}.")
    flag = session.get(Flag, flag_id)
    if flag is None:
        raise NotFound(f"No flag {flag_id}. Flag ids are listed with each entry in GET /api/entries/{{id}}.")

    affected = queue.affected_entries(session, flag.entry_id)
    before = queue.state_of(session, affected)
    row = Decision(flag_id=flag.id, entry_id=flag.entry_id, rule=flag.rule, user_id=user.id, action=action,
                   note=note)
    session.add(row)
    flag.status = ACTIONS[action]
    session.flush()
    audit_entries(session, settings, [flag.entry_id])
    session.flush()
    after = queue.state_of(session, affected)
    sources = queue.cached_sources(session, after.url)
    decision_id = row.id
    # the queue's cached counts move by this decision's delta once it is committed (not before: a
    # rollback leaves them as they were), so the first queue view after a decision is not a recount
    def carry(_session) -> None:
        queue.apply_decision(before, after, decision_id, sources)

    def forget(_session) -> None:
        if event.contains(session, "after_commit", carry):
            event.remove(session, "after_commit", carry)

    event.listen(session, "after_commit", carry, once=True)
    event.listen(session, "after_rollback", forget, once=True)
    return decision_json(row, user.username, flag)


def decision_json(d: Decision, username: str | None, flag: Flag | None = None) -> dict:
    out = {"id": d.id, "flag_id": d.flag_id, "entry_id": d.entry_id, "rule": d.rule, "user": username,
           "action": d.action, "note": d.note, "created_at": d.created_at.isoformat() if d.created_at else None}
    if flag is not None:
        out["flag_status"] = flag.status
    return out


def list_decisions(session: Session, *, entry_id: int | None = None, flag_id: int | None = None,
                   limit: int = 100, before_id: int | None = None, offset: int = 0) -> list[dict]:
    """The audit log, newest first; page with ``offset`` (or ``before_id``)."""
    if limit < 1 or limit > MAX_LIST:
        raise BadRequest(f"limit must be between 1 and {MAX_LIST}.")
    q = select(Decision, User.username).join(User, User.id == Decision.user_id).where(
        *_decision_filters(entry_id, flag_id, before_id))
    rows = session.execute(q.order_by(Decision.id.desc()).limit(limit).offset(max(offset, 0)))
    return [decision_json(d, name) for d, name in rows]


def count_decisions(session: Session, *, entry_id: int | None = None, flag_id: int | None = None,
                    before_id: int | None = None) -> int:
    q = select(func.count(Decision.id)).where(*_decision_filters(entry_id, flag_id, before_id))
    return session.scalar(q) or 0


def _decision_filters(entry_id, flag_id, before_id) -> list:
    conds = []
    if entry_id is not None:
        conds.append(Decision.entry_id == entry_id)
    if flag_id is not None:
        conds.append(Decision.flag_id == flag_id)
    if before_id is not None:
        conds.append(Decision.id < before_id)
    return conds