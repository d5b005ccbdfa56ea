"""The job queue (issue 17): procrastinate, on PostgreSQL; the same jobs in-process on SQLite.

Two jobs: ``caveat.crawl(crawl_id, source_id)`` runs a queued crawl row (``schedule.run_crawl``) and
``caveat.deliver(delivery_id)`` makes one webhook attempt (``hooks.deliver``). A crawl job carries the lock
``source:<id>`` (procrastinate never runs two jobs with one lock at once) and the same queueing lock (never
two waiting for one source). A failed job is retried with backoff by procrastinate's retry strategy;
a job whose worker died (SIGKILL, power loss) is found by the surviving workers' housekeeping through
procrastinate's stalled-job query (no heartbeat for ``--stalled-after`` seconds) and put back to ``todo``.

On PostgreSQL, ``caveat worker`` processes (any number, on any machines sharing the database and the data
folder) run the jobs; everything else only defers them (through SQLAlchemy's psycopg2 engine). Each worker
writes its own WARC file series, ``w_<host>_<n>``. On SQLite, ``caveat serve`` runs one worker in-process on
procrastinate's in-memory connector: the jobs are the same; what must survive a restart is in Caveat's own
tables (queued crawl rows, ``next_crawl_at``, pending deliveries) and is deferred again when it starts.

Procrastinate's schema is applied by migration ``20261201_0010w`` with procrastinate's own schema text
(``SchemaManager.get_schema()``); ``caveat worker`` applies it too if it finds it missing.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import re
import socket
import threading
from datetime import timedelta

from sqlalchemy import inspect as sa_inspect, select
from sqlalchemy.engine import make_url

from app.db import Database
from app.models import HookDelivery

log = logging.getLogger("caveat.watch")
TASK_CRAWL = "caveat.crawl"
TASK_DELIVER = "caveat.deliver"
HEARTBEAT = 5.0
STALLED_AFTER = 30.0
CRAWL_ATTEMPTS = 3
ORPHAN_AFTER = timedelta(minutes=10)  # a crawl row queued this long ago without its job running is deferred again


def procrastinate_schema_sql() -> str:
    from procrastinate.schema import SchemaManager

    return SchemaManager.get_schema()


def is_postgres(db: Database) -> bool:
    return db.engine.dialect.name == "postgresql"


def conninfo(url: str) -> str:
    """A libpq connection string for psycopg 3 from the SQLAlchemy URL."""
    u = make_url(url)
    return u.set(drivername="postgresql").render_as_string(hide_password=False)


def ensure_schema(db: Database) -> bool:
    """Apply procrastinate's schema if its tables are missing (a database made without the migration)."""
    if "procrastinate_jobs" in sa_inspect(db.engine).get_table_names():
        return False
    with db.engine.begin() as conn:
        conn.exec_driver_sql(procrastinate_schema_sql().replace("%", "%%"))
    return True


def crawl_lock(source_id: int) -> str:
    return f"source:{source_id}"


def _strategies(settings):
    from procrastinate.retry import BaseRetryStrategy, RetryDecision, RetryStrategy

    class HookRetry(BaseRetryStrategy):
        """CAVEAT_HOOK_RETRY_WAIT seconds, doubled per attempt, CAVEAT_HOOK_ATTEMPTS attempts in all."""

        def get_retry_decision(self, *, exception, job):
            from app.watch.hooks import DeliveryFailed

            attempts = job.attempts
            if not isinstance(exception, DeliveryFailed) or attempts + 1 >= settings.hook_attempts:
                return None
            return RetryDecision(retry_in={"seconds": max(1.0, settings.hook_retry_wait * 2 ** attempts)})

    return RetryStrategy(max_attempts=CRAWL_ATTEMPTS, exponential_wait=5), HookRetry()


def build_app(db: Database, connector):
    """A procrastinate App with Caveat's two jobs, bound to ``db``."""
    import procrastinate

    app = procrastinate.App(connector=connector)
    crawl_retry, hook_retry = _strategies(db.settings)

    @app.task(name=TASK_CRAWL, pass_context=True, retry=crawl_retry)
    def crawl_job(context, crawl_id: int, source_id: int) -> None:
        from app.watch.schedule import run_crawl

        run_crawl(db, crawl_id, source_id, trigger="schedule", queue=queue_for(db))

    @app.task(name=TASK_DELIVER, pass_context=True, retry=hook_retry)
    def deliver_job(context, delivery_id: int) -> None:
        from app.watch.hooks import deliver

        deliver(db, delivery_id)

    return app


# -- deferring ---------------------------------------------------------------------------------------
class PgQueue:
    """Defers jobs into procrastinate's tables through the app's own SQLAlchemy engine (psycopg2)."""

    def __init__(self, db: Database):
        from procrastinate.contrib.sqlalchemy import SQLAlchemyPsycopg2Connector

        self.db = db
        self.app = build_app(db, SQLAlchemyPsycopg2Connector())
        self.app.open(db.engine)

    def defer_crawl(self, crawl_id: int, source_id: int) -> int | None:
        from procrastinate.exceptions import AlreadyEnqueued

        lock = crawl_lock(source_id)
        try:
            return self.app.configure_task(TASK_CRAWL, lock=lock, queueing_lock=lock).defer(
                crawl_id=crawl_id, source_id=source_id)
        except AlreadyEnqueued:
            return None

    def defer_delivery(self, delivery_id: int) -> int | None:
        return self.app.configure_task(TASK_DELIVER).defer(delivery_id=delivery_id)

    def jobs(self) -> dict[int, str]:
        """crawl id -> status of its job (for the status endpoint)."""
        out = {}
        with self.db.engine.connect() as conn:
            for args, status in conn.exec_driver_sql(
                    "SELECT args, status FROM procrastinate_jobs WHERE task_name = %(t)s", {"t": TASK_CRAWL}):
                out[int(args.get("crawl_id"))] = status
        return out


