"""Issue 24, item 8: a webhook receiver cannot hold or exhaust Caveat. Real receivers on 127.0.0.1:
one that trickles its answer a byte at a time (cut at CAVEAT_HOOK_TIMEOUT in total), one whose answer
never ends (at most a few KiB read), deliveries deferred twice (never more than CAVEAT_HOOK_ATTEMPTS
attempts), and `caveat crawl` with hooks (exits cleanly, its deliveries attempted and, when they fail,
picked up by the serving process's housekeeping)."""

from __future__ import annotations

import subprocess
import time

from sqlalchemy import select

from app.models import HookDelivery
from app.watch import hooks
from app.watch.jobs import queue_for
from app.watch.worker import housekeeping
from tests.capture_helpers import CLI, REPO, cli_env
from tests.helpers import RawAnswerServer
from tests.test_watch import Receiver, _crawl, _source, _wait, board

SECRET = "s3cret-s3cret-s3cret"


class RawReceiver(RawAnswerServer):
    """Reads the request, then answers with ``answer()``; records how many bytes it got out."""

    def __init__(self, answer):
        super().__init__(answer, path="/hook")


def _one_delivery(db, server, url):
    with db.Session.begin() as s:
        hooks.add_hook(s, url, SECRET)
    page = server.route("/b", board(500.0), content_type="application/json")
    _source(db, page)
    _crawl(db)
    server.route("/b", board(350.0), content_type="application/json")
    _crawl(db)   # one change event: one delivery, its first attempt made here (no queue runs in this process)
    with db.Session() as s:
        return s.scalar(select(HookDelivery))


def test_a_receiver_trickling_its_answer_is_cut_at_the_total_timeout(db, server):
    db.settings.hook_timeout = 2.0
    db.settings.hook_attempts = 1
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    def trickle():
        for ch in answer:   # one byte every 0.5 s: 20 s for the whole answer, each read well under the timeout
            time.sleep(0.5)
            yield bytes([ch])

    rx = RawReceiver(trickle)
    try:
        d = _one_delivery(db, server, rx.url)
        assert d.status == "failed" and d.attempts == 1
        assert "no answer within 2 s" in d.last_error
        assert _wait(lambda: rx.sent, 30)
        assert rx.sent[0] < len(answer), "the receiver was cut off before it finished"
    finally:
        rx.stop()


def test_an_endless_answer_is_read_a_few_kib_at_most(db, server):
    def endless():
        yield b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        chunk = b"%x\r\n" % 65536 + b"x" * 65536 + b"\r\n"
        for _ in range(200 * 16):   # 200 MiB, if anybody read it all
            yield chunk

    rx = RawReceiver(endless)
    try:
        d = _one_delivery(db, server, rx.url)
        assert d.status == "delivered" and d.attempts == 1 and d.last_code == 200
        assert _wait(lambda: rx.sent, 30)
        assert rx.sent[0] < 16 * 1024 * 1024, f"the receiver got {rx.sent[0]:,} bytes out"
    finally:
        rx.stop()


def test_a_delivery_deferred_twice_never_passes_the_attempt_limit(db, server):
    db.settings.hook_attempts = 3
    rx = Receiver(fail=100)
    try:
        d = _one_delivery(db, server, rx.url)
        assert d.status == "pending" and d.attempts == 1
        for _ in range(5):   # duplicate jobs for one delivery, as a re-defer racing a retry makes them
            try:
                hooks.deliver(db, d.id)
            except hooks.DeliveryFailed:
                pass
        with db.Session() as s:
            d = s.get(HookDelivery, d.id)
            assert d.status == "failed" and d.attempts == 3 == len(d.log)
        assert len(rx.got) == 3
    finally:
        rx.stop()


def test_caveat_crawl_with_hooks_exits_cleanly_and_serve_retries_what_failed(db, settings, server):
    rx = Receiver(fail=1)
    try:
        with db.Session.begin() as s:
            hooks.add_hook(s, rx.url, SECRET)
        page = server.route("/b", board(500.0), content_type="application/json")
        env = cli_env(settings, CAVEAT_HOOK_RETRY_WAIT="1")
        run = lambda *a: subprocess.run(CLI + list(a), cwd=REPO, env=env, capture_output=True, text=True, timeout=120)  # noqa: E731
        assert run("source", "add", "board", page, "--kind", "json").returncode == 0
        assert run("crawl", "board").returncode == 0
        server.route("/b", board(350.0), content_type="application/json")
        r = run("crawl", "board")
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        with db.Session() as s:
            d = s.scalar(select(HookDelivery))
            assert d.status == "pending" and d.attempts == 1 and d.last_code == 500   # tried once, left to serve
        db.settings.hook_retry_wait = 1.0
        queue = queue_for(db)                    # the serving process's queue, already running
        assert housekeeping(db, queue)["deliveries"] == 1
        assert housekeeping(db, queue)["deliveries"] == 0    # held by its job now: not deferred twice

        def delivered():
            with db.Session() as s:
                return s.scalar(select(HookDelivery.status)) == "delivered"
        assert _wait(delivered, 30)
        assert len(rx.got) == 2
    finally:
        rx.stop()
