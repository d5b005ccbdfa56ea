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
from app.crawl.workflow import end_dead_crawls
from app.watch.schedule import crawl
from app.claims.sources import add_source
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


def test_a_long_page_commits_in_batches_with_the_same_outcome(tmp_path, sqlite_template, server, monkeypatch):
    """Batched commits (small batches here) store and audit exactly what one transaction does."""
    import shutil

    from sqlalchemy import event

    import app.claims.store as claims
    import app.crawl.workflow as crawl_service
    from app.models import Entry, Recipe
    from tests.conftest import make_settings

    rows = "".join(f"<tr><td>model-{i % 4}-7B</td><td>RTX {4080 + i % 3}</td><td>{50 + i}.5</td>"
                   f"<td>{'best of 3' if i % 5 == 0 else ''}</td></tr>" for i in range(23))
    page = f"<table><tr><th>Model</th><th>GPU</th><th>tok/s</th><th>Notes</th></tr>{rows}</table>"
    url = server.route("/long", page)

    def run(batch: int):
        d = tmp_path / f"b{batch}"
        d.mkdir()
        shutil.copy(sqlite_template, d / "caveat.db")
        settings = make_settings(d, f"sqlite:///{d / 'caveat.db'}")
        db = Database(settings)
        commits = []
        event.listen(db.engine, "commit", lambda conn: commits.append(1))
        monkeypatch.setattr(claims, "BATCH_ROWS", batch)
        monkeypatch.setattr(crawl_service, "AUDIT_BATCH", batch)
        with db.session() as s:
            add_source(s, "long", url, "html")
        commits.clear()
        report = crawl(db, settings)[0]
        with db.Session() as s:
            entries = sorted((e.entry_key, e.headline_tps, e.working_tps, e.basis, e.flag_count)
                             for e in s.scalars(select(Entry)))
            answers = sorted((r.recipe_id, r.quotable_tps, r.basis) for r in s.scalars(select(Recipe)))
        db.dispose()
        return report, entries, answers, len(commits)

    one = run(100_000)
    batched = run(4)
    assert one[0].status == batched[0].status and one[0].summary.new == batched[0].summary.new == 23
    assert batched[1] == one[1] and batched[2] == one[2]
    assert batched[3] >= one[3] + 5  # 23 rows in batches of 4: at least five more commits


def test_out_of_range_and_non_finite_json_numbers_become_warnings_not_a_lost_page(db, server):
    page = ('[{"model": "big", "tokSOut": 1e308, "hardware": {"gpuCount": 1e308}},'
            ' {"model": "nan", "tokSOut": NaN}, {"model": "inf", "tokSOut": Infinity,'
            ' "engineFlags": {"concurrency": 99999999999999999999999}}, {"model": "ok", "tokSOut": 50.5}]')
    url = server.route("/numbers.json", page, content_type="application/json")
    with db.session() as s:
        add_source(s, "numbers", url, "json")
    report = crawl(db, db.settings)[0]
    assert report.status in ("ok", "warnings"), report.error
    with db.Session() as s:
        from app.models import Entry

        rows = {e.model: e for e in s.scalars(select(Entry))}
    assert rows["ok"].headline_tps == 50.5
    assert rows["big"].headline_tps is None and rows["big"].gpu_count is None
    assert rows.get("inf") is None or rows["inf"].concurrency is None
    assert any("out of range" in w or "finite" in w for w in report.summary.warnings), report.summary.warnings