class LocalQueue:
    """The in-process queue of ``caveat serve`` on SQLite: procrastinate's in-memory connector and one
    worker on a thread of this process, running the same jobs."""

    def __init__(self, db: Database):
        from procrastinate.testing import InMemoryConnector

        self.db = db
        self.app = build_app(db, InMemoryConnector())
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="caveat-jobs", daemon=True)
        self.thread.start()
        self.ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main():
            async with self.app.open_async():
                self.ready.set()
                await self.app.run_worker_async(install_signal_handlers=False, concurrency=1, name="in-process",
                                                fetch_job_polling_interval=0.5, listen_notify=True,
                                                delete_jobs="successful", update_heartbeat_interval=HEARTBEAT)

        try:
            self.loop.run_until_complete(main())
        except Exception:  # pragma: no cover - logged, the server keeps serving
            log.exception("the in-process job worker stopped")

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def defer_crawl(self, crawl_id: int, source_id: int) -> int | None:
        from procrastinate.exceptions import AlreadyEnqueued

        lock = crawl_lock(source_id)
        try:
            return self._call(self.app.configure_task(TASK_CRAWL, lock=lock, queueing_lock=lock).defer_async(
                crawl_id=crawl_id, source_id=source_id))
        except AlreadyEnqueued:
            return None

    def defer_delivery(self, delivery_id: int) -> int | None:
        return self._call(self.app.configure_task(TASK_DELIVER).defer_async(delivery_id=delivery_id))

    def jobs(self) -> dict[int, str]:
        jobs = self.app.connector.jobs  # the in-memory connector's table
        return {int(j["args"]["crawl_id"]): j["status"] for j in list(jobs.values()) if j["task_name"] == TASK_CRAWL}


_QLOCK = threading.Lock()


def queue_for(db: Database):
    """This process's queue for ``db`` (one per Database object, kept on it)."""
    with _QLOCK:
        q = getattr(db, "_job_queue", None)
        if q is None:
            q = PgQueue(db) if is_postgres(db) else LocalQueue(db)
            db._job_queue = q
        return q


def enqueue(db: Database, source, trigger: str = "manual") -> tuple[int, bool]:
    """Crawl now: a queued crawl row for ``source`` and its job, returned at once (an already queued or
    running crawl of it is returned instead, with False)."""
    from app.watch.schedule import queue_crawl

    with db.Session() as s:
        crawl, new = queue_crawl(s, s.merge(source), trigger)
        s.commit()
        cid = crawl.id
    if new:
        queue_for(db).defer_crawl(cid, source.id)
    return cid, new


def housekeeping(db: Database, queue=None, *, now=None) -> dict:
    """One round: queue the due sources, re-defer pending deliveries nobody has (in-process queue)."""
    from app.watch.schedule import claim_due

    from app.watch.schedule import orphans

    queue = queue or queue_for(db)
    claimed = claim_due(db, now=now, each=lambda sid, cid: queue.defer_crawl(cid, sid))
    stale = orphans(db, older_than=ORPHAN_AFTER)
    for sid, cid in stale:
        queue.defer_crawl(cid, sid)
    return {"queued": len(claimed), "requeued": len(stale)}


def redefer_orphans(db: Database, queue) -> int:
    """At the in-process queue's start: the queued crawls and pending deliveries its memory forgot."""
    from app.watch.schedule import orphans

    n = 0
    for sid, cid in orphans(db):
        queue.defer_crawl(cid, sid)
        n += 1
    with db.Session() as s:
        pending = list(s.scalars(select(HookDelivery.id).where(HookDelivery.status == "pending")))
    for did in pending:
        queue.defer_delivery(did)
        n += 1
    return n


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


def _idle(db: Database) -> bool:
    """Nothing left: no job waiting or running, no source due."""
    from app.models import Source, utcnow

    with db.engine.connect() as conn:
        busy = conn.exec_driver_sql("SELECT count(*) FROM procrastinate_jobs WHERE status IN ('todo', 'doing')").scalar()
    if busy:
        return False
    with db.Session() as s:
        due = s.scalar(select(Source.id).where(Source.removed_at.is_(None), Source.every_seconds.is_not(None),
                                               Source.next_crawl_at <= utcnow()).limit(1))
    return due is None


async def _housekeeper(app, db: Database, queue: PgQueue, stalled_after: float, stop: asyncio.Event, say,
                       on_idle=None) -> None:
    from app.crawl.workflow import end_dead_crawls

    idle_rounds = 0
    while not stop.is_set():
        try:
            stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stalled_after)
            for job in stalled:
                say(f"job {job.id} ({job.task_name}) lost its worker; it runs again")
                await app.job_manager.retry_job(job)
            if stalled:
                await asyncio.to_thread(end_dead_crawls, db)
            from app.storage.warcfiles import check_cdxj

            await asyncio.to_thread(check_cdxj, db)
            done = await asyncio.to_thread(housekeeping, db, queue)
            if done["queued"]:
                say(f"queued {done['queued']} due source(s)")
            if on_idle is not None:
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
    from procrastinate import PsycopgConnector

    if not is_postgres(db):
        from app.errors import BadRequest

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
        if slot is not None:
            slot.close()
