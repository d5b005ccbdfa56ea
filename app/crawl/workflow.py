"""Crawl and reparse: capture each source, parse the archived snapshot, store the claims, audit them.

Nothing here aborts a run. Each source runs in its own transactions, and whatever goes wrong with it
(a refused fetch, an error page, a parser crash, a page where nothing parses) is recorded on its
``Crawl`` row and on the ``Source`` (``last_status``/``last_error``/``last_warnings``) before the next
source starts. The snapshot is kept in every case: capture commits it before parsing begins.

Statuses: ``ok``, ``warnings`` (stored, with per-field parse warnings), ``empty`` (archived, but
nothing parsed; existing entries are left as they were), ``failed`` (not captured, error page, or
parser/store error). ``empty`` and ``failed`` count as failures for the exit code.

``reparse`` re-reads every archived snapshot of a source in time order without fetching anything
and writes a new version only where the parse differs from what the entry held at that snapshot.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from datetime import timedelta, timezone
from typing import Callable

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import Database
from app.errors import BadRequest, NotFound
from app.db import chunked
from app.models import Crawl, Entry, Snapshot, Source, utcnow
from app.audit.engine import audit_entries
from app.capture.http import capture_urls
from app.claims.store import SourceState, StoreSummary, store_parse
from app.storage.indexing import source_metadata
from app.storage.snapshots import load_record
from app.claims.sources import get_source, list_sources, set_guessed_kind
from app.claims.reader import add_proposals
import scrapers
from concurrent.futures import ProcessPoolExecutor
from app.audit.engine import apply_audit
from archive.prepare import _context
from app.audit.engine import plan_entries
from app.capture.browser import capture_browser_urls, named_sources

FAILED = ("failed", "empty")
MAX_KEPT_WARNINGS = 200

Progress = Callable[[str, "SourceReport"], None]


@dataclass
class SourceReport:
    name: str
    url: str
    status: str = "running"
    kind: str | None = None
    kind_note: str | None = None   # "guessed html (content type text/html)"
    snapshot: str | None = None    # citation id of the snapshot parsed last
    snapshots: int = 0
    error: str | None = None
    summary: StoreSummary = field(default_factory=StoreSummary)
    crawl_id: int | None = None
    http_status: int | None = None
    not_modified: bool = False
    capture_error: str | None = None

    @property
    def failed(self) -> bool:
        return self.status in FAILED


def _noop(event: str, report: SourceReport) -> None:
    pass


def parse_snapshot(session: Session, source: Source, snapshot: Snapshot, stored, report: SourceReport,
                   settings: Settings | None = None):
    """Parse one archived response with the source's kind, guessing (and saving) the kind if unset; with
    ``settings``, the learned reader's proposals too (``result.proposals``, app/claims/reader.py)."""
    content_type = _content_type(stored)
    if source.kind is None:
        kind, reason = scrapers.guess_kind(stored.body, content_type)
        set_guessed_kind(session, source, kind)
        report.kind_note = f"guessed kind {kind} ({reason})"
    report.kind = source.kind
    result = scrapers.parse(stored.body, kind=source.kind, content_type=content_type, url=snapshot.url)
    if settings is not None:
        add_proposals(settings, result, kind=source.kind, content_type=content_type, url=snapshot.url)
    return result


def _content_type(stored) -> str | None:
    headers = getattr(stored, "headers", None) or {}
    items = headers.items() if hasattr(headers, "items") else headers
    for k, v in items:
        if str(k).lower() == "content-type":
            return v
    return getattr(stored, "mime", None)


def _archive_warnings(stored) -> list[str]:
    out = [f"archive: {w}" for w in getattr(stored, "warnings", None) or []]
    if getattr(stored, "fixity", "ok") != "ok":
        out.append(f"archive: fixity {stored.fixity}: {stored.fixity_detail}")
    return out


AUDIT_BATCH = 5000  # entries audited between two checkpoints (whole recipes per batch)


