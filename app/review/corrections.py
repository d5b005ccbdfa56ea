"""Correct an entry, add a missed figure, reject a false entry: each recorded in the WARC files and the
``corrections`` table (``app.claims.corrections.record``), applied at once by storing the source's newest
snapshot again (``app.crawl.workflow.reapply_latest``: the corrections are applied inside ``store_parse``,
the rules re-run on the entry and its recipe), then a ``corrected`` change event and its webhooks.

Fixes and rejections carry the entry's version (its current ``version_no``: the API's ETag / If-Match,
the form's hidden field); a stale one raises ``PreconditionFailed`` (412) with the entry's current state
and stores nothing.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.audit.rules import CLAUSE_RULES, NOT_UNDERSTOOD, RULES, read_entry
from app.claims import corrections as store
from app.config import Settings
from app.crawl.workflow import parse_archived, reapply_latest
from app.db import Database
from app.errors import BadRequest, Conflict, NotFound, PreconditionFailed
from app.models import ChangeEvent, Correction, Entry, EntryVersion, Snapshot, utcnow
from app.replay.citations import lookup
from app.storage.snapshots import find_by_citation
from app.watch.hooks import queue_deliveries


def entry_state(session: Session, entry_id: int) -> dict:
    """What a reviewer corrects: the entry's version (its ETag), fields, and whether it is gone."""
    e = session.get(Entry, entry_id)
    if e is None:
        raise NotFound(f"No entry {entry_id}. GET /api/entries lists them.")
    v = session.get(EntryVersion, e.current_version_id) if e.current_version_id else None
    return {"id": e.id, "version": v.version_no if v else 0, "fields": (v.fields if v else {}) or {},
            "gone": e.gone, "recipe_id": e.recipe_id, "status": e.status}


def etag(version: int) -> str:
    return f'"v{version}"'


def parse_version(value) -> int | None:
    """An If-Match value (``"v3"``, ``W/"v3"``, ``3``) or a form's version field as a number; None if unset."""
    if value is None or value == "" or value == "*":
        return None
    text = str(value).strip().removeprefix("W/").strip('"').lstrip("v")
    if not text.isdigit():
        raise BadRequest(f"the version {value!r} is not one this entry gave: send its ETag (e.g. \"v3\")")
    return int(text)


def _target(session: Session, entry_id: int) -> tuple[Entry, EntryVersion, Snapshot, dict]:
    e = session.get(Entry, entry_id)
    if e is None:
        raise NotFound(f"No entry {entry_id}. GET /api/entries lists them.")
    v = session.get(EntryVersion, e.current_version_id) if e.current_version_id else None
    sel = (((v.provenance or {}).get("_selectors") or {}).get("headline_tps")) if v else None
    if v is None or not isinstance(sel, dict) or e.source_id is None:
        raise BadRequest(f"entry {entry_id} has no headline figure pinned in its archived text, so a correction "
                         "cannot be keyed to it; add the figure from its snapshot instead (POST /api/entries)")
    return e, v, session.get(Snapshot, v.snapshot_id), dict(sel)


def _stale(entry_id: int, version: int | None):
    def check(session: Session) -> None:
        current = entry_state(session, entry_id)
        if version is not None and version != current["version"]:
            raise PreconditionFailed(
                f"entry {entry_id} is at version {current['version']}, not {version}: someone changed it since "
                "you loaded it; nothing was stored. Review its current state and correct again.", current=current)
    return check


def fix_entry(db: Database, settings: Settings, entry_id: int, fields: dict, why: str, *, actor: str,
              user_id: int | None = None, version: int | None = None) -> dict:
    fields = store.check_fields(fields)
    if not fields:
        raise BadRequest(f"nothing to correct: give at least one field ({', '.join(store.CORRECTABLE)})")
    return _correct(db, settings, "fix", entry_id, fields, why, actor=actor, user_id=user_id, version=version)


def reject_entry(db: Database, settings: Settings, entry_id: int, why: str, *, actor: str,
                 user_id: int | None = None, version: int | None = None) -> dict:
    return _correct(db, settings, "reject", entry_id, None, why, actor=actor, user_id=user_id, version=version)


def readable_rules() -> list[str]:
    """The rule ids a reviewer may name when reading a clause as a condition."""
    return sorted(set(RULES) | (set(CLAUSE_RULES) - {NOT_UNDERSTOOD}))


