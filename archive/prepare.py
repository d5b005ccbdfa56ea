"""The fetch stage of a capture: fetch a URL (and its redirect hops) and build its WARC records.

:class:`ThreadStage` runs :class:`Preparer` in threads of the capturing process, :class:`ProcessStage`
in worker processes fed over pipes. This module imports only the ``archive`` package, so a worker
started from a fork server is light, and everything a worker returns is picklable. The writer
(``app.capture.http``) decides what needs the database: a timestamp unique per SURT key, and a
``revisit`` instead of a second copy of a payload.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import wait as connection_wait
from pathlib import Path

from archive.citeid import citation_id_for_record
from archive.fetcher import Fetcher, FetchError, Limits, ssl_context
from archive.surt import surt
from archive.timestamps import ts17
from archive.warcwriter import BuiltRecord, build_request, build_response

log = logging.getLogger("caveat.capture")
PREPARE_MAX = 1024 * 1024  # bodies up to this size are compressed in memory; larger ones through a spool file


@dataclass
class FetchedHop:
    """One hop of one URL, fetched, with its records built and dated ``ts`` (picklable)."""

    url: str
    ts: str
    started_at: datetime
    status: int
    mime: str | None
    location: str | None
    ip: str | None
    body_length: int
    sha256: bytes
    surt: str
    citation_id: str  # the first candidate derived from the response's WARC-Record-ID
    response: BuiltRecord
    request: BuiltRecord

    def discard(self) -> None:
        self.response.discard()
        self.request.discard()


class Preparer:
    """Fetches a URL and builds its records; one per thread pool, or one per worker process."""

    def __init__(self, limits: Limits, level: int, spool: Path, prepare_max: int | None = None):
        self.fetcher = Fetcher(limits)
        self.level = level
        self.spool = spool
        self.prepare_max = PREPARE_MAX if prepare_max is None else prepare_max

    def close(self) -> None:
        self.fetcher.close()

    def __call__(self, url: str, headers: list[tuple[str, str]] | None = None) -> tuple[list[FetchedHop] | None, str | None]:
        try:
            return self._prepare(url, headers), None
        except FetchError as exc:
            return None, exc.message
        except Exception as exc:  # noqa: BLE001 - one bad URL must not stop the others
            log.exception("unexpected error fetching %s", url)
            return None, f"unexpected error: {type(exc).__name__}: {exc}"

    def _prepare(self, url: str, headers: list[tuple[str, str]] | None = None) -> list[FetchedHop]:
        hops = self.fetcher.fetch(url, headers)
        out: list[FetchedHop] = []
        try:
            for hop in hops:
                ts = ts17(hop.started_at)
                body = hop.payload() if hop.body_length <= self.prepare_max else hop.body
                resp = build_response(hop.url, ts, hop.stored_head(), body, hop.body_length, hop.sha256, ip=hop.ip,
                                      level=self.level, spool_dir=self.spool, block_sha256=hop.block_sha256)
                try:
                    req = build_request(hop.url, ts, hop.request_head, concurrent_to=resp.record_id, ip=hop.ip,
                                        level=self.level)
                except BaseException:
                    resp.discard()
                    raise
                out.append(FetchedHop(url=hop.url, ts=ts, started_at=hop.started_at, status=hop.status,
                                      mime=hop.mime, location=hop.location, ip=hop.ip,
                                      body_length=hop.body_length, sha256=hop.sha256, surt=surt(hop.url),
                                      citation_id=citation_id_for_record(resp.record_id), response=resp,
                                      request=req))
            return out
        except BaseException:
            for item in out:
                item.discard()
            raise
        finally:
            for hop in hops:
                hop.close()


Result = tuple[list[FetchedHop] | None, str | None]  # (hops, None) or (None, error message)
DIED = ("a fetch worker process died (out of memory or killed); nothing was stored for this URL, "
        "capture it again")


class ThreadStage:
    """The fetch stage in threads of this process: ``submit(i, url)``, then ``done(timeout)`` gives
    ``[(i, result), ...]`` as they finish (an empty list when ``timeout`` passes first)."""

    start_method = "thread"

    def __init__(self, limits: Limits, level: int, spool: Path, threads: int, queue: int = 64):
        self.queue = max(queue, 2 * threads)  # URLs submitted ahead of the threads
        self.preparer = Preparer(limits, level, spool)
        self.pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="caveat-fetch")
        self.futures: dict = {}

    def submit(self, i: int, url: str, headers: list[tuple[str, str]] | None = None) -> None:
        self.futures[self.pool.submit(self.preparer, url, headers)] = i

    def done(self, timeout: float | None) -> list[tuple[int, Result]]:
        finished, _ = wait(list(self.futures), timeout=timeout, return_when=FIRST_COMPLETED)
        return [(self.futures.pop(f), f.result()) for f in finished]

    @property
    def capacity(self) -> int:
        return self.queue

    def close(self, abort: bool = False) -> list[Result]:
        """Stop; returns the results that were still in flight (so their spool files can be removed).
        Threads cannot be killed: with ``abort`` queued URLs are dropped and running fetches stop at
        their next chunk of body."""
        if abort:
            self.preparer.fetcher.cancel()
        for f in self.futures:
            f.cancel()
        self.pool.shutdown(wait=True)
        left = [f.result() for f in self.futures if not f.cancelled()]
        self.futures.clear()
        self.preparer.close()
        return left


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when the process that started it dies (even by SIGKILL), so
    no worker outlives a killed capture still holding its inherited files and lock."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - not Linux; the closed pipe still ends us
        return
    if parent_pid > 0 and os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


def _worker_main(conn, limits: Limits, level: int, spool: Path, prepare_max: int, parent_pid: int,
                 inherited: list[int]) -> None:
    """A worker process: fetch each ``(i, url)`` that arrives on ``conn``, send back ``(i, result)``."""
    _die_with_parent(parent_pid)
    for fd in inherited:  # other workers' pipe ends, inherited through fork: their EOF must not wait for us
        try:
            os.close(fd)
        except OSError:
            pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and closes the pipe
    preparer = Preparer(limits, level, spool, prepare_max)
    try:
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return
            if msg is None:
                return
            i, url = msg
            result = preparer(url)
            try:
                conn.send((i, result))
            except (BrokenPipeError, OSError):
                for hop in result[0] or []:
                    hop.discard()
                return
    finally:
        preparer.close()


def _context():
    """``fork`` when this process runs one thread (the CLI): workers start at once and share the loaded
    code. Otherwise (the web server runs crawls in threads) ``forkserver``, so no worker is a fork of a
    threaded parent."""
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["archive.prepare"])
    return ctx


class ProcessStage:
    """The fetch stage in worker processes, each fed over its own pipe (DEPTH URLs queued, so it never
    waits for the writer). A worker that dies fails only the URL it was fetching; the URLs queued
    behind it go to the other workers."""

    DEPTH = 8

    def __init__(self, limits: Limits, level: int, spool: Path, processes: int):
        ssl_context()  # made once here; forked workers inherit it
        ctx = _context()
        self.start_method = ctx.get_start_method()
        self.workers: list[tuple] = []  # (process, connection)
        self.held: dict = {}  # connection -> indices sent and not yet answered
        try:
            for _ in range(max(1, processes)):
                parent, child = ctx.Pipe()
                # a forked worker inherits every parent-side pipe end made so far, its own included
                inherited = [c.fileno() for _, c in self.workers] + [parent.fileno()] \
                    if self.start_method == "fork" else []
                # the parent of a forkserver worker is the fork server, which exits when this process does
                parent_pid = os.getpid() if self.start_method == "fork" else -1
                proc = ctx.Process(target=_worker_main, daemon=True, name="caveat-fetch",
                                   args=(child, limits, level, spool, PREPARE_MAX, parent_pid, inherited))
                proc.start()
                child.close()
                self.workers.append((proc, parent))
                self.held[parent] = []
        except BaseException:
            self.close(abort=True)
            raise
        self.urls: dict[int, str] = {}  # submitted and not answered yet
        self.ready: list[tuple[int, Result]] = []  # results to hand out at the next done()

    @property
    def capacity(self) -> int:
        """URLs to keep submitted: DEPTH per live worker."""
        return self.DEPTH * len(self.held) or 1

    def submit(self, i: int, url: str) -> None:
        if not self.held:
            self.ready.append((i, (None, DIED)))
            return
        conn = min(self.held, key=lambda c: len(self.held[c]))
        try:
            conn.send((i, url))
        except OSError:
            self._lose(conn)
            self.submit(i, url)
            return
        self.held[conn].append(i)
        self.urls[i] = url

    def _lose(self, conn) -> None:
        """A worker died: results it sent before dying still count; the URL it was working on (the
        first it still held: it works in order) fails; the ones queued behind it go to the others."""
        held = self.held.pop(conn, [])
        try:
            while held and conn.poll(0):
                i, result = conn.recv()
                held.remove(i)
                self.urls.pop(i, None)
                self.ready.append((i, result))
        except (EOFError, OSError):
            pass
        conn.close()
        if held:
            self.ready.append((held[0], (None, DIED)))
            self.urls.pop(held[0], None)
        for i in held[1:]:
            self.submit(i, self.urls.pop(i))

    def done(self, timeout: float | None) -> list[tuple[int, Result]]:
        if self.ready:
            out, self.ready = self.ready, []
            return out
        if not self.held:
            return []
        out = []
        for conn in connection_wait(list(self.held), timeout):
            try:
                i, result = conn.recv()
            except (EOFError, OSError):
                self._lose(conn)
                continue
            self.held[conn].remove(i)
            self.urls.pop(i, None)
            out.append((i, result))
        out += self.ready
        self.ready = []
        return out

    def close(self, abort: bool = False) -> list[Result]:
        """Stop every worker: when the work is done, let them finish and exit; with ``abort`` (an error
        or Ctrl-C in the capture), kill them at once. Returns results that arrived uncollected."""
        left = []
        for proc, conn in self.workers:
            if abort:
                proc.kill()
                continue
            try:
                if conn in self.held:
                    conn.send(None)
            except OSError:
                pass
        for proc, conn in self.workers:
            try:
                while not abort and self.held.get(conn) and conn.poll(30):
                    _, result = conn.recv()
                    self.held[conn].pop(0)
                    left.append(result)
            except (EOFError, OSError):
                pass
            conn.close()
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self.held.clear()
        return left