def _audit_batches(session: Session, entry_ids: list[int]) -> list[list[int]]:
    """The entries in batches of about AUDIT_BATCH that never split a recipe (a recipe is audited whole)."""
    by_recipe: dict[object, list[int]] = {}
    for part in chunked(sorted(set(entry_ids)), 500):
        for eid, rid in session.execute(select(Entry.id, Entry.recipe_id).where(Entry.id.in_(part))):
            by_recipe.setdefault(rid or ("entry", eid), []).append(eid)
    batches, current = [], []
    for ids in by_recipe.values():
        if current and len(current) + len(ids) > AUDIT_BATCH:
            batches.append(current)
            current = []
        current += ids
    if current:
        batches.append(current)
    return batches


AUDIT_PARALLEL_MIN = 20_000  # entries of one page from which other processes audit some of its batches


def _audit(session: Session, settings: Settings, entry_ids: list[int], report: SourceReport,
           checkpoint=None) -> None:
    if not entry_ids:
        return
    try:
        batches = _audit_batches(session, entry_ids) if len(entry_ids) > AUDIT_BATCH else [entry_ids]
        processes = _audit_processes(settings, len(entry_ids), len(batches))
        if processes > 1 and checkpoint is not None:
            checkpoint()    # what the page stored is committed: the other processes read it
            _audit_in_processes(session, settings, batches, processes, checkpoint)
            return
        page_cache: dict = {}   # the page is stored whole before its audit: its single-stream count is read once
        for n, batch in enumerate(batches):
            with session.begin_nested():
                audit_entries(session, settings, batch, page_cache=page_cache)
            if checkpoint is not None and n + 1 < len(batches):
                checkpoint()
    except Exception as exc:  # an audit bug must not lose the parsed claims, but the run is not a success
        session.expire_all()    # audit values given to loaded rows may not have been written
        report.summary.warnings.append(f"audit: {type(exc).__name__}: {exc}; run `caveat reparse` after fixing")
        report.status = "failed"


def _audit_processes(settings: Settings, n_entries: int, n_batches: int) -> int:
    wanted = settings.audit_processes
    if wanted is None:
        wanted = min(2, os.cpu_count() or 1)
    if n_entries < AUDIT_PARALLEL_MIN or n_batches < 2:
        return 1
    return max(1, min(wanted, n_batches))


def _audit_in_processes(session: Session, settings: Settings, batches: list[list[int]], processes: int,
                        checkpoint) -> None:
    """Audit a long page's batches in this process and ``processes - 1`` others at once. The others only
    read and compute (an audit plan: plain rows); this process writes every plan, so there is one writer,
    as SQLite needs, and batches never split a recipe, so no recipe is planned twice. Each batch commits
    on its own; a batch that fails raises here, and what committed before it stays."""


    # this process also writes the others' plans: it takes fewer batches (2 of 5 with one other process)
    share = 1.0 / (processes + 0.5)
    mine, theirs = [], []
    for i, b in enumerate(batches):
        (mine if len(mine) < share * (i + 1) else theirs).append(b)
    with ProcessPoolExecutor(max_workers=processes - 1, mp_context=_context(), initializer=_audit_worker_init,
                             initargs=(settings,)) as pool:
        futures = [pool.submit(_audit_worker, b) for b in theirs]
        page_cache: dict = {}
        for batch in mine:
            with session.begin_nested():
                audit_entries(session, settings, batch, page_cache=page_cache)
            checkpoint()
            while futures and futures[0].done():
                _apply_planned(session, futures.pop(0).result(), apply_audit, checkpoint)
        for f in futures:
            _apply_planned(session, f.result(), apply_audit, checkpoint)


def _apply_planned(session: Session, plan: dict, apply_audit, checkpoint) -> None:
    with session.begin_nested():
        apply_audit(session, plan)
    checkpoint()


_WORKER: dict = {}


def _audit_worker_init(settings: Settings) -> None:
    _WORKER.clear()
    _WORKER.update(db=Database(settings), settings=settings, page_cache={})


def _audit_worker(batch: list[int]) -> dict:
    """The plan of one batch, from reads only (the session is rolled back: this process never writes)."""
    s = _WORKER["db"].Session()
    try:
        return plan_entries(s, _WORKER["settings"], batch, page_cache=_WORKER["page_cache"])
    finally:
        s.rollback()
        s.close()


