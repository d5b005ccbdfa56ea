"""Running the job queue: ``caveat worker`` on PostgreSQL, the in-process scheduler under ``caveat serve``
on SQLite, and their housekeeping (due sources, orphaned crawls and deliveries, stalled jobs, the CDXJ).
The queue itself is ``app.watch.jobs``; the jobs it runs are registered by ``schedule`` and ``hooks``."""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
import socket
import threading

from sqlalchemy import select

from app.crawl.workflow import end_dead_crawls
from app.db import Database
from app.errors import BadRequest
from app.models import HookDelivery, Source, utcnow
from app.storage.uploads import Uploader
from app.storage.warcfiles import check_cdxj
from app.watch import hooks  # noqa: F401  (registers the delivery job)
from app.watch.jobs import (HEARTBEAT, ORPHAN_AFTER, STALLED_AFTER, PgQueue, build_app, conninfo, ensure_schema, is_postgres,
                            queue_for, log)
from app.watch.schedule import claim_due, orphans, queue_crawl

def enqueue(db: Database, source, trigger: str = "manual") -> tuple[int, bool]:
    """Crawl now: a queued crawl row for ``source`` and its job, returned at once (an already queued or
    running crawl of it is returned instead, with False)."""
    with db.Session() as s:
        crawl, new = queue_crawl(s, s.merge(source), trigger)
        s.commit()
        cid = crawl.id
    if new:
        queue_for(db).defer_crawl(cid, source.id)
    return cid, new


def housekeeping(db: Database, queue=None, *, now=None) -> dict:
    """One round: queue the due sources, re-defer orphaned crawls and the pending deliveries no job
    holds (made by `caveat crawl`, or left by a worker that stopped)."""
    queue = queue or queue_for(db)
    claimed = claim_due(db, now=now, each=lambda sid, cid: queue.defer_crawl(cid, sid))
    stale = orphans(db, older_than=ORPHAN_AFTER)
    for sid, cid in stale:
        queue.defer_crawl(cid, sid)
    return {"queued": len(claimed), "requeued": len(stale), "deliveries": redefer_deliveries(db, queue)}


def redefer_deliveries(db: Database, queue) -> int:
    """Defer every pending delivery that no job waits or runs for; the attempt claim in
    ``hooks.deliver`` keeps a delivery deferred twice within its attempts."""
    held = queue.delivery_jobs()
    with db.Session() as s:
        pending = list(s.scalars(select(HookDelivery.id).where(HookDelivery.status == "pending")))
    orphaned = [d for d in pending if d not in held]
    for did in orphaned:
        queue.defer_delivery(did)
    return len(orphaned)


def redefer_orphans(db: Database, queue) -> int:
    """At the in-process queue's start: the queued crawls and pending deliveries its memory forgot."""

    n = 0
    for sid, cid in orphans(db):
        queue.defer_crawl(cid, sid)
        n += 1
    return n + redefer_deliveries(db, queue)


