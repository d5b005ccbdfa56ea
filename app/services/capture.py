"""Capture URLs into WARC and index them: ``capture_urls(db, urls)``.

Fetches run concurrently; one writer appends each URL's records (response or revisit, then request,
for every redirect hop) and, per batch, fsyncs the file before the batch's ``snapshots`` rows
commit. A URL that fails writes nothing. See docs/capture.md.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Callable

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.db import Database, chunked
from app.models import Snapshot
from app.services.warcfiles import WarcStore
from archive import digests
from archive.citeid import citation_id_for_record
from archive.fetcher import Fetcher, FetchError, Hop, Limits
from archive.surt import surt
from archive.timestamps import bump, parse_ts17, ts17
from archive.warcwriter import PreparedBlock, prepare_block

log = logging.getLogger("caveat.capture")
BATCH = 64  # records of at most this many URLs share one fsync and one commit
BATCH_WAIT = 0.5  # seconds a partial batch waits for slow fetches before it is stored anyway
WORKERS = 8  # fetch threads (compression runs in them, outside the GIL)
PREPARE_MAX = 1024 * 1024  # bodies up to this size are compressed in the fetch threads (bounded memory)
_COLUMNS = [c.key for c in Snapshot.__table__.columns if c.key != "id"]


@dataclass
class CaptureResult:
    url: str
    final_url: str | None = None
    status: int | None = None
    size: int | None = None
    snapshot: Snapshot | None = None
    hops: list[Snapshot] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def citation_id(self) -> str | None:
        return self.snapshot.citation_id if self.snapshot is not None else None


def limits_for(settings) -> Limits:
    return Limits(connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout,
                  max_body_bytes=settings.max_body_bytes, max_redirects=settings.max_redirects,
                  allow_private=settings.allow_private_addresses, user_agent=settings.user_agent)


@dataclass
class _Fetched:
    hop: Hop
    payload: bytes | None = None  # the body, when small enough to hold in memory
    prepared: PreparedBlock | None = None  # its compressed form, made in the fetch thread


def _fetch(fetcher: Fetcher, url: str, level: int) -> tuple[list[_Fetched] | None, str | None]:
    try:
        return _fetch_and_prepare(fetcher, url, level), None
    except FetchError as exc:
        return None, exc.message
    except Exception as exc:  # noqa: BLE001 - one bad URL must not stop the others
        log.exception("unexpected error fetching %s", url)
        return None, f"unexpected error: {type(exc).__name__}: {exc}"


def _fetch_and_prepare(fetcher: Fetcher, url: str, level: int) -> list[_Fetched]:
    """Fetch (with redirects), then compress each small body here, in the fetch thread."""
    hops: list[Hop] = []
    try:
        hops = fetcher.fetch(url)
        out = []
        for hop in hops:
            item = _Fetched(hop)
            if hop.body_length <= PREPARE_MAX:
                hop.body.seek(0)
                item.payload = hop.body.read()
                item.prepared = prepare_block(hop.stored_head(), item.payload, level)
            out.append(item)
        return out
    except BaseException:
        for hop in hops:
            hop.close()
        raise


def capture_urls(db: Database, urls: list[str], *, source_id: int | None = None,
                 progress: Callable[[CaptureResult], None] | None = None,
                 notice: Callable[[str], None] | None = None, workers: int = WORKERS) -> list[CaptureResult]:
    """Capture each URL; returns one result per URL, in order. ``progress(result)`` is called as
    each URL's rows commit; ``notice(message)`` hears about repairs (a torn tail truncated)."""
    results: list[CaptureResult | None] = [None] * len(urls)
    if not urls:
        return []
    fetcher = Fetcher(limits_for(db.settings))
    try:
        with WarcStore(db, notice=notice) as store, ThreadPoolExecutor(max(1, min(workers, len(urls)))) as pool:
            window = max(2 * workers, BATCH)
            pending: deque = deque()
            batch: list[tuple[int, list[_Fetched]]] = []
            next_i = 0
            batch_started = 0.0
            while next_i < len(urls) or pending:
                while next_i < len(urls) and len(pending) < window:
                    pending.append((next_i, pool.submit(_fetch, fetcher, urls[next_i], db.settings.warc_gzip_level)))
                    next_i += 1
                i, fut = pending.popleft()
                if batch and not fut.done():
                    # One fsync per batch: give slow fetches a moment, then store what is ready.
                    try:
                        fut.result(timeout=max(0.0, BATCH_WAIT - (time.monotonic() - batch_started)))
                    except FutureTimeout:
                        _store_batch(db, store, urls, batch, results, source_id, progress)
                        batch = []
                hops, error = fut.result()
                if error is not None:
                    results[i] = CaptureResult(url=urls[i], error=error)
                    _tell(progress, results[i])
                else:
                    if not batch:
                        batch_started = time.monotonic()
                    batch.append((i, hops))
                if batch and (len(batch) >= BATCH or not pending):
                    _store_batch(db, store, urls, batch, results, source_id, progress)
                    batch = []
            store.update_cdxj([snap for r in results if r is not None and r.snapshot is not None
                               for snap in (*r.hops, r.snapshot)])
    finally:
        fetcher.close()
    return [r for r in results if r is not None]


