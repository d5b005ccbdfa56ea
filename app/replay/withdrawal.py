"""Withdrawal and restriction of captures, with a tombstone, reversibly, and kept in the WARC files.

A capture is ``public`` (the default), ``withdrawn`` (a takedown request, a page captured by mistake:
its citation answers **410 Gone** with its metadata and the reason still shown) or ``restricted``
(kept, not shown: **403**). Either way the bytes stay in the WARC and ``caveat verify`` still checks
them; the capture leaves TimeMaps, TimeGates, capture lists, WACZ exports and quotable evidence.
``reinstate`` makes it public again.

Every change is recorded twice: a row in the append-only ``access_events`` table (who, why, when) and
a WARC ``metadata`` record (``WARC-Refers-To`` the capture's record, a JSON block) appended under the
writer lock, so ``caveat reindex`` rebuilds both the state and its history from the WARC files alone
(:func:`parse_access_record`, :func:`apply_access_records`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import Database
from app.storage.indexing import MetadataHandler, register_metadata_handler
from app.errors import BadRequest, Conflict
from app.models import AccessEvent, Snapshot
from app.storage.snapshots import find_by_citation
from app.storage.tlog import append_written
from app.storage.warcfiles import WarcStore
from archive.timestamps import ts17
from archive.warcwriter import build_record

PUBLIC = "public"
STATE_OF = {"withdraw": "withdrawn", "restrict": "restricted", "reinstate": PUBLIC}
STATUS_OF = {"withdrawn": 410, "restricted": 403}
CONTENT_TYPE = "application/vnd.caveat.access+json"
MAX_REASON = 2000


def visible(snap: Snapshot) -> bool:
    return (snap.access or PUBLIC) == PUBLIC


def public_condition():
    """SQL condition: the capture may be shown (use in every query that lists or resolves captures)."""
    return Snapshot.access == PUBLIC


def withdrawn_snapshot_ids(session: Session) -> set[int]:
    """Ids of the snapshots that are withdrawn or restricted: evidence from them must not be quoted."""
    return set(session.scalars(select(Snapshot.id).where(Snapshot.access != PUBLIC)))


def withholder(session: Session, snap: Snapshot) -> Snapshot | None:
    """The capture that withholds ``snap``: itself when it is withdrawn or restricted, else the record its
    revisit chain takes its bytes from when that one is (a revisit serves the original's bytes, so it is
    withheld with it); None when it may be shown."""
    seen: set[int] = set()
    cur: Snapshot | None = snap
    while cur is not None and cur.id not in seen and len(seen) < 20:
        if not visible(cur):
            return cur
        seen.add(cur.id)
        if cur.record_type != "revisit":
            return None
        if cur.refers_to_id is not None:
            cur = session.get(Snapshot, cur.refers_to_id)
        elif cur.refers_to_record_id:
            cur = session.scalars(select(Snapshot).where(Snapshot.record_id == cur.refers_to_record_id)).first()
        else:
            return None
    return None


# -- what is derived from a capture: withdrawn, restricted and reinstated with it --------------------

_DERIVED = ("dom", "fullPage", "pageinfo")   # a browser capture's resource records (urn:<kind>:<page URL>)


def _after(session: Session, url: str, snap: Snapshot) -> Snapshot | None:
    return session.scalars(select(Snapshot).where(Snapshot.url == url, Snapshot.warc_file == snap.warc_file,
                                                  Snapshot.offset > snap.offset)
                           .order_by(Snapshot.offset).limit(1)).first()


def _before(session: Session, url: str, snap: Snapshot) -> Snapshot | None:
    return session.scalars(select(Snapshot).where(Snapshot.url == url, Snapshot.warc_file == snap.warc_file,
                                                  Snapshot.offset < snap.offset)
                           .order_by(Snapshot.offset.desc()).limit(1)).first()


def _page_group(session: Session, snap: Snapshot) -> list[Snapshot]:
    """A browser capture's records, from any one of them: the page's document response and its
    ``urn:dom:``, ``urn:fullPage:`` and ``urn:pageinfo:`` records (written together, in this order, in one
    WARC file). Just ``[snap]`` for anything else."""
    dom = None
    if snap.url.startswith("urn:dom:"):
        dom = snap
    elif snap.url.startswith(("urn:fullPage:", "urn:pageinfo:")):
        dom = _before(session, "urn:dom:" + snap.url.split(":", 2)[2], snap)
    elif not snap.url.startswith("urn:"):
        dom = _after(session, "urn:dom:" + snap.url, snap)
        if dom is not None and _before(session, snap.url, dom) is not snap:
            dom = None   # the page was captured again in between: that capture is the DOM's
    if dom is None:
        return [snap]
    page = dom.url.split(":", 2)[2]
    group = {dom.id: dom}
    doc = _before(session, page, dom)
    if doc is not None and doc.source_id == dom.source_id:
        group[doc.id] = doc
    for kind in _DERIVED[1:]:
        rec = _after(session, f"urn:{kind}:{page}", dom)
        if rec is not None:
            group[rec.id] = rec
    group.setdefault(snap.id, snap)
    return list(group.values())


def dependents(session: Session, snap: Snapshot) -> list[Snapshot]:
    """Everything whose access follows ``snap``'s, ``snap`` excluded: the other records of its browser
    capture and every revisit that takes its bytes from any of them (transitively)."""
    group = {s.id: s for s in _page_group(session, snap)}
    frontier = list(group)
    while frontier:
        refs = list(session.scalars(select(Snapshot).where(Snapshot.refers_to_id.in_(frontier))))
        frontier = []
        for r in refs:
            if r.id not in group:
                group[r.id] = r
                frontier.append(r.id)
    group.pop(snap.id, None)
    return sorted(group.values(), key=lambda s: s.id)


def _block(snap: Snapshot, action: str, reason: str, actor: str, at: datetime) -> bytes:
    return json.dumps({"caveat-access": action, "state": STATE_OF[action], "citation_id": snap.citation_id,
                       "record_id": snap.record_id, "url": snap.url, "timestamp": snap.timestamp,
                       "reason": reason, "actor": actor, "at": at.isoformat()}, sort_keys=True).encode("utf-8")


def record_access_change(db: Database, citation_id: str, action: str, reason: str, *, actor: str,
                         user_id: int | None = None) -> tuple[dict, list[int]]:
    """Withdraw, restrict or reinstate the capture ``citation_id`` and what is derived from it
    (:func:`dependents`: its browser capture's DOM, screenshot and page-info records, revisits of any of
    them): write one WARC metadata record each (fsynced), then update the snapshots and add the
    ``access_events`` rows in one commit. A dependent follows only when it is not already in the target
    state; a reinstatement takes back only the dependents withheld the same way. Returns the event and the
    ids of every snapshot changed; the audit (``app.audit.access.change_access``) then re-audits what was
    read from them."""

    if action not in STATE_OF:
        raise BadRequest(f"unknown action {action!r}: use withdraw, restrict or reinstate")
    reason = " ".join((reason or "").split())
    if not reason:
        raise BadRequest(f"say why: a {action} needs a reason (--reason TEXT), kept in the audit log")
    if len(reason) > MAX_REASON:
        raise BadRequest(f"the reason is {len(reason):,} characters; keep it under {MAX_REASON:,}")
    actor = " ".join((actor or "").split())[:255] or "unknown"
    target = STATE_OF[action]
    with db.Session() as s:
        snap = find_by_citation(s, citation_id)   # NotFound: "no snapshot has citation id ..."
        if (snap.access or PUBLIC) == target:
            raise Conflict(f"{snap.citation_id} is already {target}; nothing was changed"
                           + ("" if target == PUBLIC else " (reinstate it first to change how it is withheld)"))
        cid = snap.citation_id
    at = datetime.now(timezone.utc)
    with WarcStore(db) as store:
        with db.Session() as s:
            snap = s.scalar(select(Snapshot).where(Snapshot.citation_id == cid))
            if (snap.access or PUBLIC) == target:   # another process did it while we waited for the lock
                raise Conflict(f"{cid} is already {target}; nothing was changed")
            before = snap.access or PUBLIC
            follow = [d for d in dependents(s, snap)
                      if (d.access or PUBLIC) != target and (target != PUBLIC or (d.access or PUBLIC) == before)]
            store.rotate_if_full()
            writer = store.writer
            start = writer.size
            changes = [(snap, reason)] + [(d, f"{reason} (follows {cid}: {_kind(d)})") for d in follow]
            try:
                written = [writer.append(build_record(
                    "metadata", [("WARC-Target-URI", one.url), ("WARC-Refers-To", one.record_id)],
                    content_type=CONTENT_TYPE, ts=ts17(at), head=_block(one, action, why, actor, at),
                    level=writer.level)) for one, why in changes]
                writer.sync()
                events = [_apply(s, one, action, why, actor, at, user_id=user_id, warc_record_id=w.record_id)
                          for (one, why), w in zip(changes, written)]
                event = events[0]
                s.commit()
            except BaseException:
                writer.truncate(start)
                writer.sync()
                raise

            append_written(db.settings, writer.path.name, writer.take_appended(), sign=True)  # committed: log it
            out = event_json(event, snap)
            out["also"] = [{"citation_id": d.citation_id, "url": d.url if target != "restricted" else None,
                            "record_type": d.record_type} for d in follow]
            ids = [snap.id] + [d.id for d in follow]
    return out, ids


def _kind(snap: Snapshot) -> str:
    if snap.url.startswith("urn:"):
        return f"its {snap.url.split(':', 2)[1]} record"
    return "a revisit of its bytes" if snap.record_type == "revisit" else "the page's document"


def _apply(s: Session, snap: Snapshot, action: str, reason: str, actor: str, at: datetime, *,
           user_id: int | None, warc_record_id: str | None) -> AccessEvent:
    target = STATE_OF[action]
    snap.access = target
    snap.access_reason = None if target == PUBLIC else reason
    snap.access_changed_at = at
    snap.access_by = actor
    event = AccessEvent(snapshot_id=snap.id, citation_id=snap.citation_id, action=action, reason=reason,
                        actor=actor, user_id=user_id, warc_record_id=warc_record_id, created_at=at)
    s.add(event)
    s.flush()
    return event


def event_json(e: AccessEvent, snap: Snapshot | None = None) -> dict:
    out = {"id": e.id, "citation_id": e.citation_id, "action": e.action, "state": STATE_OF.get(e.action),
           "reason": e.reason, "actor": e.actor, "at": e.created_at.isoformat() if e.created_at else None,
           "warc_record_id": e.warc_record_id}
    if snap is not None:
        out["access"] = snap.access
    return out


def history(session: Session, snap: Snapshot) -> list[dict]:
    rows = session.scalars(select(AccessEvent).where(AccessEvent.snapshot_id == snap.id).order_by(AccessEvent.id))
    return [event_json(e) for e in rows]


def recent_events(session: Session, limit: int = 100) -> list[dict]:
    """The newest access events first (for the audit log)."""
    rows = session.scalars(select(AccessEvent).order_by(AccessEvent.id.desc()).limit(limit))
    return [event_json(e) for e in rows]


# -- from the WARC files (reindex) ------------------------------------------------------------------

def parse_access_record(content_type: str | None, block: bytes) -> dict | None:
    """The access change a ``metadata`` record holds, or None if it holds none."""
    if (content_type or "").split(";")[0].strip().lower() != CONTENT_TYPE:
        return None
    try:
        data = json.loads(block.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("caveat-access") not in STATE_OF or not data.get("record_id"):
        return None
    return data


def apply_access_records(db: Database, records: list[tuple[str, dict]]) -> int:
    """Replay access changes read from the WARC files, in file order: ``records`` are (metadata record
    id, parsed block). Changes already in ``access_events`` are skipped; returns how many were applied."""
    if not records:
        return 0
    n = 0
    with db.Session() as s:
        known = set(s.scalars(select(AccessEvent.warc_record_id).where(
            AccessEvent.warc_record_id.in_([rid for rid, _ in records]))))
        for rid, data in records:
            if rid in known:
                continue
            snap = s.scalar(select(Snapshot).where(Snapshot.record_id == data["record_id"]))
            if snap is None:
                continue
            try:
                at = datetime.fromisoformat(data.get("at") or "")
            except ValueError:
                at = datetime.now(timezone.utc)
            if at.tzinfo is None:
                at = at.replace(tzinfo=timezone.utc)
            _apply(s, snap, data["caveat-access"], str(data.get("reason") or ""), str(data.get("actor") or "unknown"),
                   at, user_id=None, warc_record_id=rid)
            known.add(rid)
            n += 1
        s.commit()
    return n


def _restore_access(db: Database, path, items) -> int:
    return apply_access_records(db, [(rid, parsed) for _o, _l, rid, _b, parsed in items])


# A withdrawal, restriction or reinstatement found in a WARC file by the indexer (reindex, import, catch-up).
register_metadata_handler(MetadataHandler("access", parse_access_record, _restore_access, order=10))
