"""Change events (issue 17): after every crawl, what changed for the entries of its source.

One event per entry per crawl at most: its figures (the numbers of its current version), its standing
flags, or its recipe's quotable answer changed (``changed``), or it is no longer on the page
(``vanished``). The page itself vanishing (HTTP 404/410, a host name that no longer resolves) is one
``vanished`` event of scope ``page``; a page answering again after that is ``returned``. Each event keeps
the old and new values, ``{name: [old, new]}`` of what changed, and both snapshots, so both citations.
An event is ``cited`` when someone relied on the entry: a citation made of its snapshot through
``POST /api/citations``, or a quotable answer served for its recipe.
"""

from __future__ import annotations

import threading
from datetime import datetime
from xml.sax.saxutils import escape

from sqlalchemy import and_, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.audit.engine import cite
from app.claims.identity import RANK_HEADER
from app.db import Database, chunked
from app.errors import BadRequest
from app.replay.citations import absolute, citation_path
from app.replay.withdrawal import PUBLIC
from app.models import (ChangeEvent, CitedMark, Entry, EntryVersion, Flag, Recipe, Snapshot, Source, utcnow)
from datetime import timezone

FIGURES = ("headline_tps", "steady_low", "steady_high", "acceptance_rate", "draft_tokens", "concurrency",
           "gpu_count", "quantization", "engine_version")
KINDS = ("changed", "vanished", "returned", "corrected")
PAGE_GONE = (404, 410)
MAX_LIMIT = 500
FEED_MAX = 200


# -- state before and after a crawl --------------------------------------------------------------
def _entry_states(session: Session, source_id: int, only: set[int] | None = None) -> dict[int, dict]:
    """Each entry's figures, flags and quotable answer; with ``only``, just those entries (after a crawl
    only the entries that were there before can have changed or vanished)."""
    if only is not None and not only:
        return {}
    rows = session.execute(select(Entry.id, Entry.recipe_id, Entry.gone, Entry.current_version_id,
                                  Entry.last_snapshot_id, Entry.model, Entry.hardware, Entry.engine)
                           .where(Entry.source_id == source_id, Entry.status == "read")).all()
    if only is not None:
        rows = [r for r in rows if r.id in only]
    out: dict[int, dict] = {}
    version_ids = [r.current_version_id for r in rows if r.current_version_id]
    versions = {}
    for part in chunked(version_ids):
        for v in session.execute(select(EntryVersion.id, EntryVersion.fields, EntryVersion.provenance,
                                         EntryVersion.snapshot_id, EntryVersion.extra)
                                 .where(EntryVersion.id.in_(part))):
            versions[v.id] = v
    flags: dict[int, list[str]] = {}
    ids = [r.id for r in rows]
    for part in chunked(ids):
        for eid, rule in session.execute(select(Flag.entry_id, Flag.rule).where(
                Flag.entry_id.in_(part), Flag.active.is_(True), Flag.status != "dismissed")):
            flags.setdefault(eid, []).append(rule)
    recipes = {r.recipe_id for r in rows if r.recipe_id}
    answers = {}
    for part in chunked(sorted(recipes)):
        for rid, tps, basis in session.execute(select(Recipe.recipe_id, Recipe.quotable_tps, Recipe.basis)
                                               .where(Recipe.recipe_id.in_(part))):
            answers[rid] = {"quotable_tps": tps, "basis": basis}
    for r in rows:
        v = versions.get(r.current_version_id)
        fields = dict(v.fields) if v is not None else {}
        out[r.id] = {
            "gone": r.gone, "recipe_id": r.recipe_id, "version_id": r.current_version_id,
            "snapshot_id": v.snapshot_id if v is not None else r.last_snapshot_id,
            "last_snapshot_id": r.last_snapshot_id,
            "provenance": dict(v.provenance or {}) if v is not None else {},
            "label": {"model": r.model, "hardware": r.hardware, "engine": r.engine},
            "figures": {k: fields.get(k) for k in FIGURES if fields.get(k) is not None} | _position(v),
            "flags": sorted(flags.get(r.id, [])),
            "quotable": answers.get(r.recipe_id, {"quotable_tps": None, "basis": None}),
        }
    return out


def _position(version) -> dict:
    """The row's rank or position on the board (a moved row is a change, never a new entry)."""
    for name, value in ((version.extra or {}) if version is not None else {}).items():
        if RANK_HEADER.match(str(name)) and value not in (None, ""):
            return {"position": value}
    return {}