def _tell(progress, result: CaptureResult) -> None:
    if progress is not None:
        progress(result)


def _store_batch(db: Database, store: WarcStore, urls: list[str], batch: list[tuple[int, list[_Fetched]]],
                 results: list, source_id: int | None, progress) -> None:
    """Write every record of the batch, fsync, then commit its rows. On any failure the file is cut
    back to where the batch started and no row commits."""
    store.rotate_if_full()
    writer = store.writer
    start = writer.size
    done: list[tuple[int, list[Snapshot], list[Hop]]] = []
    try:
        with db.Session() as s:
            planner = _Planner(s, [item.hop for _, items in batch for item in items])
            for i, items in batch:
                rows = [planner.write_hop(writer, item, source_id) for item in items]
                done.append((i, rows, [item.hop for item in items]))
            writer.sync()
            planner.assign_citation_ids([r for _, rows, _ in done for r in rows])
            saved = iter(planner.add_rows([r for _, rows, _ in done for r in rows]))
            done = [(i, [next(saved) for _ in rows], hops) for i, rows, hops in done]
            s.commit()
    except BaseException:
        writer.truncate(start)
        writer.sync()
        raise
    finally:
        for _, items in batch:
            for item in items:
                item.hop.close()
    for i, rows, hops in done:
        last = hops[-1]
        results[i] = CaptureResult(url=urls[i], final_url=last.url, status=last.status, size=last.body_length,
                                   snapshot=rows[-1], hops=rows[:-1])
        _tell(progress, results[i])


