"""Issue 30 with real `caveat worker` processes on PostgreSQL and a real SeaweedFS S3 gateway: two workers
with separate local spools (two machines, no shared folder) crawl through the job queue and upload beside
the crawl; a worker SIGKILLed again and again around its uploads loses no fsynced record and uploads
nothing twice; a third data folder serves every citation from the bucket.

The two workers crawl the issue's 200 sources (under two minutes on two shared cores; CAVEAT_TEST_S3_SOURCES
sets another number); the SIGKILL test crawls 24."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.capture.verify import verify_all
from app.claims.sources import add_source
from app.db import Database
from app.main import create_app
from app.models import ArchiveObject, Crawl, Snapshot, utcnow
from app.watch import schedule
from tests.helpers import stop_processes, wait_until
from tests.capture_helpers import CLI, cli_env
from tests.conftest import PG_SKIP_REASON, PG_URL, _truncate_pg, make_settings
from tests.test_s3_storage import weed  # noqa: F401  (the session's SeaweedFS gateway)
from tests.test_watch import board

pytestmark = pytest.mark.postgres
SOURCES = int(os.environ.get("CAVEAT_TEST_S3_SOURCES", "200"))


@pytest.fixture
def pg_url(request):
    if not PG_URL:
        pytest.skip(PG_SKIP_REASON)
    url = request.getfixturevalue("pg_database")
    _truncate_pg(url)
    return url


@pytest.fixture
def machines(pg_url, tmp_path, weed):  # noqa: F811
    """``machine(name)``: settings of a machine of its own (data folder) on the shared database and bucket."""
    bucket = weed.new_bucket()

    def machine(name: str, rotate: int = 16_000):
        return make_settings(tmp_path / name, pg_url, archive_url=f"s3://{bucket}/arch", s3_endpoint=weed.endpoint,
                             warc_rotate_bytes=rotate)
    return machine


@pytest.fixture
def spawn():
    started: list[subprocess.Popen] = []

    def start(settings, *args: str, **env: str) -> subprocess.Popen:
        p = subprocess.Popen([*CLI, "worker", *args],
                             env=cli_env(settings, CAVEAT_HOST_DELAY="0", CAVEAT_WORKER_POLL="0.5",
                                         CAVEAT_S3_UPLOAD_EVERY="0.3", CAVEAT_ARCHIVE_URL=settings.archive_url,
                                         CAVEAT_S3_ENDPOINT=settings.s3_endpoint,
                                         CAVEAT_WARC_ROTATE_BYTES=str(settings.warc_rotate_bytes), **env),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started.append(p)
        return p

    yield start
    stop_processes(started, wait=30)


def _wait(pred, seconds: float = 120.0) -> bool:
    return wait_until(pred, seconds)


def _sources(db: Database, server, n: int, prefix: str) -> None:
    with db.Session.begin() as s:
        for i in range(n):
            url = server.route(f"/{prefix}{i}", board(100.0 + i), content_type="application/json")
            src = add_source(s, f"{prefix}{i}", url, "json")
            schedule.set_schedule(s, src, 86400, now=utcnow() - timedelta(seconds=5))


def _bucket(weed, settings) -> dict[str, bytes]:  # noqa: F811
    bucket, _, prefix = settings.archive_url[len("s3://"):].partition("/")
    c = weed.client()
    keys = [o["Key"] for page in c.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
            for o in page.get("Contents", [])]
    return {k.rsplit("/", 1)[1]: c.get_object(Bucket=bucket, Key=k)["Body"].read() for k in keys}


def _not_ok(db: Database) -> list:
    """The crawls that did not end ok, with what they say (for a failure's message)."""
    with db.Session() as s:
        crawls = [(c.id, c.source_id, c.status, c.error) for c in s.scalars(select(Crawl).where(Crawl.status != "ok"))]
    with db.engine.connect() as conn:
        jobs = [tuple(r) for r in conn.exec_driver_sql(
            "SELECT id, status, attempts, args FROM procrastinate_jobs WHERE task_name = 'caveat.crawl' ORDER BY id")
            if int(r[3].get("crawl_id", 0)) in {c[0] for c in crawls}]
    return crawls + jobs


def _ok_crawls(db: Database) -> int:
    with db.Session() as s:
        return s.scalar(select(func.count(Crawl.id)).where(Crawl.status == "ok"))


def _everything_in_the_bucket(db: Database, weed, settings) -> dict[str, bytes]:  # noqa: F811
    """Every snapshot's file is an object whose bytes are what archive_objects recorded, and it is the only
    copy of those bytes (no file uploaded twice, under any name)."""
    objects = _bucket(weed, settings)
    with db.Session() as s:
        files = set(s.scalars(select(Snapshot.warc_file).distinct()))
        rows = {o.name: o.sha256 for o in s.scalars(select(ArchiveObject))}
    assert files <= set(objects), sorted(files - set(objects))
    assert {k: hashlib.sha256(v).hexdigest() for k, v in objects.items()} == rows
    digests = [hashlib.sha256(v).hexdigest() for v in objects.values()]
    assert len(digests) == len(set(digests)), "no file was uploaded twice"
    return objects


def _serves_everything(settings) -> None:
    """Another machine (its own empty data folder) resolves every citation and replays every record."""
    app = create_app(settings)
    with TestClient(app, base_url="http://caveat.test") as client:
        with app.state.db.Session() as s:
            snaps = list(s.scalars(select(Snapshot)))
        assert snaps
        for snap in snaps:
            assert client.get(f"/c/{snap.citation_id}").status_code == 200, snap.citation_id
            raw = client.get(f"/web/{snap.timestamp}id_/{snap.url}", follow_redirects=False)
            assert raw.status_code == 200, (snap.citation_id, raw.status_code)
            assert hashlib.sha256(raw.content).hexdigest() == snap.sha256
    app.state.db.dispose()


def test_two_workers_on_two_spools_crawl_through_the_queue_into_one_bucket(machines, spawn, server, weed):  # noqa: F811
    one, two, three = machines("m1"), machines("m2"), machines("m3")
    db = Database(one)
    _sources(db, server, SOURCES, "s")
    a = spawn(one, "--once", CAVEAT_WARC_SERIES="w_m1_1")
    b = spawn(two, "--once", CAVEAT_WARC_SERIES="w_m2_1")
    for p in (a, b):
        try:
            p.wait(60 + SOURCES * 3)
        except subprocess.TimeoutExpired:
            pytest.fail(f"worker still running after {60 + SOURCES * 3} s; {_ok_crawls(db)} crawls ok")
        assert p.returncode == 0, p.stderr.read()[-3000:]
    assert _ok_crawls(db) == SOURCES
    assert sorted(r["path"] for r in server.requests) == sorted(f"/s{i}" for i in range(SOURCES)), \
        "every source fetched exactly once"
    for m in (one, two):
        assert not list(m.warc_dir.glob("caveat-*.warc.gz")), "each worker sealed and uploaded its spool at its stop"
    objects = _everything_in_the_bucket(db, weed, one)
    assert {n.split("-")[1] for n in objects} == {"w_m1_1", "w_m2_1"}, "both workers took work"
    with db.Session() as s:
        report = verify_all(s, three)
    assert report.passed, [p.line() for p in report.problems[:5]]
    _serves_everything(three)
    db.dispose()


def test_sigkill_around_uploads_loses_nothing_and_uploads_nothing_twice(machines, spawn, server, weed):  # noqa: F811
    m = machines("m1", rotate=2_000)   # about one file per crawl: many uploads to be killed around
    db = Database(m)
    n = 24
    _sources(db, server, n, "k")

    def objects() -> int:
        return len(_bucket(weed, m))

    # Killed before its first upload, as soon as a crawl committed; then twice after uploads began (during
    # or just after one: the gateway is on this machine, an upload takes a few milliseconds).
    stops = [lambda: _ok_crawls(db) >= 1, lambda: objects() >= 1, lambda: objects() >= 3]
    for stop in stops:
        w = spawn(m, "--stalled-after", "2")
        assert _wait(lambda: stop() or w.poll() is not None), \
            f"the worker made no progress: {_ok_crawls(db)} crawls ok, {objects()} objects"
        os.kill(w.pid, signal.SIGKILL)
        w.wait(10)
    last = spawn(m, "--stalled-after", "2", "--once")
    try:
        last.wait(60 + n * 3)
    except subprocess.TimeoutExpired:
        pytest.fail(f"worker still running; {_ok_crawls(db)} of {n} crawls ok")
    assert last.returncode == 0, last.stderr.read()[-3000:]
    assert _ok_crawls(db) == n, _not_ok(db)
    assert not list(m.warc_dir.glob("caveat-*.warc.gz")), "the killed workers' files were recovered and uploaded"
    _everything_in_the_bucket(db, weed, m)
    with db.Session() as s:
        report = verify_all(s, m)
    assert report.passed, [p.line() for p in report.problems[:5]]
    db.dispose()