def _last_good(session: Session, source_id: int, before_id: int | None = None) -> int | None:
    q = select(Snapshot.id).where(Snapshot.source_id == source_id, Snapshot.redirect_to.is_(None),
                                  Snapshot.status < 300)
    if before_id is not None:
        q = q.where(Snapshot.id < before_id)
    return session.scalar(q.order_by(Snapshot.id.desc()).limit(1))


def state_before(db: Database, source_id: int) -> dict:
    with db.Session() as s:
        return {"entries": _entry_states(s, source_id), "good_snapshot_id": _last_good(s, source_id)}


def _values(st: dict) -> dict:
    return {"figures": st["figures"], "flags": st["flags"], "quotable": st["quotable"]}


def _diff(old: dict, new: dict) -> dict:
    out = {}
    for k in sorted(set(old["figures"]) | set(new["figures"])):
        if old["figures"].get(k) != new["figures"].get(k):
            out[k] = [old["figures"].get(k), new["figures"].get(k)]
    if old["flags"] != new["flags"]:
        out["flags"] = [old["flags"], new["flags"]]
    for k in ("quotable_tps", "basis"):
        if old["quotable"].get(k) != new["quotable"].get(k):
            out[k] = [old["quotable"].get(k), new["quotable"].get(k)]
    return out


def _cited(session: Session, entry_ids: set[int], recipe_ids: set[str]) -> tuple[set[int], set[str]]:
    ce, cr = set(), set()
    for part in chunked(sorted(entry_ids)):
        ce |= set(session.scalars(select(CitedMark.entry_id).where(CitedMark.entry_id.in_(part))))
    for part in chunked(sorted(recipe_ids)):
        cr |= set(session.scalars(select(CitedMark.recipe_id).where(CitedMark.recipe_id.in_(part))))
    return ce, cr


def _entry_events(before: dict, after: dict, source_id, crawl_id, new_snap, is_cited, now) -> list[ChangeEvent]:
    """One event per entry at most. A recipe's quotable answer is one answer: its change goes on the
    recipe's entry that changed otherwise (or on its first entry), never on each of its entries."""
    diffs: dict[int, dict] = {}
    vanished: list[int] = []
    quotable: dict[str, dict] = {}
    for eid, old in before.items():
        new = after.get(eid)
        if new is None or old["gone"]:
            continue
        if new["gone"]:
            vanished.append(eid)
            continue
        d = _diff(old, new)
        q = {k: d.pop(k) for k in ("quotable_tps", "basis") if k in d}
        if q and new["recipe_id"]:
            quotable.setdefault(new["recipe_id"], q)
        elif q:
            d.update(q)
        if d:
            diffs[eid] = d
    for rid, q in quotable.items():
        members = sorted(eid for eid, st in after.items() if st["recipe_id"] == rid and not st["gone"] and eid in before)
        target = next((eid for eid in members if eid in diffs), members[0] if members else None)
        if target is not None:
            diffs.setdefault(target, {}).update(q)
    out = []
    for eid in vanished:
        old = before[eid]
        out.append(ChangeEvent(
            kind="vanished", scope="entry", source_id=source_id, entry_id=eid, recipe_id=old["recipe_id"],
            crawl_id=crawl_id, old_snapshot_id=old["snapshot_id"], new_snapshot_id=new_snap,
            old=_values(old) | {"label": old["label"], "provenance": old["provenance"]}, new=None, changes=None,
            detail="the entry is no longer on the page", cited=is_cited(eid, old["recipe_id"]), created_at=now))
    for eid, diff in sorted(diffs.items()):
        old, new = before[eid], after[eid]
        out.append(ChangeEvent(
            kind="changed", scope="entry", source_id=source_id, entry_id=eid, recipe_id=new["recipe_id"],
            crawl_id=crawl_id, old_snapshot_id=old["snapshot_id"],
            new_snapshot_id=new["snapshot_id"] if new["version_id"] != old["version_id"]
            else (new_snap or new["last_snapshot_id"]),
            old=_values(old) | {"label": old["label"], "provenance": old["provenance"]},
            new=_values(new) | {"label": new["label"], "provenance": new["provenance"]},
            changes=diff, detail=None, cited=is_cited(eid, new["recipe_id"]), created_at=now))
    return out