def read_clause(db: Database, settings: Settings, entry_id: int, clause: str, reading: str, why: str, *,
                rule: str | None = None, actor: str, user_id: int | None = None, version: int | None = None) -> dict:
    """A reviewer's reading of one clause of the entry's notes (issue 25): ``benign`` (the headline may be
    quoted as far as that clause goes) or ``condition`` with the ``rule`` it raises. The clause must be one
    Caveat reads in the entry's current notes (BadRequest otherwise, nothing stored); the reading is a
    ``clause`` correction keyed to the entry's figure, so it survives reparse and reindex."""
    value = store.check_clause(clause, reading, rule)
    if value["rule"] is not None and value["rule"] not in readable_rules():
        raise BadRequest(f"unknown rule {value['rule']!r}; a clause may be read as one of: {', '.join(readable_rules())}")
    with db.Session() as s:
        fields = entry_state(s, entry_id)["fields"]
        v = s.get(EntryVersion, s.get(Entry, entry_id).current_version_id)
        extra = (v.extra if v is not None else None) or {}
    clauses = read_entry({**fields, "_extra": extra} if extra else fields)
    match = next((c for c in clauses if store.clause_key(c.text) == value["clause"]), None)
    if match is None:
        shown = "; ".join(f"\u00ab{c.text}\u00bb" for c in clauses[:6]) or "none"
        raise BadRequest(f"entry {entry_id}'s notes have no clause {value['clause']!r}; its clauses: {shown}")
    value["field"] = match.field
    return _correct(db, settings, "clause", entry_id, value, why, actor=actor, user_id=user_id, version=version)


# what a confirmed proposal's correction carries of the proposal, so the reviewer's entry keeps it whatever a
# later model proposes
PROPOSAL_NAMES = ("model", "test", "phase")


def _names(fields: dict | None) -> dict:
    return {k: fields[k] for k in PROPOSAL_NAMES if (fields or {}).get(k) is not None}


def proposal_at(session: Session, snap: Snapshot, sel: dict) -> dict | None:
    """The fields of the learned reader's proposal (still on its page) at the figure ``sel`` names, or None."""
    rows = session.execute(
        select(EntryVersion.fields, EntryVersion.provenance, Snapshot.citation_id)
        .join(Entry, Entry.current_version_id == EntryVersion.id).join(Snapshot, Snapshot.id == EntryVersion.snapshot_id)
        .where(Entry.source_id == snap.source_id, Entry.status == "proposed", Entry.gone.is_(False)))
    for fields, prov, cid in rows:
        psel = ((prov or {}).get("_selectors") or {}).get("headline_tps")
        if isinstance(psel, dict) and store.same_figure(psel, cid, sel, snap.citation_id):
            return fields or {}
    return None


def _correct(db, settings, kind, entry_id, fields, why, *, actor, user_id, version) -> dict:
    why = store.check_reason(why)
    with db.Session() as s:
        e, v, snap, sel = _target(s, entry_id)
        if kind == "fix" and e.status == "proposed":   # fixing a proposal confirms it, with its names
            fields = {**_names(v.fields), **(fields or {})}
        s.expunge(snap)
        before = entry_state(s, entry_id)
        _stale(entry_id, version)(s)  # fail fast, before waiting for the writer lock
    out: dict = {}
    cid = store.record(db, snap, kind, sel, fields, why, actor=actor, user_id=user_id, entry_version=v.version_no,
                       check=_stale(entry_id, version),
                       then=lambda c: out.update(_apply(db, settings, c, snap, before, why, actor)))
    return {"correction_id": cid, **out}


def add_entry(db: Database, settings: Settings, citation: str, quote: str, prefix: str, suffix: str,
              fields: dict | None, why: str, *, actor: str, user_id: int | None = None,
              at: tuple[int, int] | None = None) -> dict:
    """A figure the parser missed, from its snapshot and a quote selector validated against the decoded
    archived text (none or several matches, or not a number: 400, nothing stored). ``at``: the figure's
    position in that text instead of the quote (the archived page view's selection)."""
    why = store.check_reason(why)
    fields = store.check_fields(fields or {})
    with db.Session() as s:
        snap = find_by_citation(s, citation)
        parsed = parse_archived(s, settings, snap)
        sel = (store.selector_at(parsed.text, *at) if at is not None
               else store.select_quote(parsed.text, quote, prefix or "", suffix or ""))
        store.figure_of(sel["exact"])
        if any(((pe.selectors or {}).get("headline_tps") or {}).get("start") == sel["start"] for pe in parsed.entries):
            raise Conflict(f"the reader already reads {sel['exact']!r} at that place as an entry; correct that "
                           "entry instead (PATCH /api/entries/{id}); nothing was stored")
        proposed = proposal_at(s, snap, sel)
        if proposed is not None:       # it confirms the learned reader's proposal: the correction keeps its names
            fields = {**_names(proposed), **fields}
        s.expunge(snap)
    out: dict = {}
    cid = store.record(db, snap, "add", sel, fields, why, actor=actor, user_id=user_id,
                       then=lambda c: out.update(_apply(db, settings, c, snap, None, why, actor)))
    return {"correction_id": cid, **out}


