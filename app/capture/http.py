"""Capture URLs into WARC and index them: ``capture_urls(db, urls)``.

Two stages. **Fetch** (threads, or for big captures worker processes): fetch a URL and every
redirect hop with httpx, digest and compress each hop's response and request records
(:func:`archive.warcwriter.build_response`). **Store** (one writer, this thread): per batch, decide
what needs the database (a timestamp unique per SURT key, a ``revisit`` instead of a second copy of a
payload already stored), append the finished records, fsync, then commit the batch's ``snapshots``
rows. A URL that fails writes nothing. See docs/capture.md.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.db import Database, chunked
from app.models import Snapshot
from app.storage.tlog import append_written, sign_latest
from app.storage.warcfiles import WarcStore
from archive.citeid import citation_id_for_record
from archive.fetcher import Limits, parse_allowed_hosts
from archive.surt import InvalidURL
from archive.urls import check_url
from archive.prepare import FetchedHop, ProcessStage, ThreadStage
from archive.timestamps import bump, parse_ts17
from archive.warcwriter import build_record, build_revisit

log = logging.getLogger("caveat.capture")
BATCH = 64  # records of at most this many URLs share one fsync and one commit
BATCH_WAIT = 0.5  # seconds a partial batch waits for slow fetches before it is stored anyway
WORKERS = 8  # concurrent fetches
PROCESS_MIN_URLS = 32  # captures of at least this many URLs fetch in worker processes
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
                  time_limit=settings.fetch_time_limit,
                  allow_private=settings.allow_private_addresses, user_agent=settings.user_agent,
                  allow_hosts=parse_allowed_hosts(getattr(settings, "allow_private_hosts", "")))


def spool_dir(settings) -> Path:
    """Where large compressed payloads wait between the fetch and the writer (emptied by each capture)."""
    return settings.warc_dir / ".spool"


def default_processes(settings, n_urls: int, workers: int) -> int:
    """Worker processes for a capture of ``n_urls`` URLs: none below PROCESS_MIN_URLS URLs (starting
    processes costs more than it saves on a few), else ``CAVEAT_CAPTURE_PROCESSES`` (default: one per
    concurrent fetch, ``workers``; 0 fetches in threads)."""
    if n_urls < PROCESS_MIN_URLS:
        return 0
    wanted = settings.capture_processes
    return workers if wanted is None else max(0, wanted)


def _fetch_stage(settings, n_urls: int, workers: int, processes: int):
    limits, level, spool = limits_for(settings), settings.warc_gzip_level, spool_dir(settings)
    if processes > 0:
        stage = ProcessStage(limits, level, spool, min(processes, n_urls))
        log.info("fetching %d URL(s) in %d worker processes (%s)", n_urls, len(stage.workers), stage.start_method)
        return stage
    log.info("fetching %d URL(s) in %d thread(s)", n_urls, min(workers, n_urls))
    return ThreadStage(limits, level, spool, min(workers, n_urls), queue=BATCH)


# -- stage 2: store (one writer) ---------------------------------------------------------------------
def capture_urls(db: Database, urls: list[str], *, source_id: int | None = None,
                 progress: Callable[[CaptureResult], None] | None = None,
                 notice: Callable[[str], None] | None = None, workers: int = WORKERS,
                 processes: int | None = None, source_info: bytes | None = None,
                 request_headers: dict[str, list[tuple[str, str]]] | None = None) -> list[CaptureResult]:
    """Capture each URL; returns one result per URL, in order. ``progress(result)`` is called as
    each URL's rows commit; ``notice(message)`` hears about repairs (a torn tail truncated).
    ``workers`` fetches run at once in threads, or ``processes`` worker processes fetch and compress,
    one URL at a time each (default: :func:`default_processes`; 0 fetches in threads).
    ``source_info``: the block of a ``metadata`` record written beside each final response, naming the
    source it was crawled for (``app.storage.indexing.source_metadata``), so the WARC files alone
    can rebuild the sources. ``request_headers``: extra headers per URL for its first request (a
    conditional re-crawl's validators); such a capture fetches in threads."""
    if not urls:
        return []
    results: list[CaptureResult | None] = [None] * len(urls)
    for i, u in enumerate(urls):  # a URL that does not parse fails alone, with the reason, before any fetch
        try:
            check_url(u)
        except InvalidURL as exc:
            results[i] = CaptureResult(url=u, error=str(exc))
            _tell(progress, results[i])
    pending = [i for i, r in enumerate(results) if r is None]
    if not pending:
        return results
    if processes is None:
        processes = default_processes(db.settings, len(pending), workers)
    if request_headers:
        processes = 0
    with WarcStore(db, notice=notice) as store:
        spool = spool_dir(db.settings)
        _empty_spool(spool)
        stage = _fetch_stage(db.settings, len(pending), workers, processes)
        batch: list[tuple[int, list[FetchedHop]]] = []
        finished_cleanly = False
        try:
            next_i = in_flight = 0
            batch_started = 0.0
            while next_i < len(pending) or in_flight:
                while next_i < len(pending) and in_flight < stage.capacity:
                    if request_headers:
                        stage.submit(pending[next_i], urls[pending[next_i]], request_headers.get(urls[pending[next_i]]))
                    else:
                        stage.submit(pending[next_i], urls[pending[next_i]])
                    next_i += 1
                    in_flight += 1
                # One fsync per batch: a partial batch waits at most BATCH_WAIT for slow fetches.
                wait_for = max(0.0, BATCH_WAIT - (time.monotonic() - batch_started)) if batch else None
                finished = stage.done(wait_for)
                for i, (hops, error) in finished:
                    in_flight -= 1
                    if error is not None:
                        results[i] = CaptureResult(url=urls[i], error=error)
                        _tell(progress, results[i])
                        continue
                    if not batch:
                        batch_started = time.monotonic()
                    batch.append((i, hops))
                if batch and (not finished or len(batch) >= BATCH or not in_flight):
                    _store_batch(db, store, urls, batch, results, source_id, progress, source_info)
                    batch = []
            finished_cleanly = True
        finally:
            for _, hops in batch:
                for hop in hops:
                    hop.discard()
            for hops, _ in stage.close(abort=not finished_cleanly):
                for hop in hops or []:
                    hop.discard()
            _empty_spool(spool)
        store.update_cdxj([snap for r in results if r is not None and r.snapshot is not None
                           for snap in (*r.hops, r.snapshot)])
        sign_latest(db.settings)  # the tamper-evident log's tree head covers every record of this capture
    return [r for r in results if r is not None]


def _empty_spool(spool: Path) -> None:
    """Remove spooled payloads left by an earlier capture that was killed (we hold the capture lock)."""
    spool.mkdir(parents=True, exist_ok=True)
    for leftover in spool.glob("record-*.deflate"):
        leftover.unlink(missing_ok=True)


def _tell(progress, result: CaptureResult) -> None:
    if progress is not None:
        progress(result)


def _store_batch(db: Database, store: WarcStore, urls: list[str], batch: list[tuple[int, list[FetchedHop]]],
                 results: list, source_id: int | None, progress, source_info: bytes | None = None) -> None:
    """Write every record of the batch, fsync, then commit its rows. On any failure the file is cut
    back to where the batch started and no row commits."""
    batch = sorted(batch, key=lambda item: item[0])  # fetches finish in any order; records follow the URL list
    store.rotate_if_full()
    writer = store.writer
    start = writer.size
    done: list[tuple[int, list[dict], list[FetchedHop]]] = []
    try:
        with db.Session() as s:
            planner = _Planner(s, [hop for _, hops in batch for hop in hops], writer.level)
            for i, hops in batch:
                rows = [planner.write_hop(writer, hop, source_id) for hop in hops]
                if source_info and rows:
                    last = rows[-1]
                    writer.append(build_record("metadata", [("WARC-Target-URI", last["url"]),
                                                            ("WARC-Concurrent-To", last["record_id"])],
                                               content_type="application/warc-fields", ts=last["timestamp"],
                                               head=source_info, level=writer.level))
                done.append((i, rows, hops))
            writer.sync()
            all_rows = [r for _, rows, _ in done for r in rows]
            planner.assign_citation_ids(all_rows)
            saved = iter(planner.add_rows(all_rows))
            stored = [(i, [next(saved) for _ in rows], hops) for i, rows, hops in done]
            s.commit()
    except BaseException:
        writer.truncate(start)
        writer.sync()
        raise
    finally:
        for _, hops in batch:
            for hop in hops:
                hop.discard()  # spooled payloads not appended (appended ones are gone already)
    append_written(db.settings, writer.path.name, writer.take_appended())  # the tamper-evident log (issue 13)
    for i, snaps, hops in stored:
        last = hops[-1]
        results[i] = CaptureResult(url=urls[i], final_url=last.url, status=last.status, size=last.body_length,
                                   snapshot=snaps[-1], hops=snaps[:-1])
        _tell(progress, results[i])


class _Planner:
    """Per-batch decisions that need the database: unique timestamps, revisit targets, citation ids.
    Looks everything up for the whole batch at once. Rows are plain dicts until they are inserted."""

    def __init__(self, session: Session, hops: list[FetchedHop], level: int):
        self.s = session
        self.level = level
        keys = sorted({h.surt for h in hops})
        earliest = min((h.ts for h in hops), default="0")
        self.deferred: list[tuple[dict, dict]] = []  # (revisit row, row of this batch it refers to)
        # Replay finds captures by SURT key and timestamp, so a timestamp must be unique per SURT key
        # (http://a/ and https://a/, or the same query in another order, share one).
        self.used_ts: dict[str, set[str]] = {k: set() for k in keys}
        for chunk in chunked(keys):
            for key, ts in session.execute(select(Snapshot.surt, Snapshot.timestamp)
                                           .where(Snapshot.surt.in_(chunk), Snapshot.timestamp >= earliest)):
                self.used_ts[key].add(ts)
        # sha256 hex -> first public response with that payload. Never a withdrawn or restricted one: a
        # revisit serves its original's bytes, so a new capture of a withheld page is stored whole (and is
        # public, a capture in its own right) rather than as a revisit that would show the withheld record.
        self.originals: dict[str, dict] = {}
        shas = sorted({h.sha256.hex() for h in hops if h.body_length > 0})
        cols = (Snapshot.id, Snapshot.sha256, Snapshot.record_id, Snapshot.url, Snapshot.timestamp)
        for chunk in chunked(shas):
            for row in session.execute(select(*cols).where(Snapshot.sha256.in_(chunk),
                                                           Snapshot.record_type == "response",
                                                           Snapshot.access == "public")
                                       .order_by(Snapshot.id)):
                self.originals.setdefault(row.sha256, dict(row._mapping))

    def unique_ts(self, key: str, ts: str) -> str:
        used = self.used_ts.setdefault(key, set())
        while ts in used:
            ts = bump(ts)
        used.add(ts)
        return ts

    def write_hop(self, writer, hop: FetchedHop, source_id: int | None) -> dict:
        ts = self.unique_ts(hop.surt, hop.ts)
        sha_hex = hop.sha256.hex()
        original = self.originals.get(sha_hex) if hop.body_length > 0 else None
        if original is not None:
            built = build_revisit(hop.url, ts, hop.response.head, hop.sha256, refers_to=original["record_id"],
                                  refers_to_uri=original["url"], refers_to_ts=original["timestamp"], ip=hop.ip,
                                  record_id=hop.response.record_id, level=self.level)
            hop.response.discard()
        else:
            built = hop.response.at(ts)
        rec = writer.append(built)
        req = writer.append(hop.request.at(ts))
        row = dict(
            url=hop.url, surt=hop.surt, timestamp=ts,
            captured_at=hop.started_at.replace(microsecond=hop.started_at.microsecond // 1000 * 1000)
            if ts == hop.ts else parse_ts17(ts),
            status=hop.status, mime=hop.mime, record_type="revisit" if original is not None else "response",
            warc_file=writer.path.name, offset=rec.offset, length=rec.length, record_id=rec.record_id,
            request_offset=req.offset, request_length=req.length, payload_digest=rec.payload_digest,
            block_digest=rec.block_digest, sha256=sha_hex, payload_length=hop.body_length,
            refers_to_id=original.get("id") if original is not None else None,
            refers_to_record_id=original["record_id"] if original is not None else None,
            redirect_to=hop.location, origin="capture", source_id=source_id, fixity="unchecked",
            citation_id=hop.citation_id, access="public",
        )
        if original is None and hop.body_length > 0:
            self.originals.setdefault(sha_hex, row)
        if original is not None and original.get("id") is None:  # refers to a row of this same batch
            self.deferred.append((row, original))
        return row

    def add_rows(self, rows: list[dict]) -> list[Snapshot]:
        """Insert the rows in bulk (one INSERT .. RETURNING) and return the persisted objects in the same
        order; revisits of records from this same batch go in once those have ids."""
        later = {id(r) for r, _ in self.deferred}
        first = [r for r in rows if id(r) not in later]
        saved = dict(zip(map(id, first), self._insert(first)))
        if self.deferred:
            for row, original in self.deferred:
                row["refers_to_id"] = saved[id(original)].id
            saved.update(zip((id(r) for r, _ in self.deferred), self._insert([r for r, _ in self.deferred])))
        return [saved[id(r)] for r in rows]

    def _insert(self, rows: list[dict]) -> list[Snapshot]:
        if not rows:
            return []
        values = [{c: r.get(c) for c in _COLUMNS} for r in rows]
        # Matched back by WARC-Record-ID (unique): asking for parameter order makes SQLite insert row by row.
        by_record = {r.record_id: r for r in self.s.scalars(insert(Snapshot).returning(Snapshot), values)}
        return [by_record[r["record_id"]] for r in rows]

    def assign_citation_ids(self, rows: list[dict]) -> None:
        """Each row's citation id, derived from its WARC-Record-ID (so rebuilding the index from the WARC
        files gives the same ids); on the (rare) clash the next candidate for that record is taken."""
        attempts = {id(r): 0 for r in rows}
        wanted = {id(r): r["citation_id"] or citation_id_for_record(r["record_id"]) for r in rows}
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
                    wanted[id(r)] = citation_id_for_record(r["record_id"], attempts[id(r)])
        for r in rows:
            r["citation_id"] = wanted[id(r)]