class _Planner:
    """Per-batch decisions that need the database: unique timestamps, revisit targets, citation ids.
    Looks everything up for the whole batch at once."""

    def __init__(self, session: Session, hops: list[Hop]):
        self.s = session
        urls = sorted({h.url for h in hops})
        earliest = min((ts17(h.started_at) for h in hops), default="0")
        self.deferred: list[tuple[Snapshot, Snapshot]] = []
        self.used_ts: dict[str, set[str]] = {u: set() for u in urls}
        for chunk in chunked(urls):
            for url, ts in session.execute(select(Snapshot.url, Snapshot.timestamp)
                                           .where(Snapshot.url.in_(chunk), Snapshot.timestamp >= earliest)):
                self.used_ts[url].add(ts)
        self.originals: dict[str, Snapshot] = {}  # sha256 hex -> first response row with that payload
        shas = sorted({h.sha256.hex() for h in hops if h.body_length > 0})
        for chunk in chunked(shas):
            for row in session.scalars(select(Snapshot).where(Snapshot.sha256.in_(chunk),
                                                              Snapshot.record_type == "response")
                                       .order_by(Snapshot.id)):
                self.originals.setdefault(row.sha256, row)

    def unique_ts(self, url: str, ts: str) -> str:
        used = self.used_ts.setdefault(url, set())
        while ts in used:
            ts = bump(ts)
        used.add(ts)
        return ts

    def write_hop(self, writer, item: _Fetched, source_id: int | None) -> Snapshot:
        hop = item.hop
        ts = self.unique_ts(hop.url, ts17(hop.started_at))
        sha_hex = hop.sha256.hex()
        head = hop.stored_head()
        original = self.originals.get(sha_hex) if hop.body_length > 0 else None
        if original is not None:
            rec = writer.write_revisit(hop.url, ts, head, hop.sha256, refers_to=original.record_id,
                                       refers_to_uri=original.url, refers_to_ts=original.timestamp, ip=hop.ip)
        else:
            rec = writer.write_response(hop.url, ts, head, item.payload if item.payload is not None else hop.body,
                                        hop.body_length, hop.sha256, ip=hop.ip, prepared=item.prepared)
        req = writer.write_request(hop.url, ts, hop.request_head, concurrent_to=rec.record_id, ip=hop.ip)
        row = Snapshot(
            url=hop.url, surt=surt(hop.url), timestamp=ts, captured_at=parse_ts17(ts), status=hop.status,
            mime=hop.mime, record_type="revisit" if original is not None else "response",
            warc_file=writer.path.name, offset=rec.offset, length=rec.length, record_id=rec.record_id,
            request_offset=req.offset, request_length=req.length, payload_digest=digests.label(hop.sha256),
            block_digest=rec.block_digest, sha256=sha_hex, payload_length=hop.body_length,
            refers_to_id=original.id if original is not None else None,
            refers_to_record_id=original.record_id if original is not None else None,
            redirect_to=hop.location, origin="capture", source_id=source_id, fixity="unchecked",
        )
        if original is None and hop.body_length > 0:
            self.originals.setdefault(sha_hex, row)
        if original is not None and original.id is None:  # refers to a row of this same batch
            self.deferred.append((row, original))
        return row

    def add_rows(self, rows: list[Snapshot]) -> list[Snapshot]:
        """Insert the rows in bulk (one INSERT .. RETURNING) and return the persisted objects in the same
        order; revisits of records from this same batch go in once those have ids."""
        later = {id(r) for r, _ in self.deferred}
        first = [r for r in rows if id(r) not in later]
        saved = dict(zip(map(id, first), self._insert(first)))
        if self.deferred:
            for row, original in self.deferred:
                row.refers_to_id = saved[id(original)].id
            saved.update(zip((id(r) for r, _ in self.deferred), self._insert([r for r, _ in self.deferred])))
        return [saved[id(r)] for r in rows]

    def _insert(self, rows: list[Snapshot]) -> list[Snapshot]:
        if not rows:
            return []
        values = [{c: getattr(r, c) for c in _COLUMNS} for r in rows]
        # Matched back by WARC-Record-ID (unique): asking for parameter order makes SQLite insert row by row.
        by_record = {r.record_id: r for r in self.s.scalars(insert(Snapshot).returning(Snapshot), values)}
        return [by_record[r.record_id] for r in rows]

    def assign_citation_ids(self, rows: list[Snapshot]) -> None:
        """Each row's citation id, derived from its WARC-Record-ID (so rebuilding the index from the WARC
        files gives the same ids); on the (rare) clash the next candidate for that record is taken."""
        attempts = {id(r): 0 for r in rows}
        wanted = {id(r): citation_id_for_record(r.record_id) for r in rows}
        while True:
            values = list(wanted.values())
            taken = set(self.s.scalars(select(Snapshot.citation_id).where(Snapshot.citation_id.in_(values))))
            dupes = {v for v in values if values.count(v) > 1}
            clash = [k for k, v in wanted.items() if v in taken or v in dupes]
            if not clash:
                break
            for r in rows:
                if id(r) in clash:
                    attempts[id(r)] += 1
                    wanted[id(r)] = citation_id_for_record(r.record_id, attempts[id(r)])
        for r in rows:
            r.citation_id = wanted[id(r)]


