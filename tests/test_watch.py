"""Issue 17: schedules on a controllable clock, change events with both citations, vanished pages,
conditional requests, webhooks (signed, retried), the changes API and its Atom feed (read by feedparser).
Real pages on 127.0.0.1, real WARC files, SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from sqlalchemy import func, select

from app.db import Database
from app.errors import BadRequest
from app.models import ChangeEvent, Crawl, HookDelivery, Snapshot, Source
from app.watch import changes
from app.watch import hooks
from app.watch import schedule
from app.watch.jobs import queue_for
from app.watch.schedule import crawl_now
from app.claims.sources import add_source
from tests.helpers import wait_until

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def board(tps: float) -> str:
    return json.dumps([{"hfId": "zai-org/GLM-5.3-Flash", "hardware": {"gpuName": "RTX PRO 6000 Blackwell", "gpuCount": 2},
                        "engineName": "SGLang", "engineVersion": "0.5.4", "quantization": "NVFP4", "tokSOut": tps,
                        "engineFlags": {"tensorParallel": 2, "concurrency": 1}, "submitter": "alice"}])


def _source(db: Database, url: str, name: str = "board", every: str | None = None) -> Source:
    with db.Session.begin() as s:
        src = add_source(s, name, url, "json")
        if every:
            schedule.set_schedule(s, src, schedule.parse_every(every), now=T0)
        s.expunge(src)
    return src


def _crawl(db: Database, name: str = "board"):
    with db.Session() as s:
        src = s.scalar(select(Source).where(Source.name == name))
        s.expunge(src)
    return crawl_now(db, db.settings, src)


def _events(db: Database) -> list[ChangeEvent]:
    with db.Session() as s:
        return list(s.scalars(select(ChangeEvent).order_by(ChangeEvent.id)))


# -- schedules ---------------------------------------------------------------------------------------
def test_every_parses_and_refuses_clearly():
    assert schedule.parse_every("6h") == 6 * 3600
    assert schedule.parse_every("1h30m") == 5400
    assert schedule.parse_every("1d") == 86400
    assert schedule.parse_every("off") is None
    assert schedule.format_every(5400) == "1h30m"
    for bad in ("6 hours", "h6", "10s", "5x", "1h-", "999w"):
        with pytest.raises(BadRequest):
            schedule.parse_every(bad)


def test_cli_source_add_every_and_set(cli, settings):
    r = cli("source", "add", "b", "http://127.0.0.1:9/x", "--every", "6h")
    assert r.exit_code == 0 and "every 6h" in r.output
    r = cli("source", "add", "c", "http://127.0.0.1:9/y", "--every", "sometimes")
    assert r.exit_code == 1 and "does not parse" in r.output
    r = cli("source", "list", "--json")
    names = {s["name"]: s for s in json.loads(r.output)["sources"]}
    assert set(names) == {"b"}, "a bad schedule adds nothing"
    assert names["b"]["schedule"]["every"] == "6h"
    r = cli("source", "set", "b", "--every", "30m")
    assert r.exit_code == 0, r.output
    r = cli("source", "set", "b", "--every", "1 fortnight")
    assert r.exit_code == 1
    assert json.loads(cli("source", "list", "--json").output)["sources"][0]["schedule"]["every"] == "30m"


def test_schedule_fires_on_the_clock(backend_db, server):
    db = backend_db
    db.settings.host_delay = 0.0
    db.settings.schedule_jitter = 0.0
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url, every="1h")
    assert schedule.claim_due(db, now=T0 - timedelta(minutes=1)) == []
    claimed = schedule.claim_due(db, now=T0)
    assert [sid for sid, _ in claimed] == [src.id]
    assert schedule.claim_due(db, now=T0) == [], "claimed once: moved to its next time"
    sid, cid = claimed[0]
    report = schedule.run_crawl(db, cid, sid, now=lambda: T0 + timedelta(seconds=5))
    assert report is not None and report.status == "ok"
    assert schedule.run_crawl(db, cid, sid) is None, "a job delivered twice runs once"
    assert schedule.claim_due(db, now=T0 + timedelta(minutes=30)) == []
    again = schedule.claim_due(db, now=T0 + timedelta(hours=1, minutes=1))
    assert [s for s, _ in again] == [src.id]
    with db.Session() as s:
        assert s.scalar(select(func.count(Crawl.id)).where(Crawl.source_id == src.id)) == 2
    assert len([r for r in server.requests if r["path"] == "/b"]) == 1


def test_unreachable_host_backs_off_and_loses_nothing(backend_db, server):
    db = backend_db
    db.settings.schedule_jitter = 0.0
    db.settings.connect_timeout = 2.0
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url, every="6h")
    assert _crawl(db).status == "ok"
    with db.Session.begin() as s:
        s.get(Source, src.id).url = "http://127.0.0.1:9/never"  # nothing listens on port 9
    report = _crawl(db)
    assert report.failed and "could not connect" in report.error
    with db.Session() as s:
        row = s.get(Source, src.id)
        assert row.failures == 1
        nxt = row.next_crawl_at if row.next_crawl_at.tzinfo else row.next_crawl_at.replace(tzinfo=timezone.utc)
        assert nxt < datetime.now(timezone.utc) + timedelta(minutes=2), "a failure retries soon, not in 6 h"
        assert s.scalar(select(func.count(Snapshot.id)).where(Snapshot.source_id == src.id)) == 1


def test_retry_after_holds_the_host(backend_db, server):
    db = backend_db
    url = server.route("/b", "slow down", status=429, content_type="text/plain", headers=[("Retry-After", "120")])
    src = _source(db, url, every="6h")
    report = _crawl(db)
    assert report.failed
    with db.Session() as s:
        nxt = s.get(Source, src.id).next_crawl_at
        nxt = nxt if nxt.tzinfo else nxt.replace(tzinfo=timezone.utc)
        assert nxt > datetime.now(timezone.utc) + timedelta(seconds=100)
    wait = schedule.take_host_turn(db, "127.0.0.1", delay=0.0)
    assert wait > 100, "every source on that host waits too"


# -- changes -----------------------------------------------------------------------------------------
def test_page_change_is_one_event_with_both_citations(backend_db, server):
    db = backend_db
    url = server.route("/b", board(500.0), content_type="application/json")
    _source(db, url)
    first = _crawl(db)
    assert first.status == "ok" and _events(db) == []
    with db.Session() as s:
        assert changes.mark_citation(s, first.snapshot) == 1
        s.commit()
    server.route("/b", board(350.0), content_type="application/json")
    second = _crawl(db)
    assert second.status == "ok"
    evs = _events(db)
    assert len(evs) == 1
    e = evs[0]
    assert e.kind == "changed" and e.scope == "entry" and e.cited is True
    assert e.changes["headline_tps"] == [500.0, 350.0]
    with db.Session() as s:
        body = changes.events_json(s, db.settings, [s.get(ChangeEvent, e.id)])[0]
    assert body["old"]["snapshot"] == first.snapshot and body["new"]["snapshot"] == second.snapshot
    assert body["old"]["citation"].startswith(f"http://caveat.test/c/{first.snapshot}")
    assert body["new"]["citation"].startswith(f"http://caveat.test/c/{second.snapshot}")
    assert body["old"]["figures"]["headline_tps"] == 500.0 and body["new"]["figures"]["headline_tps"] == 350.0
    _crawl(db)  # unchanged page: nothing new
    assert len(_events(db)) == 1


def test_404_is_one_vanished_event_and_keeps_snapshots(backend_db, server):
    db = backend_db
    url = server.route("/b", board(500.0), content_type="application/json")
    _source(db, url)
    good = _crawl(db)
    server.routes.pop("/b")
    gone = _crawl(db)
    assert gone.failed
    _crawl(db)
    evs = _events(db)
    assert [(e.kind, e.scope) for e in evs] == [("vanished", "page")], "one event, not one per crawl"
    with db.Session() as s:
        body = changes.events_json(s, db.settings, [evs[0]])[0]
        assert body["old"]["snapshot"] == good.snapshot and body["new"]["snapshot"] == gone.snapshot
        assert body["changes"]["status"] == [200, 404]
        assert s.scalar(select(func.count(Snapshot.id))) == 3, "every snapshot is kept"
    server.route("/b", board(500.0), content_type="application/json")
    _crawl(db)
    assert [e.kind for e in _events(db)] == ["vanished", "returned"]


def test_entry_that_no_longer_parses_vanishes(backend_db, server):
    db = backend_db
    two = json.loads(board(500.0)) + [dict(json.loads(board(90.0))[0], hfId="org/Other-7B")]
    url = server.route("/b", json.dumps(two), content_type="application/json")
    _source(db, url)
    _crawl(db)
    server.route("/b", board(500.0), content_type="application/json")
    _crawl(db)
    evs = _events(db)
    assert [(e.kind, e.scope) for e in evs] == [("vanished", "entry")]
    assert evs[0].old["label"]["model"] == "Other-7B" or "Other" in str(evs[0].old["label"])


def test_conditional_request_unchanged_costs_a_304(backend_db, server):
    db = backend_db
    body = board(500.0).encode()

    def handler(h):
        if h.headers.get("If-None-Match") == '"v1"':
            h.send_response(304)
            h.send_header("ETag", '"v1"')
            h.end_headers()
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("ETag", '"v1"')
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    url = server.route("/b", handler=handler)
    _source(db, url)
    assert _crawl(db).status == "ok"
    second = _crawl(db)
    assert second.status == "ok" and second.not_modified
    assert server.requests[-1]["headers"].get("If-None-Match") == '"v1"'
    with db.Session() as s:
        last = s.scalars(select(Crawl).order_by(Crawl.id.desc())).first()
        assert last.conditional == "not-modified"
        snap = s.scalar(select(Snapshot).where(Snapshot.citation_id == second.snapshot))
        assert snap.status == 304 and snap.payload_length == 0
    assert _events(db) == []


# -- API, Atom, citations mark ---------------------------------------------------------------------
def test_api_changes_atom_and_citation_marks(client, settings, server):
    import feedparser

    db = client.app.state.db
    url = server.route("/b", board(500.0), content_type="application/json")
    _source(db, url)
    first = _crawl(db)
    r = client.post("/api/citations", json={"snapshot": first.snapshot})
    assert r.status_code == 200
    server.route("/b", board(350.0), content_type="application/json")
    _crawl(db)
    server.routes.pop("/b")
    _crawl(db)
    r = client.get("/api/changes")
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] and body["total"] == 2 and body["count"] == 2
    assert [c["kind"] for c in body["changes"]] == ["vanished", "changed"]
    assert all(c["cited"] for c in body["changes"])
    assert body["changes"][1]["changes"]["headline_tps"] == [500.0, 350.0]
    assert client.get("/api/changes?kind=changed").json()["total"] == 1
    assert client.get("/api/changes?source=board&limit=1").json()["next"].endswith("offset=1")
    assert client.get("/api/changes?limit=100000").status_code == 400
    assert client.get("/api/changes?kind=exploded").status_code == 400
    feed_r = client.get("/changes.atom")
    assert feed_r.headers["content-type"].startswith("application/atom+xml")
    feed = feedparser.parse(feed_r.content)
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.version == "atom10" and len(feed.entries) == 2
    assert "500.0 -> 350.0" in feed.entries[1].title
    assert feed.entries[1].link.startswith("http://caveat.test/entries/")
    assert first.snapshot in feed.entries[1].summary
    assert client.get("/changes.atom?limit=201").status_code == 400


def test_quotable_served_marks_the_recipe(client, settings, server):
    db = client.app.state.db
    url = server.route("/b", board(500.0), content_type="application/json")
    _source(db, url)
    _crawl(db)
    with db.Session() as s:
        from app.models import Entry

        rid = s.scalar(select(Entry.recipe_id))
    assert client.get(f"/api/recipes/{rid}/quotable").status_code == 200
    client.app.state.quotable_marks.flush()
    server.route("/b", board(350.0), content_type="application/json")
    _crawl(db)
    [e] = _events(db)
    assert e.cited and e.recipe_id == rid


# -- webhooks ----------------------------------------------------------------------------------------
class Receiver:
    """A webhook receiver on 127.0.0.1: answers 500 ``fail`` times, then 200; keeps what it got."""

    def __init__(self, fail: int = 0, hang: float = 0.0):
        self.got: list[tuple[dict, bytes]] = []
        self.fail, self.hang = fail, hang
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.got.append((dict(self.headers), body))
                if outer.hang:
                    time.sleep(outer.hang)
                code = 500 if len(outer.got) <= outer.fail else 200
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _wait(pred, seconds: float = 40.0) -> bool:
    return wait_until(pred, seconds)


def test_webhook_signed_and_retried_in_process(db, server):
    db.settings.hook_retry_wait = 1.0
    rx = Receiver(fail=2)
    queue_for(db)   # the in-process queue `caveat serve` runs (without it, a crawl makes one attempt itself)
    try:
        with db.Session.begin() as s:
            hooks.add_hook(s, rx.url, "s3cret-s3cret-s3cret")
            with pytest.raises(BadRequest):
                hooks.add_hook(s, rx.url, "short")
        url = server.route("/b", board(500.0), content_type="application/json")
        _source(db, url)
        _crawl(db)
        server.route("/b", board(350.0), content_type="application/json")
        _crawl(db)
        assert _wait(lambda: len(rx.got) >= 3), f"got {len(rx.got)} attempt(s)"
        def delivered():
            with db.Session() as s:
                return s.scalar(select(HookDelivery.status)) == "delivered"
        assert _wait(delivered, 10)
        headers, body = rx.got[-1]
        stamp = headers["X-Caveat-Timestamp"]
        want = "sha256=" + hmac.new(b"s3cret-s3cret-s3cret", stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        assert headers["X-Caveat-Signature"] == want
        assert json.loads(body)["event"]["changes"]["headline_tps"] == [500.0, 350.0]
        assert len({h["X-Caveat-Delivery"] for h, _ in rx.got}) == 1
        with db.Session() as s:
            d = s.scalar(select(HookDelivery))
            assert d.attempts == 3 and [a["code"] for a in d.log] == [500, 500, 200]
    finally:
        rx.stop()


def test_hanging_receiver_is_bounded(db, server):
    db.settings.hook_timeout = 0.5
    db.settings.hook_attempts = 1
    rx = Receiver(hang=3.0)
    queue_for(db)
    try:
        with db.Session.begin() as s:
            hooks.add_hook(s, rx.url, "s3cret-s3cret-s3cret")
        url = server.route("/b", board(500.0), content_type="application/json")
        _source(db, url)
        _crawl(db)
        server.route("/b", board(350.0), content_type="application/json")
        _crawl(db)

        def failed():
            with db.Session() as s:
                return s.scalar(select(HookDelivery.status)) == "failed"
        assert _wait(failed, 20)
        with db.Session() as s:
            d = s.scalar(select(HookDelivery))
            assert "no answer within 0.5 s" in d.last_error
        assert len(_events(db)) == 1, "the event stays, whatever the receiver did"
    finally:
        rx.stop()


def test_crawl_now_api_queues_returns_at_once_and_shows_progress(client, settings, server):
    from app.accounts import auth

    db = client.app.state.db
    url = server.route("/b", board(500.0), content_type="application/json", delay=1.0)
    _source(db, url)
    with db.Session.begin() as s:
        auth.create_user(s, "rita", "a long enough passphrase")
        reviewer = auth.create_token(s, "rita", "rev")
        reader = auth.create_token(s, "rita", "reader", "read", 30)
        admin = auth.create_token(s, "rita", "admin", "read,admin", 30)
    assert client.post("/api/sources/board/crawl", json={}).status_code == 401
    assert client.post("/api/sources/board/crawl", json={},
                       headers={"Authorization": f"Bearer {reader}"}).status_code == 403
    r = client.post("/api/sources/board/crawl", json={}, headers={"Authorization": f"Bearer {reviewer}"})
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["ok"] and body["queued"] is True and body["crawl"]["status"] in ("queued", "running")
    again = client.post("/api/sources/board/crawl", json={}, headers={"Authorization": f"Bearer {reviewer}"}).json()
    assert again["queued"] is False and again["crawl"]["id"] == body["crawl"]["id"], "one crawl, not two"
    assert client.post("/api/sources/nope/crawl", json={},
                       headers={"Authorization": f"Bearer {reviewer}"}).status_code == 404
    during = client.get(body["status_url"]).json()["crawl"]  # the page takes 1 s to answer: still under way
    assert during["status"] in ("queued", "running") and during["job_status"] in ("todo", "doing")
    assert _wait(lambda: client.get(body["status_url"]).json()["crawl"]["status"] == "ok", 30)
    done = client.get(body["status_url"]).json()["crawl"]
    assert done["entries_new"] == 1 and done["trigger"] == "manual"
    listed = client.get("/api/crawls?source=board").json()
    assert listed["total"] == 1 and listed["crawls"][0]["id"] == done["id"]
    assert len(server.requests) == 1
    # schedules over the API: admin scope; a bad one is a 400 and changes nothing
    assert client.post("/api/sources/board/schedule", json={"every": "6h"},
                       headers={"Authorization": f"Bearer {reviewer}"}).status_code == 403
    r = client.post("/api/sources/board/schedule", json={"every": "soon"}, headers={"Authorization": f"Bearer {admin}"})
    assert r.status_code == 400 and "does not parse" in r.json()["error"]
    r = client.post("/api/sources/board/schedule", json={"every": "6h"}, headers={"Authorization": f"Bearer {admin}"})
    assert r.status_code == 200 and r.json()["schedule"]["every"] == "6h"
    assert client.get("/api/sources").json()["sources"][0]["schedule"]["every"] == "6h"


def test_serve_scheduler_runs_due_crawls_in_process(db, server):
    from app.watch.worker import Scheduler

    db.settings.worker_poll = 0.2
    db.settings.host_delay = 0.0
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url)
    with db.Session.begin() as s:
        schedule.set_schedule(s, s.get(Source, src.id), 3600)
    sched = Scheduler(db)
    try:
        def crawled():
            with db.Session() as s:
                return s.scalar(select(Crawl.status).where(Crawl.source_id == src.id)) == "ok"
        assert _wait(crawled, 20)
        time.sleep(1.0)
        assert len(server.requests) == 1, "due once: crawled once"
        with db.Session() as s:
            assert s.scalar(select(Crawl.trigger)) == "schedule"
    finally:
        sched.stop.set()


def test_recipe_page_shows_its_history(client, settings, server):
    db = client.app.state.db
    url = server.route("/b", board(500.0), content_type="application/json")
    _source(db, url)
    first = _crawl(db)
    server.route("/b", board(350.0), content_type="application/json")
    second = _crawl(db)
    [e] = _events(db)
    r = client.get(f"/recipes/{e.recipe_id}")
    assert r.status_code == 200
    assert "History of changes" in r.text and "500.0 -&gt; 350.0" in r.text
    assert f"/c/{first.snapshot}" in r.text and f"/c/{second.snapshot}" in r.text
    data = client.get(f"/recipes/{e.recipe_id}.json").json()
    assert data["changes"][0]["changes"]["headline_tps"] == [500.0, 350.0]


def test_host_that_no_longer_resolves_is_a_vanished_page(backend_db, server):
    db = backend_db
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url)
    good = _crawl(db)
    with db.Session.begin() as s:
        s.get(Source, src.id).url = "http://caveat-gone.invalid/b"  # .invalid never resolves (RFC 6761)
    report = _crawl(db)
    assert report.failed and "cannot resolve host name" in report.error
    [e] = _events(db)
    assert (e.kind, e.scope) == ("vanished", "page") and e.new_snapshot_id is None
    with db.Session() as s:
        body = changes.events_json(s, db.settings, [e])[0]
    assert body["old"]["snapshot"] == good.snapshot and "could not be fetched" in body["detail"]


def test_host_that_never_answers_is_a_clear_failure(backend_db, server):
    db = backend_db
    db.settings.read_timeout = 0.5
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url, every="6h")
    good = _crawl(db)
    server.route("/b", board(350.0), content_type="application/json", delay=3.0)  # headers, then silence
    report = _crawl(db)
    assert report.failed and "sent nothing for 0.5 s" in report.error
    with db.Session() as s:
        assert s.get(Source, src.id).failures == 1
        assert [c for c in s.scalars(select(Snapshot.citation_id).where(Snapshot.source_id == src.id))] == [good.snapshot]
    assert _events(db) == [], "a timeout is not a vanished page"


def test_sources_page_shows_a_queued_crawl(client, settings, server):
    db = client.app.state.db
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url)
    with db.Session.begin() as s:
        schedule.queue_crawl(s, s.get(Source, src.id), "manual")
    page = client.get("/sources").text
    assert "crawl queued" in page


def test_serve_requeues_crawls_its_memory_forgot(db, server):
    """The in-process queue forgets its jobs when `caveat serve` stops: the queued rows run at the next start."""
    from app.watch.worker import Scheduler

    db.settings.worker_poll = 0.2
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url)
    with db.Session.begin() as s:
        crawl, _ = schedule.queue_crawl(s, s.get(Source, src.id), "manual")  # queued, then the server "stopped"
        cid = crawl.id
    sched = Scheduler(db)
    try:
        def ran():
            with db.Session() as s:
                return s.get(Crawl, cid).status == "ok"
        assert _wait(ran, 20)
        assert len(server.requests) == 1
    finally:
        sched.stop.set()


def test_host_turns_are_spaced_and_jitter_is_bounded(backend_db):
    import random as _random

    db = backend_db
    assert schedule.take_host_turn(db, "boards.example", now=T0, delay=2.0) == 0.0
    assert schedule.take_host_turn(db, "boards.example", now=T0, delay=2.0) == 2.0
    assert schedule.take_host_turn(db, "boards.example", now=T0, delay=2.0) == 4.0
    assert schedule.take_host_turn(db, "other.example", now=T0, delay=2.0) == 0.0, "hosts are counted apart"
    assert schedule.take_host_turn(db, "boards.example", now=T0 + timedelta(seconds=60), delay=2.0) == 0.0
    rng = _random.Random(7)
    spread = [schedule.jittered(3600, 0.1, rng).total_seconds() for _ in range(200)]
    assert min(spread) >= 3240 and max(spread) <= 3960 and len(set(spread)) > 100
    assert schedule.retry_after("120", T0) == 120.0
    assert schedule.retry_after("Tue, 01 Dec 2026 12:05:00 GMT", T0) == 300.0
    assert schedule.retry_after("soon", T0) is None


def test_a_dead_writers_torn_series_is_repaired_by_another(settings, server):
    """A worker killed while appending leaves a partial record at the end of its own series; the next
    writer of another series (its worker gone: its slot is free) copies it aside and cuts it."""
    from app.storage import warcfiles
    from app.capture.http import capture_urls
    from tests.capture_helpers import ref_tool, run, warc_files

    url = server.route("/p", "<html>page</html>")
    one = Database(settings.model_copy(update={"warc_series": "w_gone_1"}))
    assert capture_urls(one, [url])[0].ok
    [dead] = [p for p in warc_files(settings) if p.name.startswith("caveat-w_gone_1-")]
    whole = dead.stat().st_size
    with open(dead, "ab") as f:
        f.write(b"\x1f\x8b\x08\x00partial record cut by SIGKILL")
    one.dispose()
    warcfiles._TIDIED.clear()
    two = Database(settings.model_copy(update={"warc_series": "w_alive_2"}))
    assert capture_urls(two, [url])[0].ok
    two.dispose()
    assert dead.stat().st_size == whole
    assert list(settings.warc_dir.glob(f"{dead.name}.*.torn"))
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(settings))])
    assert check.returncode == 0, check.stdout + check.stderr
    names = {p.name.split("-")[1] for p in warc_files(settings)}
    assert names == {"w_gone_1", "w_alive_2"}, "each writer appended only to its own series"


def test_crawl_now_never_runs_beside_a_running_crawl_and_takes_a_queued_one(backend_db, server):
    from app.crawl.workflow import LEASE, owner_tag

    db = backend_db
    url = server.route("/b", board(500.0), content_type="application/json")
    src = _source(db, url)
    with db.Session.begin() as s:
        crawl, _ = schedule.queue_crawl(s, s.get(Source, src.id), "manual")
        queued_id = crawl.id
    report = _crawl(db)  # `caveat crawl` runs the queued crawl itself
    assert report.status == "ok" and report.crawl_id == queued_id
    assert schedule.run_crawl(db, queued_id, src.id) is None, "its job, arriving later, finds it taken"
    with db.Session.begin() as s:
        s.add(Crawl(source_id=src.id, kind="crawl", status="running", owner=owner_tag(), trigger="schedule",
                    lease_until=datetime.now(timezone.utc) + LEASE))
    busy = _crawl(db)
    assert busy.failed and "another process is crawling" in busy.error
    assert len(server.requests) == 1


def test_cli_changes_and_hooks(cli, settings, server):
    url = server.route("/b", board(500.0), content_type="application/json")
    assert cli("source", "add", "board", url, "--kind", "json").exit_code == 0
    assert cli("changes").exit_code == 1, "nothing yet: exit 1"
    assert cli("crawl", "board").exit_code == 0
    server.route("/b", board(350.0), content_type="application/json")
    assert cli("crawl", "board").exit_code == 0
    r = cli("changes")
    assert r.exit_code == 0 and "headline_tps 500.0 -> 350.0" in r.output and "old: http://caveat.test/c/" in r.output
    body = json.loads(cli("changes", "--json", "--kind", "changed").output)
    assert body["ok"] and body["count"] == 1 and body["changes"][0]["changes"]["headline_tps"] == [500.0, 350.0]
    assert cli("hook", "add", "http://127.0.0.1:9/h", "--secret", "short").exit_code == 1
    r = cli("hook", "add", "ftp://127.0.0.1/h", "--secret", "s3cret-s3cret-s3cret")
    assert r.exit_code == 1 and "error:" in r.output
    added = json.loads(cli("hook", "add", "http://127.0.0.1:9/h", "--secret", "s3cret-s3cret-s3cret", "--json").output)
    assert added["ok"] and "secret" not in json.dumps(added)
    listed = json.loads(cli("hook", "list", "--json").output)
    assert listed["count"] == 1 and "s3cret" not in json.dumps(listed)
    assert cli("hook", "remove", str(added["hook"]["id"])).exit_code == 0
    assert cli("hook", "list").exit_code == 1


def test_series_writers_cdxj_check_rebuilds_only_a_settled_gap(settings, server):
    from app.storage import warcfiles
    from app.capture.http import capture_urls

    db = Database(settings.model_copy(update={"warc_series": "w_check_1"}))
    assert capture_urls(db, [server.route("/p", "<html>x</html>")])[0].ok
    index = warcfiles.index_path(settings)
    line = index.read_text()
    index.write_text("")  # as if the writer had been killed between its commit and its merge
    warcfiles.MERGED_UNCHECKED[str(settings.index_dir)] = 1
    warcfiles._CHECKED.clear()
    assert warcfiles.check_cdxj(db) is False, "a young row may still be merged by its writer"
    assert index.read_text() == ""
    warcfiles.MERGED_UNCHECKED[str(settings.index_dir)] = 1
    warcfiles._CHECKED.clear()
    assert warcfiles.check_cdxj(db, now=datetime.now(timezone.utc) + timedelta(seconds=300)) is True
    assert index.read_text() == line
    db.dispose()
