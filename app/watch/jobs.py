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
import atexit
import logging
import threading
from typing import Callable
from datetime import timedelta

from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import make_url

from app.db import Database

log = logging.getLogger("caveat.watch")
TASK_CRAWL = "caveat.crawl"
TASK_DELIVER = "caveat.deliver"
HEARTBEAT = 5.0
STALLED_AFTER = 30.0
CRAWL_ATTEMPTS = 3
ORPHAN_AFTER = timedelta(minutes=10)  # a crawl row queued this long ago without its job running is deferred again


def procrastinate_schema_sql() -> str:
    from procrastinate.schema import SchemaManager  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

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


class DeliveryFailed(Exception):
    """A webhook attempt that failed and should be retried by the queue (raised by ``hooks.deliver``)."""


# What each job runs is registered by the module that owns it (``app.watch.schedule`` the crawl,
# ``app.watch.hooks`` the delivery): the queue knows the jobs by name only and never imports them.
HANDLERS: dict[str, Callable] = {}


def register_handler(task: str, fn: Callable) -> None:
    HANDLERS[task] = fn


def _handler(task: str) -> Callable:
    try:
        return HANDLERS[task]
    except KeyError:
        raise RuntimeError(f"no handler registered for job {task}: import app.watch.worker first") from None


def crawl_lock(source_id: int) -> str:
    return f"source:{source_id}"


def _strategies(settings):
    from procrastinate.retry import BaseRetryStrategy, RetryDecision, RetryStrategy  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

    class HookRetry(BaseRetryStrategy):
        """CAVEAT_HOOK_RETRY_WAIT seconds, doubled per attempt, CAVEAT_HOOK_ATTEMPTS attempts in all."""

        def get_retry_decision(self, *, exception, job):
            attempts = job.attempts
            if not isinstance(exception, DeliveryFailed) or attempts + 1 >= settings.hook_attempts:
                return None
            return RetryDecision(retry_in={"seconds": max(1.0, settings.hook_retry_wait * 2 ** attempts)})

    return RetryStrategy(max_attempts=CRAWL_ATTEMPTS, exponential_wait=5), HookRetry()


def build_app(db: Database, connector):
    """A procrastinate App with Caveat's two jobs, bound to ``db``."""
    import procrastinate  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

    app = procrastinate.App(connector=connector)
    crawl_retry, hook_retry = _strategies(db.settings)

    @app.task(name=TASK_CRAWL, pass_context=True, retry=crawl_retry)
    def crawl_job(context, crawl_id: int, source_id: int) -> None:
        _handler(TASK_CRAWL)(db, crawl_id, source_id)

    @app.task(name=TASK_DELIVER, pass_context=True, retry=hook_retry)
    def deliver_job(context, delivery_id: int) -> None:
        _handler(TASK_DELIVER)(db, delivery_id)

    return app


# -- deferring ---------------------------------------------------------------------------------------
class PgQueue:
    """Defers jobs into procrastinate's tables through the app's own SQLAlchemy engine (psycopg2)."""

    def __init__(self, db: Database):
        from procrastinate.contrib.sqlalchemy import SQLAlchemyPsycopg2Connector  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

        self.db = db
        self.app = build_app(db, SQLAlchemyPsycopg2Connector())
        self.app.open(db.engine)

    def defer_crawl(self, crawl_id: int, source_id: int) -> int | None:
        from procrastinate.exceptions import AlreadyEnqueued  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

        lock = crawl_lock(source_id)
        try:
            return self.app.configure_task(TASK_CRAWL, lock=lock, queueing_lock=lock).defer(
                crawl_id=crawl_id, source_id=source_id)
        except AlreadyEnqueued:
            return None

    def defer_delivery(self, delivery_id: int) -> int | None:
        return self.app.configure_task(TASK_DELIVER).defer(delivery_id=delivery_id)

    def delivery_jobs(self) -> set[int]:
        """The deliveries a job waits or runs for."""
        with self.db.engine.connect() as conn:
            return {int(args.get("delivery_id")) for (args,) in conn.exec_driver_sql(
                "SELECT args FROM procrastinate_jobs WHERE task_name = %(t)s AND status IN ('todo', 'doing')",
                {"t": TASK_DELIVER})}

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
        from procrastinate.testing import InMemoryConnector  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

        self.db = db
        self.app = build_app(db, InMemoryConnector())
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.stopping = False
        self._task = None
        self.thread = threading.Thread(target=self._run, name="caveat-jobs", daemon=True)
        self.thread.start()
        self.ready.wait(10)
        atexit.register(self.close)   # stopped before the interpreter exits, never run during its exit

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main():
            async with self.app.open_async():
                self.ready.set()
                await self.app.run_worker_async(install_signal_handlers=False, concurrency=1, name="in-process",
                                                fetch_job_polling_interval=0.5, listen_notify=True,
                                                delete_jobs="successful", update_heartbeat_interval=HEARTBEAT)

        try:
            self._task = self.loop.create_task(main())
            self.loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except Exception:  # pragma: no cover - logged, the server keeps serving
            log.exception("the in-process job worker stopped")

    def close(self, wait: float = 15.0) -> None:
        """Stop the worker: the job in progress ends (its own deadline bounds it), no new one starts.
        Pending deliveries stay in Caveat's tables for the next start's housekeeping."""
        if self.stopping:
            return
        self.stopping = True
        if self._task is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self._task.cancel)
            except RuntimeError:   # the loop already stopped
                pass
        self.thread.join(wait)

    def delivery_jobs(self) -> set[int]:
        jobs = self.app.connector.jobs
        return {int(j["args"]["delivery_id"]) for j in list(jobs.values())
                if j["task_name"] == TASK_DELIVER and j["status"] in ("todo", "doing")}

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def defer_crawl(self, crawl_id: int, source_id: int) -> int | None:
        from procrastinate.exceptions import AlreadyEnqueued  # noqa: PLC0415 (heavy optional import: procrastinate (psycopg 3, its app) loads only where jobs run)

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


def running_queue(db: Database):
    """The queue jobs can be deferred on from here without starting a worker in this process: the
    one already running in it, or PostgreSQL's (its workers are other processes). None on SQLite
    when this process runs none (``caveat crawl``)."""
    q = getattr(db, "_job_queue", None)
    if q is not None and not getattr(q, "stopping", False):
        return q
    return queue_for(db) if is_postgres(db) else None


def queue_for(db: Database):
    """This process's queue for ``db`` (one per Database object, kept on it)."""
    with _QLOCK:
        q = getattr(db, "_job_queue", None)
        if q is None:
            q = PgQueue(db) if is_postgres(db) else LocalQueue(db)
            db._job_queue = q
        return q


