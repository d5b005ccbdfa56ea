"""Reviewer decisions kept in the WARC files (issue 29 item 2), in the same records as corrections.

``archive_decision`` writes a committed decision as a ``decision`` review record (a WARC metadata record,
a transparency-log leaf and a ``corrections`` row), keyed like a correction to the archived text: the
snapshot and selector of the entry's headline figure, with the flag's rule, the action and the note.
After `caveat reindex` has reparsed and re-audited every source, ``restore_decisions`` sets each flag's
status again from those records (the newest decision per figure and rule wins) and re-audits the entries.
The ``decisions`` table itself names user accounts, which a reindex cannot bring back: the restored
history is the ``corrections`` rows of kind ``decision`` (with the reviewer's name).
"""

from __future__ import annotations

from sqlalchemy import select

from app.audit.decisions import ACTIONS
from app.audit.engine import audit_entries
from app.claims import corrections as store
from app.config import Settings
from app.db import Database
from app.models import Correction, Decision, Entry, EntryVersion, Flag, Snapshot


def archive_decision(db: Database, decision_id: int, actor: str) -> int | None:
    """Write decision ``decision_id`` (committed) to the WARC files; None when its entry has no pinned figure."""
    with db.Session() as s:
        d = s.get(Decision, decision_id)
        e = s.get(Entry, d.entry_id)
        v = s.get(EntryVersion, e.current_version_id) if e is not None and e.current_version_id else None
        sel = ((v.provenance or {}).get("_selectors") or {}).get("headline_tps") if v else None
        if not isinstance(sel, dict):
            return None
        snap = s.get(Snapshot, v.snapshot_id)
        s.expunge(snap)
        fields = {"rule": d.rule, "action": d.action, "decision_id": d.id}
        note, version = d.note, v.version_no
    return store.record(db, snap, "decision", dict(sel), fields, note, actor=actor, entry_version=version)


def restore_decisions(db: Database, settings: Settings) -> int:
    """Flag statuses from the decision records (after a reindex's reparse and audit); returns how many flags."""
    n = 0
    with db.Session() as s:
        rows = list(s.scalars(select(Correction).where(Correction.kind == "decision").order_by(Correction.id)))
        if not rows:
            return 0
        figures: dict[tuple, list[int]] = {}
        for eid, sid, prov, cid in s.execute(
                select(Entry.id, Entry.source_id, EntryVersion.provenance, Snapshot.citation_id)
                .join(EntryVersion, EntryVersion.id == Entry.current_version_id)
                .join(Snapshot, Snapshot.id == EntryVersion.snapshot_id)):
            sel = ((prov or {}).get("_selectors") or {}).get("headline_tps")
            if isinstance(sel, dict):
                figures.setdefault((sid, cid, sel.get("start"), sel.get("end"), sel.get("exact")), []).append(eid)
        touched: set[int] = set()
        for c in rows:
            rule, action = (c.fields or {}).get("rule"), (c.fields or {}).get("action")
            if action not in ACTIONS:
                continue
            sel = c.selector or {}
            for eid in figures.get((c.source_id, c.citation_id, sel.get("start"), sel.get("end"), sel.get("exact")), []):
                for f in s.scalars(select(Flag).where(Flag.entry_id == eid, Flag.rule == rule)):
                    f.status = ACTIONS[action]
                    touched.add(eid)
                    n += 1
        s.flush()
        if touched:
            audit_entries(s, settings, sorted(touched))
        s.commit()
    return n