def record_changes(db: Database, source_id: int, crawl_id: int | None, before: dict, report) -> list[int]:
    """Compare the source's entries with ``before`` and store the events; returns their ids."""
    now = utcnow()
    with db.Session() as s:
        src = s.get(Source, source_id)
        new_snap = None
        if report.snapshot:
            new_snap = s.scalar(select(Snapshot.id).where(Snapshot.citation_id == report.snapshot))
        events: list[ChangeEvent] = []
        page_gone = report.http_status in PAGE_GONE or (
            report.capture_error is not None and "cannot resolve host name" in report.capture_error)
        live_before = {eid for eid, st in before["entries"].items() if not st["gone"]}
        after = _entry_states(s, source_id, live_before) if not page_gone else before["entries"]
        ce, cr = _cited(s, set(before["entries"]) | set(after),
                        {st["recipe_id"] for st in list(before["entries"].values()) + list(after.values())
                         if st["recipe_id"]})

        def is_cited(eid, rid):
            return eid in ce or (rid is not None and rid in cr)

        if page_gone:
            if src.vanished_at is None:
                live = {eid: st for eid, st in before["entries"].items() if not st["gone"]}
                why = (f"the page answered HTTP {report.http_status}" if report.http_status in PAGE_GONE
                       else f"the page could not be fetched: {report.capture_error}")
                events.append(ChangeEvent(
                    kind="vanished", scope="page", source_id=source_id, crawl_id=crawl_id,
                    old_snapshot_id=before["good_snapshot_id"], new_snapshot_id=new_snap,
                    old={"entries": len(live), "status": 200}, new={"status": report.http_status},
                    changes={"status": [200, report.http_status]}, detail=why + "; every earlier snapshot is kept",
                    cited=any(is_cited(eid, st["recipe_id"]) for eid, st in live.items()), created_at=now))
                src.vanished_at = now
        elif not report.failed or report.not_modified:
            if src.vanished_at is not None and not report.not_modified:
                events.append(ChangeEvent(
                    kind="returned", scope="page", source_id=source_id, crawl_id=crawl_id,
                    old_snapshot_id=_last_good(s, source_id, new_snap), new_snapshot_id=new_snap,
                    old=None, new={"status": report.http_status}, changes=None,
                    detail="the page answers again", cited=False, created_at=now))
                src.vanished_at = None
            if not report.not_modified:
                events += _entry_events(before["entries"], after, source_id, crawl_id, new_snap, is_cited, now)
        s.add_all(events)
        s.commit()
        return [e.id for e in events]


# -- cited marks -----------------------------------------------------------------------------------
def _mark(session: Session, how: str, *, entry_id=None, recipe_id=None, snapshot_id=None) -> None:
    now = utcnow()
    row = session.scalar(select(CitedMark).where(CitedMark.how == how, CitedMark.entry_id.is_(entry_id)
                                                 if entry_id is None else CitedMark.entry_id == entry_id,
                                                 CitedMark.recipe_id.is_(None) if recipe_id is None
                                                 else CitedMark.recipe_id == recipe_id))
    if row is not None:
        row.last_at = now
        return
    try:
        with session.begin_nested():
            session.add(CitedMark(how=how, entry_id=entry_id, recipe_id=recipe_id, snapshot_id=snapshot_id,
                                  first_at=now, last_at=now))
    except IntegrityError:
        pass


def mark_citation(session: Session, citation_id: str) -> int:
    """A citation of this snapshot was made (POST /api/citations): its entries are now cited."""
    snap = session.scalar(select(Snapshot).where(Snapshot.citation_id == citation_id))
    if snap is None:
        return 0
    target = snap.refers_to_id or snap.id
    via = select(EntryVersion.entry_id).where(EntryVersion.snapshot_id.in_({snap.id, target}))
    ids = list(session.scalars(select(Entry.id).where(or_(Entry.last_snapshot_id == snap.id, Entry.id.in_(via)))
                               .limit(1000)))
    for eid in ids:
        _mark(session, "citation", entry_id=eid, snapshot_id=snap.id)
    return len(ids)


