"""Schedules (issue 17): when each source is crawled again, politeness per host, and one crawl run.

``every`` is written ``90s``, ``30m``, ``6h``, ``1d``, ``1w`` or combined (``1h30m``); ``off`` removes the
schedule. A scheduled source is due at ``next_crawl_at``; each crawl moves it on by its interval, moved at
random by up to ``CAVEAT_SCHEDULE_JITTER`` of it, so sources added together spread out. A failure backs off
(1, 2, 4 ... minutes, never past the interval); a 429 or 503 with ``Retry-After`` waits as asked (at most
``CAVEAT_RETRY_AFTER_MAX``), and so does every other source on that host.

A due source is claimed with a compare-and-set on ``next_crawl_at`` (one winner among racing workers) and
becomes a ``queued`` crawl row; :func:`run_crawl` runs a queued row (from a job of app/watch/jobs.py, or
directly from ``caveat crawl``): waits its turn for the host, sends ``If-None-Match``/``If-Modified-Since``
when the last capture gave validators, crawls, records change events and schedules the next crawl.

Every function takes ``now`` so tests drive the clock.
"""

from __future__ import annotations

import logging
import random
import re
import time
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.claims.sources import UNITS, _aware, format_every, schedule_json  # noqa: F401  (schedule_json re-exported)
from app.config import Settings
from app.crawl.workflow import (LEASE, Progress, SourceReport, _alive_here, _noop, crawl_one, end_dead_crawls, owner_tag,
                                select_sources)
from app.db import Database
from app.errors import BadRequest
from app.models import Crawl, HostSlot, Snapshot, Source, utcnow
from app.storage.snapshots import load_record
from app.watch import changes, hooks
from app.watch.jobs import TASK_CRAWL, queue_for, register_handler

log = logging.getLogger("caveat.watch")
MIN_EVERY = 60
MAX_EVERY = 366 * 86400
_EVERY = re.compile(r"(\d+)\s*([smhdw])")
HOST_WAIT_MAX = 30.0  # seconds a crawl waits for its host's turn; longer, it is postponed instead
QUEUED = ("queued", "running")


def parse_every(text: str | None) -> int | None:
    """Seconds from ``6h``/``30m``/``1d``/``1h30m``; None for ``off``. A clear BadRequest otherwise."""
    if text is None:
        return None
    t = text.strip().lower().replace(" ", "")
    if t in ("off", "never", "none", ""):
        return None
    pos, total = 0, 0
    for m in _EVERY.finditer(t):
        if m.start() != pos:
            break
        total += int(m.group(1)) * UNITS[m.group(2)]
        pos = m.end()
    if pos != len(t) or total == 0:
        raise BadRequest(f"schedule {text!r} does not parse: write a number and a unit (s, m, h, d, w), e.g. "
                         "`--every 6h`, `--every 30m`, `--every 1h30m`, or `--every off`")
    if total < MIN_EVERY or total > MAX_EVERY:
        raise BadRequest(f"schedule {text!r} is {total:,} s: a source is crawled at most every minute and at least "
                         "once a year (60 s to 366 d)")
    return total


def jittered(every: int, jitter: float, rng: random.Random | None = None) -> timedelta:
    j = max(0.0, min(jitter, 0.5))
    factor = 1.0 + (rng or random).uniform(-j, j) if j else 1.0
    return timedelta(seconds=every * factor)


def set_schedule(session: Session, source: Source, every: int | None, *, now: datetime | None = None) -> Source:
    """Give ``source`` a schedule (None: none). Never crawled, or overdue under the new interval: due now."""
    now = now or utcnow()
    source.every_seconds = every
    if every is None:
        source.next_crawl_at = None
    else:
        last = _aware(source.last_crawl_at)
        source.next_crawl_at = now if last is None else max(now, last + timedelta(seconds=every))
    session.flush()
    return source


# -- queued crawls ---------------------------------------------------------------------------------
def pending_crawl(session: Session, source_id: int) -> Crawl | None:
    return session.scalar(select(Crawl).where(Crawl.source_id == source_id, Crawl.kind == "crawl",
                                              Crawl.status.in_(QUEUED)).order_by(Crawl.id.desc()).limit(1))