def mark_checked(db: Database, settings: Settings, citation: str, why: str, *, actor: str,
                 user_id: int | None = None) -> dict:
    """"Every figure checked": the reviewer read the whole page of snapshot ``citation`` and its entries
    are what it claims (a ``checked`` correction, in the WARC files like the others; its selector is empty)."""
    why = store.check_reason(why)
    with db.Session() as s:
        snap = lookup(s, settings, citation)   # a withheld capture: its tombstone (Withheld), nothing stored
        if snap.source_id is None:
            raise BadRequest(f"snapshot {citation} belongs to no source, so no entry is read from it to check")
        s.expunge(snap)
    cid = store.record(db, snap, "checked", {}, None, why, actor=actor, user_id=user_id)
    return {"correction_id": cid, "snapshot": snap.citation_id}


def checked_marks(session: Session, citation_id: str) -> list[dict]:
    """Who marked snapshot ``citation_id``'s page as checked, when and why, oldest first."""
    rows = session.scalars(select(Correction).where(Correction.citation_id == citation_id,
                                                          Correction.kind == "checked")
                           .order_by(Correction.id))
    return [store.correction_json(c) for c in rows]


def _apply(db: Database, settings: Settings, correction_id: int, snap: Snapshot, before: dict | None,
           why: str, actor: str) -> dict:
    """Store the source's newest snapshot again (the correction applied), find the entry it now names,
    and record the ``corrected`` change event."""
    report = reapply_latest(db, settings, snap.source_id)
    with db.Session() as s:
        # a fix of a proposal confirms it: the reviewer's entry is a new one (the proposal is gone)
        confirmed = before is not None and before.get("status") == "proposed"
        entry_id = before["id"] if before and not confirmed else _entry_of(s, snap.source_id, correction_id)
        entry_id = entry_id if entry_id is not None or not before else before["id"]
        after = entry_state(s, entry_id) if entry_id is not None else None
        old = (before or {}).get("fields") or {}
        new = (after or {}).get("fields") or {}
        changes = {k: [old.get(k), new.get(k)] for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}
        if after is not None and after["gone"] and not (before or {}).get("gone"):
            changes["gone"] = [False, True]
        event = ChangeEvent(kind="corrected", scope="entry", source_id=snap.source_id, entry_id=entry_id,
                            recipe_id=(after or {}).get("recipe_id"), new_snapshot_id=snap.id,
                            old=old or None, new={**new, "correction_id": correction_id, "by": actor},
                            changes=changes or None, detail=f"corrected by {actor}: {why}", created_at=utcnow())
        s.add(event)
        s.commit()
        event_id = event.id
    queue_deliveries(db, [event_id])
    return {"entry_id": entry_id, "entry": after, "event_id": event_id,
            "warnings": [w for w in report.summary.warnings if "correction" in w]}


def _entry_of(session: Session, source_id: int, correction_id: int) -> int | None:
    """The entry whose current version carries this correction (an added figure's entry)."""
    rows = session.execute(select(Entry.id, EntryVersion.provenance)
                           .join(EntryVersion, EntryVersion.id == Entry.current_version_id)
                           .where(Entry.source_id == source_id))
    for eid, prov in rows:
        for note in ((prov or {}).get("_reviewer") or {}).values():
            if isinstance(note, dict) and note.get("correction") == correction_id:
                return eid
    return None


def history(session: Session, entry_id: int) -> list[dict]:
    """The corrections made on an entry's figure, oldest first."""
    e = session.get(Entry, entry_id)
    v = session.get(EntryVersion, e.current_version_id) if e is not None and e.current_version_id else None
    if v is None:
        return []
    snap = session.get(Snapshot, v.snapshot_id)
    sel = ((v.provenance or {}).get("_selectors") or {}).get("headline_tps")
    return [store.correction_json(c) for c in store.for_entry(session, e.source_id, snap.citation_id, sel)]