class QuotableMarks:
    """Quotable answers served: recipe ids gathered in memory (the answer's hot path only adds to a
    set) and written by a background thread, once per recipe per process."""

    def __init__(self, db: Database):
        self.db = db
        self.seen: set[str] = set()
        self.pending: set[str] = set()
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None

    def note(self, recipe_id: str) -> None:
        if recipe_id in self.seen:
            return
        with self.lock:
            self.seen.add(recipe_id)
            self.pending.add(recipe_id)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="caveat-cited-marks", daemon=True)
                self.thread.start()
        self.wake.set()

    def flush(self) -> None:
        with self.lock:
            batch, self.pending = sorted(self.pending), set()
        if not batch:
            return
        try:
            with self.db.Session() as s:
                known = set(s.scalars(select(Recipe.recipe_id).where(Recipe.recipe_id.in_(batch))))
                for rid in batch:
                    if rid in known:
                        _mark(s, "quotable", recipe_id=rid)
                s.commit()
        except Exception:  # noqa: BLE001 - a mark lost is retried the next time the answer is served
            with self.lock:
                self.seen -= set(batch)

    def _run(self) -> None:
        while True:
            self.wake.wait(30)
            self.wake.clear()
            self.flush()


# -- reading ---------------------------------------------------------------------------------------
def _cite(settings, snaps: dict, snapshot_id: int | None, values: dict | None, changes: dict | None):

    cid = snaps.get(snapshot_id)
    if cid is None:
        return None
    prov = (values or {}).get("provenance") or {}
    for field in list(changes or {}) + ["headline_tps"]:
        if prov.get(field):
            return cite(settings, cid, prov[field])
    return absolute(settings, citation_path(cid))


def _withheld_side(snaps: dict, snapshot_id: int | None, access: str) -> dict:
    """A side read from a withdrawn or restricted capture: its tombstone's id, no figures, no quote."""
    cid = snaps.get(snapshot_id)
    return {"figures": None, "flags": None, "quotable": None, "snapshot": cid, "access": access,
            "citation": None, "withheld": True}


def event_json(settings, e: ChangeEvent, snaps: dict, names: dict, withheld: dict | None = None) -> dict:
    """One change event. ``withheld`` maps the ids of withdrawn or restricted snapshots to their access: a
    side read from one keeps its citation id only (no figures, flags, quote citation), and its values
    leave ``changes``."""
    withheld = withheld or {}

    def side(values, snapshot_id):
        if values is None and snapshot_id is None:
            return None
        if snapshot_id in withheld:
            return _withheld_side(snaps, snapshot_id, withheld[snapshot_id])
        body = {k: v for k, v in (values or {}).items() if k != "provenance"}
        body["snapshot"] = snaps.get(snapshot_id)
        body["citation"] = _cite(settings, snaps, snapshot_id, values, e.changes)
        return body

    changed = e.changes or {}
    hide_old, hide_new = e.old_snapshot_id in withheld, e.new_snapshot_id in withheld
    if hide_old or hide_new:
        changed = {k: [None if hide_old else v[0], None if hide_new else v[1]]
                   if isinstance(v, list) and len(v) == 2 else v for k, v in changed.items()}
    return {"id": e.id, "kind": e.kind, "scope": e.scope, "source": names.get(e.source_id),
            "source_id": e.source_id, "entry_id": e.entry_id, "recipe_id": e.recipe_id, "crawl_id": e.crawl_id,
            "cited": e.cited, "changes": changed, "detail": e.detail,
            "old": side(e.old, e.old_snapshot_id), "new": side(e.new, e.new_snapshot_id),
            "withheld": bool(hide_old or hide_new), "created_at": e.created_at}


def _filters(source: str | None, entry_id: int | None, recipe_id: str | None, kind: str | None,
             cited: bool | None, since: datetime | None, session: Session):
    conds = []
    if kind is not None:
        if kind not in KINDS:
            raise BadRequest(f"kind {kind!r}: use one of {', '.join(KINDS)}")
        conds.append(ChangeEvent.kind == kind)
    if source is not None:
        sid = session.scalar(select(Source.id).where(Source.name == source))
        conds.append(ChangeEvent.source_id == (sid if sid is not None else -1))
    if entry_id is not None:
        conds.append(ChangeEvent.entry_id == entry_id)
    if recipe_id is not None:
        conds.append(ChangeEvent.recipe_id == recipe_id)
    if cited is not None:
        conds.append(ChangeEvent.cited.is_(cited))
    if since is not None:
        conds.append(ChangeEvent.created_at >= since)
    return and_(*conds) if conds else None