def queue_crawl(session: Session, source: Source, trigger: str, *, now: datetime | None = None) -> tuple[Crawl, bool]:
    """A queued crawl row for ``source``; an already queued or running one is returned instead (False)."""
    existing = pending_crawl(session, source.id)
    if existing is not None:
        return existing, False
    now = now or utcnow()
    crawl = Crawl(source_id=source.id, kind="crawl", status="queued", trigger=trigger, queued_at=now, started_at=now)
    session.add(crawl)
    session.flush()
    return crawl, True


def claim_due(db: Database, *, now: datetime | None = None, limit: int = 1000,
              each=None) -> list[tuple[int, int]]:
    """Claim every due source (compare-and-set on ``next_crawl_at``, so racing workers claim each once),
    move it to its next time and queue a crawl row; ``each(source_id, crawl_id)`` is called as each is
    claimed (the job is deferred at once). Returns ``[(source_id, crawl_id)]``."""
    now = now or utcnow()
    jitter = db.settings.schedule_jitter
    out = []
    with db.Session() as s:
        due = s.execute(select(Source.id, Source.next_crawl_at, Source.every_seconds)
                        .where(Source.removed_at.is_(None), Source.every_seconds.is_not(None),
                               Source.next_crawl_at.is_not(None), Source.next_crawl_at <= now)
                        .order_by(Source.next_crawl_at, Source.id).limit(limit)).all()
    for sid, at, every in due:
        with db.Session() as s:
            moved = s.execute(update(Source).where(Source.id == sid, Source.next_crawl_at == at)
                              .values(next_crawl_at=now + jittered(every, jitter)))
            if moved.rowcount != 1:
                s.rollback()
                continue
            src = s.get(Source, sid)
            crawl, new = queue_crawl(s, src, "schedule", now=now)
            s.commit()
            if new:
                out.append((sid, crawl.id))
                if each is not None:
                    each(sid, crawl.id)
    return out


def orphans(db: Database, older_than: timedelta | None = None) -> list[tuple[int, int]]:
    """Queued crawl rows (the in-process queue forgets its jobs when the server stops; a job that failed
    all its attempts before it started the crawl), to defer again; the queueing lock refuses a second
    job for a source that still has one waiting."""
    q = select(Crawl).where(Crawl.status == "queued")
    if older_than is not None:
        q = q.where(Crawl.queued_at < utcnow() - older_than)
    with db.Session() as s:
        return [(c.source_id, c.id) for c in s.scalars(q)]


# -- politeness ---------------------------------------------------------------------------------
def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()[:255]


def take_host_turn(db: Database, host: str, *, now: datetime | None = None, delay: float | None = None) -> float:
    """Reserve the next request slot for ``host`` across all workers; returns how long to wait for it."""
    delay = db.settings.host_delay if delay is None else delay
    if delay <= 0:  # no spacing asked for: only a hold (Retry-After) counts, read without a lock
        now_ = now or utcnow()
        with db.Session() as s:
            at = s.scalar(select(HostSlot.next_at).where(HostSlot.host == host))
        return max(0.0, (_aware(at) - now_).total_seconds()) if at is not None else 0.0
    for _ in range(5):
        now_ = now or utcnow()
        with db.Session() as s:
            slot = s.scalar(select(HostSlot).where(HostSlot.host == host).with_for_update())
            if slot is None:
                s.add(HostSlot(host=host, next_at=now_ + timedelta(seconds=delay)))
                try:
                    s.commit()
                except IntegrityError:
                    s.rollback()
                    continue
                return 0.0
            start = max(now_, _aware(slot.next_at))
            slot.next_at = start + timedelta(seconds=delay)
            s.commit()
            return (start - now_).total_seconds()
    return 0.0