class Scheduler:
    """``caveat serve`` on SQLite: due sources fire in-process every ``CAVEAT_WORKER_POLL`` seconds."""

    def __init__(self, db: Database):
        self.db = db
        self.stop = threading.Event()
        self.queue = queue_for(db)
        redefer_orphans(db, self.queue)
        self.thread = threading.Thread(target=self._run, name="caveat-schedule", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                housekeeping(self.db, self.queue)
            except Exception:  # noqa: BLE001 - logged; the next round tries again
                log.exception("scheduling round failed")
            self.stop.wait(self.db.settings.worker_poll)


# -- caveat worker (PostgreSQL) ----------------------------------------------------------------------
def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return (s or "host")[:40]


def take_series(settings) -> tuple[str, object]:
    """A WARC series name free on this machine, ``w_<host>_<n>``, held (a lock file) while the worker runs;
    a restarted worker takes the same lowest free number, so it repairs its own series first."""
    settings.warc_dir.mkdir(parents=True, exist_ok=True)
    host = _slug(socket.gethostname())
    for n in range(1, 1000):
        f = open(settings.warc_dir / f".worker-{host}-{n}.slot", "a+")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            continue
        return f"w_{host}_{n}", f
    raise RuntimeError("no free worker slot (999 workers on this machine?)")


def _jobs_busy(db: Database) -> bool:
    with db.engine.connect() as conn:
        return bool(conn.exec_driver_sql(
            "SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')").scalar())


def _idle(db: Database) -> bool:
    """Nothing left: no job waiting or running, no queued crawl, no source due."""
    if _jobs_busy(db) or orphans(db):
        return False
    with db.Session() as s:
        due = s.scalar(select(Source.id).where(Source.removed_at.is_(None), Source.every_seconds.is_not(None),
                                               Source.next_crawl_at <= utcnow()).limit(1))
    return due is None


def _requeue_orphans_now(db: Database, queue) -> None:
    """With no job waiting or running, every queued crawl has lost its job (it failed every attempt before
    the crawl started, or went with a killed worker): defer it again now, not after ``ORPHAN_AFTER``, so
    `caveat worker --once` leaves no crawl behind."""
    if not _jobs_busy(db):
        for sid, cid in orphans(db):
            queue.defer_crawl(cid, sid)


async def _housekeeper(app, db: Database, queue: PgQueue, stalled_after: float, stop: asyncio.Event, say,
                       on_idle=None) -> None:
    idle_rounds = 0
    while not stop.is_set():
        try:
            stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stalled_after)
            for job in stalled:
                say(f"job {job.id} ({job.task_name}) lost its worker; it runs again")
                await app.job_manager.retry_job(job)
            if stalled:
                await asyncio.to_thread(end_dead_crawls, db)
            await asyncio.to_thread(check_cdxj, db)
            done = await asyncio.to_thread(housekeeping, db, queue)
            if done["queued"]:
                say(f"queued {done['queued']} due source(s)")
            if on_idle is not None:
                await asyncio.to_thread(_requeue_orphans_now, db, queue)
                idle_rounds = idle_rounds + 1 if await asyncio.to_thread(_idle, db) else 0
                if idle_rounds >= 2:
                    on_idle()
                    return
        except Exception:  # noqa: BLE001
            log.exception("housekeeping round failed")
        try:
            await asyncio.wait_for(stop.wait(), timeout=db.settings.worker_poll)
        except asyncio.TimeoutError:
            pass


def run_worker(db: Database, *, concurrency: int = 1, stalled_after: float = STALLED_AFTER,
               heartbeat: float = HEARTBEAT, say=print, once: bool = False) -> None:
    """Run jobs until SIGINT/SIGTERM (``once``: until the queue is empty)."""
    from procrastinate import PsycopgConnector  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

    if not is_postgres(db):
        raise BadRequest("`caveat worker` needs PostgreSQL (CAVEAT_DATABASE_URL=postgresql+psycopg2://...): "
                         "on the embedded SQLite default, `caveat serve` runs due crawls itself")
    if ensure_schema(db):
        say("applied procrastinate's schema (its tables were missing)")
    settings = db.settings
    heartbeat = min(heartbeat, max(0.5, stalled_after / 3))  # a live worker is never taken for a stalled one
    series, slot = take_series(settings) if not settings.warc_series else (settings.warc_series, None)
    settings.warc_series = series
    queue = queue_for(db)
    app = build_app(db, PsycopgConnector(conninfo=conninfo(db.url), min_size=1, max_size=max(2, concurrency + 2)))
    say(f"worker {series} (pid {os.getpid()}): {concurrency} job(s) at a time; WARC series {series}")
    # With a bucket (docs/storage.md): sealed files (and a killed worker's series) upload beside the jobs;
    # our own series is sealed and uploaded when the worker stops.
    uploader = Uploader(db, series=series, say=say).start() if settings.archive_url else None

    async def main():
        async with app.open_async():
            stop = asyncio.Event()
            work = asyncio.create_task(app.run_worker_async(
                concurrency=concurrency, name=series, update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=stalled_after, fetch_job_polling_interval=min(2.0, settings.worker_poll),
                delete_jobs="successful", install_signal_handlers=True))
            # --once: leave when nothing is waiting, running or due for two rounds in a row
            keeper = asyncio.create_task(_housekeeper(app, db, queue, stalled_after, stop, say,
                                                      on_idle=work.cancel if once else None))
            try:
                await work
            except asyncio.CancelledError:
                if not once:
                    raise
            finally:
                stop.set()
                await keeper

    try:
        asyncio.run(main())
    finally:
        if uploader is not None:
            uploader.close()
        if slot is not None:
            slot.close()