def list_changes(session: Session, settings, *, source=None, entry_id=None, recipe_id=None, kind=None, cited=None,
                 since=None, limit: int = 50, offset: int = 0) -> tuple[list[dict], int]:
    """Newest first."""
    where = _filters(source, entry_id, recipe_id, kind, cited, since, session)
    q = select(ChangeEvent)
    cq = select(func.count(ChangeEvent.id))
    if where is not None:
        q, cq = q.where(where), cq.where(where)
    total = session.scalar(cq) or 0
    rows = list(session.scalars(q.order_by(ChangeEvent.id.desc()).limit(limit).offset(offset)))
    return events_json(session, settings, rows), total


def events_json(session: Session, settings, rows: list[ChangeEvent]) -> list[dict]:
    snap_ids = {i for e in rows for i in (e.old_snapshot_id, e.new_snapshot_id) if i}
    rows_s = session.execute(select(Snapshot.id, Snapshot.citation_id, Snapshot.access)
                             .where(Snapshot.id.in_(snap_ids))).all() if snap_ids else []
    snaps = {i: cid for i, cid, _ in rows_s}
    withheld = {i: access for i, _, access in rows_s if (access or PUBLIC) != PUBLIC}
    src_ids = {e.source_id for e in rows if e.source_id}
    names = dict(session.execute(select(Source.id, Source.name).where(Source.id.in_(src_ids))).all()) if src_ids else {}
    return [event_json(settings, e, snaps, names, withheld) for e in rows]


def _fmt(v) -> str:
    if isinstance(v, list):
        return ", ".join(map(str, v)) or "none"
    return "none" if v is None else str(v)


def title(ev: dict) -> str:
    who = ev["source"] or "a source"
    if ev["scope"] == "page":
        return f"{who}: the page {'vanished' if ev['kind'] == 'vanished' else 'answers again'}"
    label = (ev["old"] or ev["new"] or {}).get("label") or {}
    name = " / ".join(str(x) for x in (label.get("model"), label.get("hardware"), label.get("engine")) if x)
    if ev["kind"] == "vanished":
        return f"{who}: {name or 'an entry'} vanished"
    parts = [f"{k} {_fmt(a)} -> {_fmt(b)}" for k, (a, b) in list(ev["changes"].items())[:3]]
    return f"{who}: {name or 'an entry'} changed: " + "; ".join(parts)


def _iso(when: datetime) -> str:
    return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).astimezone(timezone.utc).isoformat()


def atom(settings, events: list[dict], *, self_url: str, base: str, created: datetime | None = None) -> bytes:
    """An Atom 1.0 feed (RFC 4287) of the events, newest first. ``updated`` is the newest event's time;
    for an empty feed, ``created`` (when the feed began: ``app.pages.changes.feed_created``)."""
    updated = events[0]["created_at"] if events else (created or utcnow())
    out = ['<?xml version="1.0" encoding="utf-8"?>', '<feed xmlns="http://www.w3.org/2005/Atom">',
           "<title>Caveat: changes to watched claims</title>", f"<id>{escape(base)}/changes.atom</id>",
           f'<link rel="self" type="application/atom+xml" href="{escape(self_url, {chr(34): "&quot;"})}"/>',
           f'<link rel="alternate" type="text/html" href="{escape(base)}/changes"/>',
           f"<updated>{_iso(updated)}</updated>", "<author><name>Caveat</name></author>",
           "<generator>Caveat</generator>"]
    for ev in events:
        link = f"{base}/entries/{ev['entry_id']}" if ev["entry_id"] else f"{base}/sources"
        rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(_fmt(a))}</td><td>{escape(_fmt(b))}</td></tr>"
                       for k, (a, b) in ev["changes"].items())
        cites = "".join(f'<p>{side}: <a href="{escape(ev[side]["citation"])}">{escape(ev[side]["citation"])}</a></p>'
                        for side in ("old", "new") if ev.get(side) and ev[side].get("citation"))
        html = (f"<p>{escape(ev['detail'] or '')}{' (cited)' if ev['cited'] else ''}</p>"
                + (f"<table><tr><th>what</th><th>old</th><th>new</th></tr>{rows}</table>" if rows else "") + cites)
        out += ["<entry>", f"<title>{escape(title(ev))}</title>", f"<id>{escape(base)}/api/changes/{ev['id']}</id>",
                f'<link rel="alternate" type="text/html" href="{escape(link)}"/>',
                f"<updated>{_iso(ev['created_at'])}</updated>",
                f'<category term="{ev["kind"]}"/>' + ('<category term="cited"/>' if ev["cited"] else ""),
                f'<content type="html">{escape(html)}</content>', "</entry>"]
    out.append("</feed>")
    return "\n".join(out).encode("utf-8")