def hold_host(db: Database, host: str, until: datetime) -> None:
    """A 429/503 asked us to wait: no request to ``host`` before ``until``, from any worker."""
    with db.Session() as s:
        slot = s.scalar(select(HostSlot).where(HostSlot.host == host).with_for_update())
        if slot is None:
            s.add(HostSlot(host=host, next_at=until))
        elif _aware(slot.next_at) < until:
            slot.next_at = until
        try:
            s.commit()
        except IntegrityError:
            s.rollback()


def retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    v = value.strip()
    if v.isdigit():
        return float(v)
    try:
        when = parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - now).total_seconds())


# -- one crawl -------------------------------------------------------------------------------------
def _validators(session: Session, src: Source) -> list[tuple[str, str]] | None:
    """``If-None-Match``/``If-Modified-Since`` from the last good capture, when it gave validators."""
    if not (src.etag or src.last_modified):
        return None
    headers = []
    if src.etag:
        headers.append(("If-None-Match", src.etag))
    if src.last_modified:
        headers.append(("If-Modified-Since", src.last_modified))
    return headers


def _response_headers(db: Database, citation_id: str | None) -> tuple[Snapshot | None, dict]:
    if not citation_id:
        return None, {}
    with db.Session() as s:
        snap = s.scalar(select(Snapshot).where(Snapshot.citation_id == citation_id))
        if snap is None:
            return None, {}
        try:
            stored = load_record(db.settings, snap, session=s)
        except Exception:  # noqa: BLE001 - headers are a nicety; the crawl's outcome stands
            return snap, {}
        items = stored.headers.items() if hasattr(stored.headers, "items") else stored.headers
        return snap, {str(k).lower(): v for k, v in items}


def run_crawl(db: Database, crawl_id: int | None, source_id: int, *, trigger: str = "cli", queue=None,
              now=None, sleep=time.sleep, progress=None, polite: bool = True):
    """Run one crawl of ``source_id``: the queued row ``crawl_id`` (a new row when it is None, or when that
    row was interrupted and this is its retry). Returns the crawl's ``SourceReport``, or None when there was
    nothing to do (already done, source removed, another process runs it)."""
    now_fn = now or utcnow
    settings = db.settings
    end_dead_crawls(db)
    with db.Session() as s:
        src = s.get(Source, source_id)
        crawl = s.get(Crawl, crawl_id) if crawl_id is not None else None
        if crawl is not None and crawl.status != "queued":
            if crawl.status == "running" and _alive_here(crawl.owner) is not False and \
                    (_aware(crawl.lease_until) or now_fn()) > now_fn():
                return None  # another process is running it
            if not (crawl.error or "").startswith("interrupted"):
                return None  # it ran already (a job delivered twice)
            later = s.execute(select(Crawl.status, Crawl.error).where(
                Crawl.source_id == crawl.source_id, Crawl.id > crawl.id, Crawl.trigger == "retry",
                Crawl.status != "queued")).all()
            if any(st != "failed" or not (err or "").startswith("interrupted") for st, err in later):
                return None  # an earlier delivery of this job retried it already (its worker died after)
            crawl = None  # the retry of an interrupted crawl: a row of its own
        if src is None or src.removed_at is not None:
            if crawl is not None:
                crawl.status, crawl.finished_at = "skipped", now_fn()
                crawl.error = "the source was removed before its crawl started"
                s.commit()
            return None
        if crawl is None and crawl_id is None:  # crawl now, here (`caveat crawl`)
            pending = pending_crawl(s, src.id)
            if pending is not None and pending.status == "running" and _alive_here(pending.owner) is not False \
                    and (_aware(pending.lease_until) or now_fn()) > now_fn():
                return None  # a worker is crawling it right now: never two crawls of one source at once
            if pending is not None and pending.status == "queued":
                crawl = pending  # run the queued crawl here; its job will find it taken
        if crawl is None:
            crawl = Crawl(source_id=src.id, kind="crawl", status="queued", trigger=trigger if crawl_id is None
                          else "retry", queued_at=now_fn(), started_at=now_fn())
            s.add(crawl)
            s.commit()
        crawl_id = crawl.id
        # take the row: of two processes given the same queued crawl, exactly one runs it
        taken = s.execute(update(Crawl).where(Crawl.id == crawl_id, Crawl.status == "queued")
                          .values(status="running", owner=owner_tag(), lease_until=now_fn() + LEASE,
                                  started_at=now_fn()))
        if taken.rowcount != 1:
            s.rollback()
            return None
        s.commit()
        headers = _validators(s, src)
        s.expunge(src)
    host = host_of(src.url)
    wait = take_host_turn(db, host, now=now_fn()) if polite else 0.0
    if wait > HOST_WAIT_MAX:  # the host asked us to hold off (Retry-After): try again when it allows
        with db.Session() as s:
            c, source = s.get(Crawl, crawl_id), s.get(Source, source_id)
            c.status, c.finished_at = "postponed", now_fn()
            c.error = f"{host} asked for a pause; the crawl is postponed by {wait:.0f} s"
            if source.every_seconds:
                source.next_crawl_at = now_fn() + timedelta(seconds=wait)
            s.commit()
        return None
    if wait > 0:
        sleep(wait)
    before = changes.state_before(db, source_id)
    report = crawl_one(db, settings, src, progress or (lambda *a: None), crawl_id=crawl_id, request_headers=headers)
    after_crawl(db, source_id, report, now=now_fn())
    events = changes.record_changes(db, source_id, crawl_id, before, report)
    if events:
        hooks.queue_deliveries(db, events, queue)
    return report