def _finish(db: Database, source_id: int, crawl_id: int, report: SourceReport, snapshot_id: int | None) -> None:
    s = report.summary
    if report.status == "running":
        report.status = "warnings" if s.warnings else "ok"
    with db.session() as session:
        crawl = session.get(Crawl, crawl_id)
        crawl.status, crawl.finished_at, crawl.error = report.status, utcnow(), report.error
        crawl.snapshot_id = snapshot_id
        crawl.entries_new, crawl.entries_changed, crawl.entries_unchanged = s.new, s.changed, s.unchanged
        crawl.warnings = s.warnings[:MAX_KEPT_WARNINGS] or None
        if getattr(report, "not_modified", False):
            crawl.conditional = "not-modified"
        src = session.get(Source, source_id)
        src.last_crawl_at, src.last_status, src.last_error = utcnow(), report.status, report.error
        src.last_warnings = s.warnings[:MAX_KEPT_WARNINGS] or None


LEASE = timedelta(minutes=30)  # a running crawl renews its lease at each stage; past it, it is presumed dead


def owner_tag() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive_here(owner: str | None) -> bool | None:
    """Whether the process named by ``owner`` still runs (None when it ran on another machine)."""
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_dead_crawls(db: Database) -> int:
    """Mark failed every crawl row left ``running`` by a process that is gone: one of this machine whose
    process no longer exists, or any whose lease expired. Returns how many were ended."""
    now = utcnow()
    ended = 0
    with db.session() as session:
        for crawl in session.scalars(select(Crawl).where(Crawl.status == "running")):
            alive = _alive_here(crawl.owner)
            lease = crawl.lease_until
            if lease is not None and lease.tzinfo is None:
                lease = lease.replace(tzinfo=timezone.utc)
            if alive is False:
                why = f"the process running it ({crawl.owner}) ended before it finished"
            elif alive is None and (lease is None or lease < now):
                why = f"its lease expired at {lease.isoformat() if lease else 'an unknown time'} ({crawl.owner or 'no owner recorded'})"
            else:
                continue
            crawl.status, crawl.finished_at = "failed", now
            crawl.error = f"interrupted: {why}; found at the next start. The snapshot, if any, is kept."
            ended += 1
    return ended


def _renew(db: Database, crawl_id: int) -> None:
    with db.session() as session:
        session.execute(update(Crawl).where(Crawl.id == crawl_id).values(lease_until=utcnow() + LEASE))


def _start(db: Database, source: Source, kind: str, crawl_id: int | None = None) -> int:
    end_dead_crawls(db)
    with db.session() as session:
        if crawl_id is not None:  # a queued crawl (app/watch/jobs.py) taken by this process
            crawl = session.get(Crawl, crawl_id)
            crawl.status, crawl.owner, crawl.started_at = "running", owner_tag(), utcnow()
            crawl.lease_until = utcnow() + LEASE
            return crawl.id
        crawl = Crawl(source_id=source.id, kind=kind, status="running", owner=owner_tag(),
                      lease_until=utcnow() + LEASE)
        session.add(crawl)
        session.flush()
        return crawl.id


