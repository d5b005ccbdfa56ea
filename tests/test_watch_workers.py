"""Issue 17 on PostgreSQL with real `caveat worker` processes: racing workers crawl each due source
once; a worker SIGKILLed mid-crawl leaves no half-written record and its job runs again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from app.db import Database
from app.models import Crawl, Snapshot, Source, utcnow
from app.watch import schedule
from app.claims.sources import add_source
from tests.helpers import stop_processes, wait_until
from tests.capture_helpers import CLI, cli_env, ref_tool, run, warc_files
from tests.conftest import PG_SKIP_REASON, PG_URL, _truncate_pg, make_settings
from tests.test_watch import board

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_settings(request, tmp_path):
    if not PG_URL:
        pytest.skip(PG_SKIP_REASON)
    url = request.getfixturevalue("pg_database")
    _truncate_pg(url)
    return make_settings(tmp_path, url)


@pytest.fixture
def workers(pg_settings):
    started: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        p = subprocess.Popen([*CLI, "worker", *args], env=cli_env(pg_settings, CAVEAT_HOST_DELAY="0",
                                                                   CAVEAT_WORKER_POLL="0.5",
                                                                   CAVEAT_HOOK_RETRY_WAIT="1"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started.append(p)
        return p

    yield start
    stop_processes(started, wait=20)


def _wait(pred, seconds: float = 60.0) -> bool:
    return wait_until(pred, seconds)


def test_two_workers_share_due_sources_and_crawl_each_once(pg_settings, server, workers):
    db = Database(pg_settings)
    n = 16
    with db.Session.begin() as s:
        for i in range(n):
            url = server.route(f"/b{i}", board(100.0 + i), content_type="application/json", delay=0.5)
            src = add_source(s, f"board{i}", url, "json")
            schedule.set_schedule(s, src, 3600, now=utcnow() - timedelta(seconds=5))
    a, b = workers(), workers()

    def done():
        with db.Session() as s:
            return s.scalar(select(func.count(Crawl.id)).where(Crawl.status == "ok")) >= n
    def crawls():
        with db.Session() as s:
            return [(c.source_id, c.status, (c.error or "")[:200]) for c in s.scalars(select(Crawl))]
    assert _wait(done), (a.poll(), b.poll(), crawls())
    time.sleep(2.0)  # a few more housekeeping rounds of both workers: nothing is due, nothing runs again
    paths = [r["path"] for r in server.requests]
    assert sorted(paths) == sorted(f"/b{i}" for i in range(n)), "every source fetched exactly once"
    with db.Session() as s:
        assert s.scalar(select(func.count(Crawl.id))) == n
        assert s.scalar(select(func.count(Snapshot.id)).where(Snapshot.status == 200)) == n
        files = {row for row in s.scalars(select(Snapshot.warc_file).distinct())}
    assert all(f.startswith("caveat-w_") for f in files), files
    series = {f.split("-")[1] for f in files}
    assert len(series) == 2, f"both workers took work, each in its own file series: {series}"
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(pg_settings))])
    assert check.returncode == 0, check.stdout + check.stderr
    db.dispose()


def test_sigkilled_worker_leaves_no_torn_record_and_its_job_runs_again(pg_settings, server, workers):
    from app.watch.jobs import queue_for
    from app.watch.worker import enqueue

    db = Database(pg_settings)
    url = server.route("/slow", board(500.0), content_type="application/json", delay=4.0)
    with db.Session.begin() as s:
        src = add_source(s, "slow", url, "json")
        s.expunge(src)
    a = workers("--stalled-after", "3")
    assert _wait(lambda: a.poll() is None and "worker" in (a.stderr.readline() or ""), 30)
    crawl_id, new = enqueue(db, src, "manual")
    assert new
    assert _wait(lambda: any(r["path"] == "/slow" for r in server.requests), 30), "the worker took the job"
    with db.Session() as s:
        assert s.get(Crawl, crawl_id).status == "running"
    os.kill(a.pid, signal.SIGKILL)  # mid-fetch: nothing of this crawl is written yet
    a.wait(10)
    server.route("/slow", board(500.0), content_type="application/json")  # answers at once from now on
    workers("--stalled-after", "3")

    def ran_again():
        with db.Session() as s:
            return s.scalar(select(func.count(Crawl.id)).where(Crawl.source_id == src.id, Crawl.status == "ok")) == 1
    assert _wait(ran_again, 90)
    with db.Session() as s:
        rows = list(s.scalars(select(Crawl).where(Crawl.source_id == src.id).order_by(Crawl.id)))
        assert [c.status for c in rows] == ["failed", "ok"]
        assert rows[0].error.startswith("interrupted") and rows[1].trigger == "retry"
        assert s.scalar(select(func.count(Snapshot.id)).where(Snapshot.url == url)) == 1
    assert len([r for r in server.requests if r["path"] == "/slow"]) == 2
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(pg_settings))])
    assert check.returncode == 0, check.stdout + check.stderr
    assert not list(pg_settings.warc_dir.glob("*.torn")), "the kill came before any byte was written"
    jobs = queue_for(db).jobs()
    assert jobs.get(crawl_id) in (None, "succeeded"), jobs
    db.dispose()


def test_worker_refuses_sqlite(cli):
    r = cli("worker")
    assert r.exit_code == 1 and "needs PostgreSQL" in r.output


def test_worker_delivers_webhooks_with_retries(pg_settings, server, workers):
    import hashlib
    import hmac
    import json as _json

    from app.models import HookDelivery
    from app.watch import hooks
    from app.watch.schedule import crawl_now
    from tests.test_watch import Receiver

    db = Database(pg_settings)
    rx = Receiver(fail=1)
    try:
        with db.Session.begin() as s:
            hooks.add_hook(s, rx.url, "s3cret-s3cret-s3cret")
            src = add_source(s, "board", server.route("/b", board(500.0), content_type="application/json"), "json")
            s.expunge(src)
        workers()
        crawl_now(db, db.settings, src)
        server.route("/b", board(350.0), content_type="application/json")
        crawl_now(db, db.settings, src)  # one change event: its delivery is deferred on PostgreSQL

        def delivered():
            with db.Session() as s:
                return s.scalar(select(HookDelivery.status)) == "delivered"
        assert _wait(delivered, 60)
        assert len(rx.got) == 2
        headers, body = rx.got[-1]
        want = "sha256=" + hmac.new(b"s3cret-s3cret-s3cret", headers["X-Caveat-Timestamp"].encode() + b"." + body,
                                    hashlib.sha256).hexdigest()
        assert headers["X-Caveat-Signature"] == want
        assert _json.loads(body)["event"]["kind"] == "changed"
    finally:
        rx.stop()
        db.dispose()


def test_jobs_wait_in_postgresql_for_a_worker(pg_settings, server, workers):
    """A crawl queued while no worker runs (all stopped, restarting) is kept and run by the next one."""
    from app.watch.jobs import queue_for
    from app.watch.worker import enqueue

    db = Database(pg_settings)
    with db.Session.begin() as s:
        src = add_source(s, "board", server.route("/b", board(500.0), content_type="application/json"), "json")
        s.expunge(src)
    crawl_id, _ = enqueue(db, src, "manual")
    assert queue_for(db).jobs() == {crawl_id: "todo"}
    time.sleep(1.0)
    assert server.requests == []
    workers()

    def ran():
        with db.Session() as s:
            return s.get(Crawl, crawl_id).status == "ok"
    assert _wait(ran, 60)
    assert len(server.requests) == 1
    db.dispose()


def test_a_job_delivered_again_retries_an_interrupted_crawl_once(db, server):
    """A crawl interrupted by a dead worker is retried as a row of its own; when the job is delivered again
    (its worker died after the retry), a retry that ended is not run twice, and one that was itself
    interrupted is run again, so the source is never left without its crawl."""
    url = server.route("/b", board(100.0), content_type="application/json")
    with db.Session.begin() as s:
        src = add_source(s, "b", url, "json")
        sid = src.id

    def crawl_row(**kw) -> int:
        with db.Session.begin() as s:
            c = Crawl(source_id=sid, kind="crawl", queued_at=utcnow(), **kw)
            s.add(c)
            s.flush()
            return c.id

    def count(status: str) -> int:
        with db.Session() as s:
            return s.scalar(select(func.count(Crawl.id)).where(Crawl.source_id == sid, Crawl.status == status))

    dead = "interrupted: the process running it ended before it finished"
    first = crawl_row(status="failed", error=dead)
    crawl_row(status="failed", error=dead, trigger="retry")       # the retry was interrupted too
    assert schedule.run_crawl(db, first, sid) is not None and count("ok") == 1
    assert schedule.run_crawl(db, first, sid) is None and count("ok") == 1   # that retry ended: not again
