"""Big captures fetch and compress in worker processes: same records, per-URL errors, a dead worker."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlalchemy import func, select

import archive.prepare as prepare
from app.models import Snapshot
from app.capture.http import PROCESS_MIN_URLS, capture_urls, default_processes, spool_dir
from app.storage.snapshots import load_record
from app.storage.warcfiles import index_path
from tests.capture_helpers import CLI, REPO, cli_env, ref_tool, run, warc_files


def _page(i: int) -> bytes:
    rows = b"".join(b"<tr><td>model-%d</td><td>%s</td></tr>\n" % (n, hashlib.sha256(b"%d/%d" % (i, n)).hexdigest()
                                                                        .encode()) for n in range(60))
    return b"<html><table>\n" + rows + b"</table></html>\n"


@pytest.fixture
def spooled(monkeypatch):
    """Payload lengths of the records the writer (this process) appended from a spool file."""
    from archive.warcwriter import WarcWriter

    seen: list[int] = []
    real = WarcWriter.append

    def spy(self, rec):
        if rec.payload_path:
            seen.append(rec.payload_length)
        return real(self, rec)

    monkeypatch.setattr(WarcWriter, "append", spy)
    return seen


@pytest.fixture
def stages(monkeypatch):
    """Every ProcessStage a capture starts, to look at (or kill) its workers."""
    made: list[prepare.ProcessStage] = []
    real = prepare.ProcessStage.__init__

    def spy(self, *a, **kw):
        made.append(self)
        real(self, *a, **kw)

    monkeypatch.setattr(prepare.ProcessStage, "__init__", spy)
    return made


def test_many_urls_go_through_worker_processes_and_read_back(db, server, stages, spooled):
    bodies = {f"/p{i}": _page(i) for i in range(PROCESS_MIN_URLS)}
    urls = [server.route(path, body) for path, body in bodies.items()]
    urls.append(server.redirect("/moved", server.url("/p0")))  # a redirect hop, then a payload seen before
    urls.append(server.route("/gz", _page(99), gzip_body=True))
    urls.append(server.url("/missing"))  # 404
    urls.append("ftp://example.org/x")  # refused before any fetch
    urls.append(server.route("/big", b"x" * 50000))
    db.settings.max_body_bytes = 40000  # the workers get the limits of these settings

    results = capture_urls(db, urls, processes=2)

    assert len(stages) == 1 and len(stages[0].workers) == 2
    by_url = {r.url: r for r in results}
    for path, body in bodies.items():
        r = by_url[server.url(path)]
        assert r.error is None, r.error
        stored = load_record(db.settings, r.snapshot)
        assert stored.fixity == "ok" and stored.raw_body == body
    moved, p0 = by_url[server.url("/moved")], by_url[server.url("/p0")]
    assert [h.status for h in moved.hops] == [302]
    # the same payload twice: one response, one revisit of it (which one depends on the batch it landed in)
    assert sorted([moved.snapshot.record_type, p0.snapshot.record_type]) == ["response", "revisit"]
    assert load_record(db.settings, moved.snapshot).raw_body == bodies["/p0"]
    assert load_record(db.settings, by_url[server.url("/gz")].snapshot).body == _page(99)
    assert by_url[server.url("/missing")].status == 404
    assert "only http and https" in by_url["ftp://example.org/x"].error
    assert "over the limit of 40,000" in by_url[server.url("/big")].error
    with db.Session() as s:
        rows = s.scalar(select(func.count()).select_from(Snapshot))
    assert rows == PROCESS_MIN_URLS + 2 + 1 + 1  # pages, the redirect's two hops, gz, 404
    assert len(index_path(db.settings).read_text().splitlines()) == rows
    check = run([ref_tool("warcio"), "check", *map(str, warc_files(db.settings))])
    assert check.returncode == 0, check.stdout + check.stderr
    assert spooled == []  # small bodies are compressed in memory


def test_large_bodies_are_spooled_by_the_workers(db, server, stages, spooled, monkeypatch):
    monkeypatch.setattr(prepare, "PREPARE_MAX", 1000)  # handed to each worker when it starts
    body = _page(7) * 40
    urls = [server.route(f"/large{i}", body + b"%d" % i, chunked=True) for i in range(3)]
    results = capture_urls(db, urls, processes=2)
    for i, r in enumerate(results):
        assert r.error is None, r.error
        assert load_record(db.settings, r.snapshot).raw_body == body + b"%d" % i
    assert sorted(spooled) == [len(body) + 1] * 3  # each came through a spool file...
    assert not list(spool_dir(db.settings).glob("*"))  # ...which the append consumed


def _socket_pids(port: int, pids: list[int]) -> list[int]:
    """Which of ``pids`` holds a TCP socket whose local port is ``port`` (read from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    found = []
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                found.append(pid)
                break
    return found


def test_a_worker_that_dies_fails_only_its_urls(db, server, stages):
    killed: list[int] = []

    def kill_my_client(h):
        pids = [proc.pid for proc, _ in stages[0].workers]
        victim = _socket_pids(h.client_address[1], pids)
        killed.extend(victim)
        for pid in victim:
            os.kill(pid, 9)
        h.close_connection = True

    server.route("/die", handler=kill_my_client)
    urls = [server.route(f"/ok{i}", _page(i), delay=0.05) for i in range(30)]
    urls.insert(3, server.url("/die"))  # queued early, with URLs queued behind it in the same worker
    results = capture_urls(db, urls, processes=3)

    assert len(killed) == 1
    # only the URL the dead worker was fetching fails; what it had queued went to the other workers
    [failed] = [r for r in results if r.error]
    assert failed.url == server.url("/die") and "fetch worker process died" in failed.error
    stored = [r for r in results if r.error is None]
    assert len(stored) == len(urls) - 1
    for r in stored:
        assert load_record(db.settings, r.snapshot).fixity == "ok"
    verify = run([*CLI, "verify"], cwd=REPO, env=cli_env(db.settings))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_workers_started_from_a_fork_server_capture_too(db, server, stages):
    """In a threaded process (here: the test server's thread, in the web server: crawl threads) the
    workers come from a fork server; they must fetch and build records just the same."""
    urls = [server.route(f"/t{i}", _page(i)) for i in range(4)]
    out = {}

    def in_thread():
        out["results"] = capture_urls(db, urls, processes=2)

    t = threading.Thread(target=in_thread)
    t.start()
    t.join(120)
    assert [r.error for r in out["results"]] == [None] * 4
    assert stages[0].start_method == "forkserver"


@pytest.mark.parametrize("threads, method", [(0, "fork"), (1, "forkserver")])
def test_workers_are_forked_only_from_a_single_threaded_process(threads, method):
    code = ("import threading, time; from archive.prepare import _context\n"
            f"for _ in range({threads}): threading.Thread(target=time.sleep, args=(5,), daemon=True).start()\n"
            "print(_context().get_start_method())")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == method


def test_default_processes():
    class S:
        capture_processes = None

    assert default_processes(S, PROCESS_MIN_URLS - 1, 8) == 0  # a few URLs: threads
    assert default_processes(S, PROCESS_MIN_URLS, 8) == 8
    S.capture_processes = 0
    assert default_processes(S, 1000, 8) == 0
    S.capture_processes = 3
    assert default_processes(S, 1000, 8) == 3


def test_cli_capture_of_many_urls_forks_workers(db, server):
    """The CLI is single-threaded, so its workers are plain forks; a URL file feeds it."""
    urls = [server.route(f"/c{i}", _page(i)) for i in range(PROCESS_MIN_URLS)]
    listing = Path(db.settings.data_dir) / "urls.txt"
    listing.write_text("# leaderboards\n" + "\n".join(urls) + "\n\n")
    proc = subprocess.run([*CLI, "-v", "capture", "--from-file", str(listing)], cwd=REPO,
                          env=cli_env(db.settings), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"fetching {PROCESS_MIN_URLS} URL(s) in 8 worker processes (fork)" in proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("200  ")]
    assert len(lines) == PROCESS_MIN_URLS
    with db.Session() as s:
        assert s.scalar(select(func.count()).select_from(Snapshot)) == PROCESS_MIN_URLS


def test_a_dead_worker_fails_only_its_current_url_and_hands_on_its_queue():
    """A worker answers one URL, then dies on the next: the answer is delivered, only the URL it was
    working on fails, and the URL queued behind it goes to a live worker."""
    import multiprocessing

    stage = prepare.ProcessStage.__new__(prepare.ProcessStage)
    dead_side, dead_worker = multiprocessing.Pipe()
    live_side, live_worker = multiprocessing.Pipe()
    stage.workers, stage.ready = [], []
    stage.held = {dead_side: [], live_side: []}
    stage.urls = {}
    for i in range(4):  # 0, 2 to the first pipe; 1, 3 to the second (least loaded first)
        stage.submit(i, f"http://example.org/{i}")
    assert stage.held == {dead_side: [0, 2], live_side: [1, 3]}
    assert [dead_worker.recv(), dead_worker.recv()] == [(0, "http://example.org/0"), (2, "http://example.org/2")]
    dead_worker.send((0, ("hops of 0", None)))
    dead_worker.close()  # dies while working on 2
    stage.held[dead_side].append(4)  # and had 4 queued (sent before it died)
    stage.urls[4] = "http://example.org/4"
    got = []
    for _ in range(3):  # the answer first, the death (EOF) at the latest on the next call
        got += stage.done(timeout=0.5)
    assert (0, ("hops of 0", None)) in got
    assert (2, (None, prepare.DIED)) in got
    assert stage.held == {live_side: [1, 3, 4]}  # 4 was handed to the live worker
    assert [live_worker.recv() for _ in range(3)][-1] == (4, "http://example.org/4")


def test_a_send_to_a_dead_worker_keeps_what_it_answered():
    import multiprocessing

    stage = prepare.ProcessStage.__new__(prepare.ProcessStage)
    side, worker = multiprocessing.Pipe()
    stage.workers, stage.ready, stage.held, stage.urls = [], [], {side: []}, {}
    stage.submit(0, "http://example.org/0")
    worker.recv()
    worker.send((0, ("hops of 0", None)))
    worker.close()
    stage.submit(1, "http://example.org/1")  # the send fails: the worker is gone
    got = stage.done(timeout=0.5)
    assert sorted(got) == [(0, ("hops of 0", None)), (1, (None, prepare.DIED))]
    assert stage.held == {}