def crawl_one(db: Database, settings: Settings, source: Source, progress: Progress = _noop, *,
              crawl_id: int | None = None, request_headers: list[tuple[str, str]] | None = None) -> SourceReport:
    """Crawl one source. ``crawl_id``: a queued crawl row to run (else one is made); ``request_headers``:
    conditional-request validators; a 304 answer is archived and counts as unchanged (nothing parsed)."""
    report = SourceReport(source.name, source.url, kind=source.kind)
    crawl_id = _start(db, source, "crawl", crawl_id)
    report.crawl_id = crawl_id
    snapshot_id = None
    try:
        progress("capture", report)
        info = source_metadata(source.name, source.url, source.kind, getattr(source, "key_columns", None))
        if getattr(source, "browser", False):  # a JavaScript-rendered page: the DOM record is parsed (issue 16)

            with db.session() as s:
                named = named_sources(s, source)
            result = capture_browser_urls(db, [source.url], source_id=source.id,
                                          source_info=info + b"caveat-source-browser: 1\r\n", sources_by_url=named)[0]
            behind = sorted({named[r.url] for r in getattr(result, "responses", []) if r.url in named})
        else:
            result = capture_urls(db, [source.url], source_id=source.id, source_info=info,
                                  request_headers={source.url: request_headers} if request_headers else None)[0]
        snap = result.snapshot
        snapshot_id = snap.id if snap is not None else None
        report.snapshot = snap.citation_id if snap is not None else None
        if result.error or snap is None:
            report.capture_error = result.error or "nothing archived"
            report.status, report.error = "failed", f"capture failed: {result.error or 'nothing archived'}"
            return report
        status = result.status or snap.status
        report.http_status = status
        if status == 304 and request_headers:
            report.not_modified = True  # the page is unchanged since the last crawl: entries stay as they are
            return report
        if status is not None and status >= 400:
            report.status = "failed"
            report.error = (f"the server answered HTTP {status}; the response is archived as {snap.citation_id} "
                            f"but was not parsed. Check the URL with `caveat source list`.")
            return report
        report.snapshots = 1
        _renew(db, crawl_id)
        progress("parse", report)
        # Long pages commit in batches (store_parse and the audit call ``checkpoint``), so one page never
        # holds the database's write lock for long; the lease is renewed at each checkpoint.
        session = db.Session()

        def checkpoint() -> None:
            session.commit()
            _renew(db, crawl_id)

        try:
            src = session.get(Source, source.id)
            snapshot = session.get(Snapshot, snap.id)
            stored = load_record(settings, snapshot, session=session)
            if not stored.decoded:
                report.status = "failed"
                report.error = (f"snapshot {snap.citation_id} is archived (and served raw), but its body was not "
                                f"parsed: {'; '.join(stored.warnings)}")
                return report
            parsed = parse_snapshot(session, src, snapshot, stored, report, settings)
            report.summary = store_parse(session, src, snapshot, parsed, parser=parsed.kind, checkpoint=checkpoint)
            report.summary.warnings[:0] = _archive_warnings(stored)
            _audit(session, settings, report.summary.entry_ids, report, checkpoint)
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()
        if getattr(source, "browser", False) and behind:  # the JSON behind the page, named by sources of its own
            for sid in behind:
                with db.session() as s:
                    other = s.get(Source, sid)
                    s.expunge(other)
                reparse_one(db, settings, other)
        if report.summary.parsed == 0:
            report.status = "empty"
            report.error = (f"nothing parsed as {report.kind} from snapshot {report.snapshot}; it is kept. "
                            f"If the kind is wrong, re-add the source with --kind and run `caveat reparse`.")
            if report.summary.proposed:
                report.error += (f" The learned reader proposes {report.summary.proposed} figure(s) for review "
                                 "(GET /api/entries?status=proposed).")
    except Exception as exc:  # one source's failure never stops the others
        report.status, report.error = "failed", f"{type(exc).__name__}: {exc}"
        if report.snapshot:
            report.error += f" (snapshot {report.snapshot} is kept; `caveat reparse` retries it)"
    finally:
        _finish(db, source.id, crawl_id, report, snapshot_id)
        progress("done", report)
    return report


def select_sources(db: Database, names: list[str] | None) -> list[Source]:
    with db.session() as session:
        if not names:
            return list_sources(session)
        found, missing = [], []
        for n in dict.fromkeys(names):
            try:
                found.append(get_source(session, n))
            except NotFound:
                missing.append(n)
        if missing:
            raise NotFound(f"No source named {', '.join(repr(m) for m in missing)}. "
                           f"`caveat source list` shows the sources; `caveat source add NAME URL` adds one.")
        return found


