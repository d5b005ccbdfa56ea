"""Withdrawing, restricting or reinstating a capture, as the audit sees it: the access change is recorded
(``app.replay.withdrawal``), then the recipes whose entries were read from the capture are re-audited, so
their quotable answers and working numbers leave out (or take back) its evidence."""

from __future__ import annotations

from sqlalchemy import select

from app.audit.engine import audit_recipes
from app.db import Database
from app.models import Entry, EntryVersion
from app.replay.withdrawal import record_access_change


def change_access(db: Database, citation_id: str, action: str, reason: str, *, actor: str,
                  user_id: int | None = None) -> dict:
    """Withdraw, restrict or reinstate ``citation_id`` and re-audit what was read from it."""
    out, snapshot_ids = record_access_change(db, citation_id, action, reason, actor=actor, user_id=user_id)
    for snapshot_id in snapshot_ids:   # the capture and what followed it (a browser capture's DOM is what is parsed)
        reaudit_snapshot(db, snapshot_id)
    return out


def reaudit_snapshot(db: Database, snapshot_id: int) -> None:
    """The recipes whose entries were read from this capture: their quotable answers and working numbers
    leave out (or take back) its evidence."""
    with db.Session() as s:
        rids = set(s.scalars(select(Entry.recipe_id).join(EntryVersion, EntryVersion.id == Entry.current_version_id)
                             .where(EntryVersion.snapshot_id == snapshot_id, Entry.recipe_id.isnot(None))))
        if rids:
            audit_recipes(s, db.settings, rids)
            s.commit()