def after_crawl(db: Database, source_id: int, report, *, now: datetime) -> None:
    """Keep the validators of a good capture, and schedule the next crawl (backoff, Retry-After)."""
    snap, headers = _response_headers(db, report.snapshot)
    status = report.http_status
    host_wait = None
    if status in (429, 503):
        host_wait = retry_after(headers.get("retry-after"), now)
    with db.Session() as s:
        src = s.get(Source, source_id)
        if status == 200 and not report.failed:
            src.etag = headers.get("etag")
            src.last_modified = headers.get("last-modified")
        if report.failed:
            src.failures = (src.failures or 0) + 1
        elif not report.failed:
            src.failures = 0
        if src.every_seconds:
            cap = db.settings.retry_after_max
            if host_wait is not None:
                wait = min(max(host_wait, 1.0), cap)
            elif report.failed:
                wait = min(60.0 * 2 ** min(src.failures - 1, 20), float(src.every_seconds), cap)
            else:
                wait = None
            if wait is not None:
                src.next_crawl_at = now + timedelta(seconds=wait)
            elif src.next_crawl_at is None or _aware(src.next_crawl_at) <= now:
                src.next_crawl_at = now + jittered(src.every_seconds, db.settings.schedule_jitter)
        s.commit()
    if host_wait is not None:
        hold_host(db, host_of(report.url), now + timedelta(seconds=min(host_wait, db.settings.retry_after_max)))


# -- crawls asked for now (`caveat crawl`) -----------------------------------------------------------
def crawl(db: Database, settings: Settings, names: list[str] | None = None,
          progress: Progress = _noop) -> list[SourceReport]:
    """Crawl the sources now, one after another, through the same run as a queued crawl
    (``schedule.run_crawl``: conditional requests, change events, the next scheduled time), without
    waiting for the host's turn: the user asked for it now."""
    return [crawl_now(db, settings, src, progress) for src in select_sources(db, names)]


def crawl_now(db: Database, settings: Settings, src: Source, progress: Progress = _noop) -> SourceReport:
    """One source crawled now in this process (see :func:`crawl`)."""
    report = run_crawl(db, None, src.id, trigger="cli", progress=progress, polite=False)
    if report is None:  # another process is crawling it right now
        report = SourceReport(src.name, src.url, kind=src.kind, status="failed",
                              error="another process is crawling this source right now; try again when it ends")
    return report


def _crawl_job(db: Database, crawl_id: int, source_id: int) -> None:
    run_crawl(db, crawl_id, source_id, trigger="schedule", queue=queue_for(db))


register_handler(TASK_CRAWL, _crawl_job)  # the queue runs a crawl job through this module