def _archived(session: Session, source_id: int, browser: bool = False) -> list[Snapshot]:
    q = (
        select(Snapshot)
        .where(Snapshot.source_id == source_id, Snapshot.redirect_to.is_(None),
               or_(Snapshot.status.is_(None), Snapshot.status < 300))
        .order_by(Snapshot.timestamp, Snapshot.id)
    )
    if browser:  # a browser capture's rendered DOM, not the scripts and API responses stored beside it
        q = q.where(Snapshot.record_type == "resource", Snapshot.url.like("urn:dom:%"))
    else:
        q = q.where(Snapshot.record_type != "resource")
    return list(session.scalars(q))


def reparse_one(db: Database, settings: Settings, source: Source, progress: Progress = _noop) -> SourceReport:
    report = SourceReport(source.name, source.url, kind=source.kind)
    crawl_id = _start(db, source, "reparse")
    last_id = None
    try:
        progress("parse", report)
        with db.session() as session:
            src = session.get(Source, source.id)
            state = SourceState.load(session, src.id, all_versions=True)
            seen: list[int] = []
            for snapshot in _archived(session, src.id, bool(getattr(src, "browser", False))):
                report.snapshots += 1
                try:
                    stored = load_record(settings, snapshot, session=session)
                    if not stored.decoded:
                        report.summary.warnings.append(f"snapshot {snapshot.citation_id}: not parsed: "
                                                       f"{'; '.join(stored.warnings)}")
                        continue
                    with session.begin_nested():
                        parsed = parse_snapshot(session, src, snapshot, stored, report, settings)
                        one = store_parse(session, src, snapshot, parsed, parser=parsed.kind, state=state)
                except Exception as exc:
                    report.summary.warnings.append(f"snapshot {snapshot.citation_id}: {type(exc).__name__}: {exc}")
                    state = SourceState.load(session, src.id, all_versions=True)
                    continue
                one.warnings = [f"{snapshot.citation_id}: {w}" for w in _archive_warnings(stored) + one.warnings]
                report.summary.add(one)
                if one.parsed:
                    seen = one.entry_ids
                last_id, report.snapshot = snapshot.id, snapshot.citation_id
            _audit(session, settings, seen, report)
        if report.snapshots == 0:
            report.status, report.error = "empty", "no archived snapshots yet; run `caveat crawl` first."
        elif report.summary.parsed == 0:
            report.status, report.error = "empty", f"nothing parsed from {report.snapshots} snapshot(s)."
    except Exception as exc:
        report.status, report.error = "failed", f"{type(exc).__name__}: {exc}"
    finally:
        _finish(db, source.id, crawl_id, report, last_id)
        progress("done", report)
    return report


def parse_archived(session: Session, settings: Settings, snapshot: Snapshot):
    """A snapshot parsed by its source's parser, as stored (``.text``: what every selector points into)."""
    src = session.get(Source, snapshot.source_id) if snapshot.source_id is not None else None
    if src is None:
        raise NotFound(f"snapshot {snapshot.citation_id} belongs to no source, so nothing is parsed from it")
    stored = load_record(settings, snapshot, session=session)
    if not stored.decoded:
        raise BadRequest(f"snapshot {snapshot.citation_id} could not be decoded: {'; '.join(stored.warnings)}")
    return parse_snapshot(session, src, snapshot, stored, SourceReport(src.name, src.url))


def reapply_latest(db: Database, settings: Settings, source_id: int) -> SourceReport:
    """Store the newest archived snapshot of a source again (with its corrections) and audit what it holds:
    what a new correction needs at once. Older snapshots' versions follow at the next ``caveat reparse``."""
    with db.session() as session:
        src = session.get(Source, source_id)
        report = SourceReport(src.name, src.url, kind=src.kind)
        snaps = _archived(session, src.id, bool(getattr(src, "browser", False)))
        if not snaps:
            return report
        stored = load_record(settings, snaps[-1], session=session)
        parsed = parse_snapshot(session, src, snaps[-1], stored, report, settings)
        report.summary = store_parse(session, src, snaps[-1], parsed, parser=parsed.kind)
        _audit(session, settings, report.summary.entry_ids, report)
    return report


def reparse(db: Database, settings: Settings, name: str | None = None,
            progress: Progress = _noop) -> list[SourceReport]:
    return [reparse_one(db, settings, src, progress) for src in select_sources(db, [name] if name else None)]
