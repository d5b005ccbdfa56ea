"""A crawl that dies does not stay ``running``: the next start marks it failed and says why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

from sqlalchemy import select

from app.db import Database
from app.models import Crawl, utcnow
from app.services.crawl import crawl, end_dead_crawls
from app.services.sources import add_source
from tests.capture_helpers import REPO, cli_env


def test_sigkilled_crawl_is_marked_failed_at_the_next_start(settings, server):
    slow = server.route("/slow", "<p>slow</p>", delay=30)
    fine = server.route("/fine", "<table><tr><th>model</th><th>tok/s</th></tr><tr><td>m</td><td>9</td></tr></table>")
    db = Database(settings)
    with db.session() as s:
        add_source(s, "slow", slow, "html")
    proc = subprocess.Popen([sys.executable, "-c", "from app.cli import main; main()", "crawl", "slow"], cwd=REPO,
                            env=cli_env(settings), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while time.time() < deadline:
        with db.Session() as s:
            if s.scalar(select(Crawl.id).where(Crawl.status == "running")):
                break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    with db.Session() as s:
        dead = s.scalar(select(Crawl).where(Crawl.status == "running"))
        assert dead is not None and dead.owner.endswith(f":{proc.pid}")
    with db.session() as s:
        add_source(s, "fine", fine, "html")
    crawl(db, settings, ["fine"])
    with db.Session() as s:
        row = s.get(Crawl, dead.id)
        assert row.status == "failed" and row.finished_at is not None
        assert f":{proc.pid}) ended before it finished" in row.error
        assert s.scalar(select(Crawl.status).where(Crawl.id != dead.id)) in ("ok", "warnings")
    db.dispose()


def test_a_crawl_of_another_machine_ends_only_when_its_lease_expires(db):
    with db.session() as s:
        from app.models import Source

        src = Source(name="s", url="http://x.test/", kind="html")
        s.add(src)
        s.flush()
        live = Crawl(source_id=src.id, status="running", owner="elsewhere:1", lease_until=utcnow() + timedelta(minutes=5))
        stale = Crawl(source_id=src.id, status="running", owner="elsewhere:2", lease_until=utcnow() - timedelta(minutes=1))
        s.add_all([live, stale])
    assert end_dead_crawls(db) == 1
    with db.Session() as s:
        assert s.get(Crawl, live.id).status == "running"
        row = s.get(Crawl, stale.id)
        assert row.status == "failed" and "lease expired" in row.error
