"""Index WARC records: ``Reindexer`` adds the index rows of whole records that have none.

The WARC files are the archive; the ``snapshots`` table is an index of them that can always be made
again. A :class:`Reindexer` walks files (``archive.indexer.walk``) and adds a ``snapshots`` row for
every whole ``response`` or ``revisit`` record whose WARC-Record-ID has none, with the same citation
id it had before (citation ids are derived from record ids), the request record it was sent with,
and the source it was crawled for (Caveat writes a ``metadata`` record naming the source beside each
crawled response). Records already indexed are skipped, so a run is idempotent and a killed run
resumes where its last batch committed.

Callers hold the WARC store's lock (:class:`app.storage.warcfiles.WarcStore`) for the whole run:
nothing appends, repairs or imports while the index is rebuilt.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sqlalchemy import func, insert, select, update

from app.db import Database, chunked
from app.models import Snapshot, Source
from archive.citeid import citation_id_for_record
from archive.importer import warc_date_to_ts
from archive.indexer import _sha256_hex, Found, Walk, walk
from archive.surt import surt
from archive.timestamps import bump, parse_ts17

log = logging.getLogger("caveat.reindex")
BATCH = 2000
SOURCE_FIELDS = ("caveat-source", "caveat-source-url", "caveat-source-kind", "caveat-source-browser",
                 "caveat-source-keys")
_COLUMNS = [c.key for c in Snapshot.__table__.columns if c.key != "id"]


def source_metadata(name: str, url: str, kind: str | None, key_columns: list[str] | None = None) -> bytes:
    """The block of the ``metadata`` record that ties a crawled response to its source (its key columns
    as a JSON list, when it names some)."""
    lines = [("caveat-source", name), ("caveat-source-url", url)]
    if kind:
        lines.append(("caveat-source-kind", kind))
    if key_columns:
        lines.append(("caveat-source-keys", json.dumps(list(key_columns))))
    return "".join(f"{k}: {str(v).replace(chr(13), ' ').replace(chr(10), ' ')}\r\n" for k, v in lines).encode()


def _key_columns(text: str | None) -> list[str] | None:
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return [str(v) for v in value] if isinstance(value, list) and value else None


@dataclass(frozen=True)
class MetadataHandler:
    """Restores what one kind of Caveat ``metadata`` record stands for (an access change, a measurement,
    a reviewer's decision...). ``parse(content_type, block)`` returns the parsed record or None when it is
    not of this kind; ``apply(db, path, items)`` gets this file's records of the kind, in file order, as
    ``(offset, length, record_id, block, parsed)``, after their file is indexed. Lower ``order`` runs first."""

    name: str
    parse: Callable[[str | None, bytes], object | None]
    apply: Callable[[Database, Path, list[tuple[int, int, str, bytes, object]]], int]
    order: int = 50


# The domains that write metadata records register their handler when imported (an in-process event:
# storage never imports them). `caveat reindex` and `caveat import-warc` import every one of them.
METADATA_HANDLERS: dict[str, MetadataHandler] = {}


def register_metadata_handler(handler: MetadataHandler) -> None:
    METADATA_HANDLERS[handler.name] = handler


_BROWSER_KINDS = ("urn:dom:", "urn:fullPage:", "urn:pageinfo:")


def _browser_record(uri: str | None) -> bool:
    """A browser capture's resource record for an http(s) page (issue 16); other ``resource`` records are
    not indexed."""
    uri = (uri or "").strip().strip("<>")
    for kind in _BROWSER_KINDS:
        if uri.startswith(kind):
            return uri[len(kind):].split(":", 1)[0].lower() in ("http", "https")
    return False


def _parse_source(block: bytes) -> dict[str, str] | None:
    out = {}
    for line in block.decode("utf-8", "replace").split("\r\n"):
        k, sep, v = line.partition(":")
        if sep and k.strip().lower() in SOURCE_FIELDS:
            out[k.strip().lower()] = v.strip()
    return out if out.get("caveat-source") and out.get("caveat-source-url") else None


@dataclass
class FileResult:
    name: str
    indexed: int = 0
    already: int = 0
    requests: int = 0
    problems: list[str] = field(default_factory=list)
    walk: Walk | None = None


@dataclass
class ReindexReport:
    files: list[FileResult] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # names of sources created from metadata records

    @property
    def indexed(self) -> int:
        return sum(f.indexed for f in self.files)

    @property
    def problems(self) -> list[str]:
        return [f"{f.name}: {p}" for f in self.files for p in f.problems]


class Reindexer:
    """Adds index rows for whole records that have none. Loads what the index holds once."""

    def __init__(self, db: Database, *, max_record_bytes: int | None = None,
                 progress: Callable[[str], None] | None = None,
                 logged: Callable[[str, str, int], bool] | None = None):
        self.db = db
        # `caveat reindex` passes the tamper-evident log's answer to "is (record id, file, offset) logged?";
        # a record it says no to is indexed unverified (issue 24)
        self.logged = logged
        self.settings = db.settings
        self.max_record_bytes = max_record_bytes or getattr(self.settings, "decode_max_bytes", 1 << 30)
        self.progress = progress
        with db.Session() as s:
            rows = s.execute(select(Snapshot.id, Snapshot.record_id, Snapshot.citation_id, Snapshot.surt,
                                    Snapshot.timestamp, Snapshot.sha256, Snapshot.record_type, Snapshot.source_id))
            self.by_record: dict[str, tuple] = {}
            self.citations: set[str] = set()
            self.used_ts: set[tuple[str, str]] = set()
            self.by_sha: dict[str, str] = {}
            self.unlinked: set[str] = set()  # record ids of rows with no source yet
            for r in rows:
                self.by_record[r.record_id] = (r.id, r.sha256)
                self.citations.add(r.citation_id)
                self.used_ts.add((r.surt, r.timestamp))
                if r.record_type == "response":
                    self.by_sha.setdefault(r.sha256, r.record_id)
                if r.source_id is None:
                    self.unlinked.add(r.record_id)
            self.sources = {name: sid for sid, name in s.execute(select(Source.id, Source.name))}
        self.created_sources: list[str] = []

    # -- one file ---------------------------------------------------------------------------------
    def index_file(self, path: Path, start: int = 0) -> FileResult:
        result = FileResult(path.name)
        rep = Walk(path, start)
        result.walk = rep
        pending: list[dict] = []
        requests: dict[str, tuple[int, int]] = {}  # response record id -> request (offset, length)
        links: dict[str, str] = {}  # response record id -> source name
        handlers = sorted(METADATA_HANDLERS.values(), key=lambda h: h.order)
        special: dict[str, list] = {h.name: [] for h in handlers}  # metadata records per handler, in file order
        for found in walk(path, start, max_record_bytes=self.max_record_bytes, report=rep):
            if found.problem:
                result.problems.append(f"offset {found.offset:,}: {found.problem}")
                continue
            t = found.warc_type
            indexed = t in ("response", "revisit") or (t == "resource" and _browser_record(found.header("WARC-Target-URI")))
            if indexed:   # a browser capture's resource records are indexed too (issue 16)
                rid = found.header("WARC-Record-ID") or ""
                if rid in self.by_record:
                    result.already += 1
                    continue
                row = (self._resource_row if t == "resource" else self._row)(path.name, found, result)
                if row is not None:
                    pending.append(row)
                    self.by_record[rid] = (None, row["sha256"])
            elif t == "request":
                to = found.header("WARC-Concurrent-To")
                if to:
                    requests[to] = (found.offset, found.length)
            elif t == "metadata":
                meta = _parse_source(found.block)
                to = found.header("WARC-Concurrent-To")
                if meta and to:
                    links[to] = self._source(meta)
                for h in handlers:
                    parsed = h.parse(found.header("Content-Type"), found.block)
                    if parsed is not None:
                        special[h.name].append((found.offset, found.length, found.header("WARC-Record-ID") or "",
                                                found.block, parsed))
            if len(pending) >= BATCH:
                self._commit(pending, requests, links, result)
                pending = []
        self._commit(pending, requests, links, result)
        for h in handlers:
            if special[h.name]:
                h.apply(self.db, path, special[h.name])
        if rep.tail:
            result.problems.append(f"{rep.tail} tail of {rep.tail_bytes:,} bytes at {rep.tail_detail}")
        return result

    def _free_ts(self, key: str, ts: str) -> str:
        """``ts``, bumped past any timestamp already given to ``key`` (two records of one URL in one second)."""
        while (key, ts) in self.used_ts:
            ts = bump(ts)
        self.used_ts.add((key, ts))
        return ts

    def _new_citation_id(self, rid: str) -> str:
        """The record's citation id, the next candidate when another record already has it."""
        attempt = 0
        cid = citation_id_for_record(rid, attempt)
        while cid in self.citations:
            attempt += 1
            cid = citation_id_for_record(rid, attempt)
        self.citations.add(cid)
        return cid

    def _verified(self, rid: str, name: str, found: Found) -> bool | None:
        if self.logged is None:
            return None
        return True if self.logged(rid, name, found.offset) else False

    def _resource_row(self, name: str, found: Found, result: FileResult) -> dict | None:
        """The row of a browser capture's ``urn:dom:``/``urn:fullPage:``/``urn:pageinfo:`` record."""
        rid = found.header("WARC-Record-ID") or ""
        url = (found.header("WARC-Target-URI") or "").strip().strip("<>")
        ts = warc_date_to_ts(found.header("WARC-Date"))
        digest = found.header("WARC-Payload-Digest") or found.header("WARC-Block-Digest")
        sha = _sha256_hex(digest, found.block if found.block else None)
        try:
            length = int(found.header("Content-Length") or "")
        except ValueError:
            length = None
        if not rid or ts is None or not sha:
            result.problems.append(f"offset {found.offset:,}: resource record lacks a record id, valid WARC-Date "
                                   "or sha256 digest; not indexed")
            return None
        ts = self._free_ts(url, ts)
        cid = self._new_citation_id(rid)
        ctype = found.header("Content-Type")
        return dict(
            citation_id=cid, url=url, surt=url, timestamp=ts, captured_at=parse_ts17(ts), status=None,
            mime=ctype.split(";")[0].strip().lower() if ctype else None, record_type="resource", warc_file=name,
            offset=found.offset, length=found.length, record_id=rid, request_offset=None, request_length=None,
            payload_digest=found.header("WARC-Payload-Digest"), block_digest=found.header("WARC-Block-Digest"),
            sha256=sha, payload_length=length, refers_to_id=None, refers_to_record_id=None, redirect_to=None,
            origin="capture" if name.startswith("caveat-") else "import", source_id=None, fixity="unchecked",
            fixity_checked_at=None, fixity_detail=None, access="public", verified=self._verified(rid, name, found),
        )

    def _row(self, name: str, found: Found, result: FileResult) -> dict | None:
        rid = found.header("WARC-Record-ID") or ""
        url = (found.header("WARC-Target-URI") or "").strip().strip("<>")
        ts = warc_date_to_ts(found.header("WARC-Date"))
        if url and url.split(":", 1)[0].lower() not in ("http", "https"):
            result.problems.append(f"offset {found.offset:,}: target URI {url[:80]!r} is not an http(s) URL; "
                                   "not indexed")
            return None
        if not rid or not url or ts is None or found.http_status is None:
            result.problems.append(f"offset {found.offset:,}: {found.warc_type} record lacks a record id, target URI, "
                                   "valid WARC-Date or HTTP status line; not indexed")
            return None
        key = surt(url)
        ts = self._free_ts(key, ts)
        refers = found.header("WARC-Refers-To")
        sha = found.payload_sha256
        if found.warc_type == "revisit":
            if not refers and sha:
                refers = self.by_sha.get(sha)
            if refers and refers in self.by_record and not sha:
                sha = self.by_record[refers][1]
            if not sha:
                result.problems.append(f"offset {found.offset:,}: revisit with no payload digest and no known "
                                       "original; not indexed")
                return None
        elif sha:
            self.by_sha.setdefault(sha, rid)
        cid = self._new_citation_id(rid)
        ctype = found.http_headers.get("content-type")
        return dict(
            citation_id=cid, url=url, surt=key, timestamp=ts, captured_at=parse_ts17(ts), status=found.http_status,
            mime=ctype.split(";")[0].strip().lower() if ctype else None, record_type=found.warc_type,
            warc_file=name, offset=found.offset, length=found.length, record_id=rid, request_offset=None,
            request_length=None, payload_digest=found.header("WARC-Payload-Digest"),
            block_digest=found.header("WARC-Block-Digest"), sha256=sha,
            payload_length=found.payload_length if found.warc_type == "response" else None,
            refers_to_id=None, refers_to_record_id=refers if found.warc_type == "revisit" else None,
            redirect_to=found.http_headers.get("location"),
            origin="capture" if name.startswith("caveat-") else "import", source_id=None, fixity="unchecked",
            fixity_checked_at=None, fixity_detail=None, access="public", verified=self._verified(rid, name, found),
        )

    def _source(self, meta: dict[str, str]) -> str:
        name = meta["caveat-source"]
        if name not in self.sources:
            with self.db.session() as s:
                existing = s.scalar(select(Source).where(Source.name == name))
                if existing is None:
                    existing = Source(name=name, url=meta["caveat-source-url"], kind=meta.get("caveat-source-kind"),
                                      kind_guessed=False, browser=meta.get("caveat-source-browser") == "1",
                                      key_columns=_key_columns(meta.get("caveat-source-keys")))
                    s.add(existing)
                    s.flush()
                    self.created_sources.append(name)
                self.sources[name] = existing.id
        return name

    def _commit(self, pending: list[dict], requests: dict, links: dict, result: FileResult) -> None:
        for row in pending:
            req = requests.pop(row["record_id"], None)
            if req:
                row["request_offset"], row["request_length"] = req
                result.requests += 1
            src = links.pop(row["record_id"], None)
            if src:
                row["source_id"] = self.sources[src]
        with self.db.session() as s:
            if pending:
                for part in chunked(pending, 500):
                    s.execute(insert(Snapshot), [{c: r.get(c) for c in _COLUMNS} for r in part])
                ids = {}
                for part in chunked([r["record_id"] for r in pending], 500):
                    ids.update(s.execute(select(Snapshot.record_id, Snapshot.id)
                                         .where(Snapshot.record_id.in_(part))).all())
                for r in pending:
                    self.by_record[r["record_id"]] = (ids[r["record_id"]], r["sha256"])
                result.indexed += len(pending)
            # Requests and sources of rows committed earlier (a record and its request in two batches).
            for rid, (off, length) in list(requests.items()):
                if rid in self.by_record and self.by_record[rid][0] is not None:
                    s.execute(update(Snapshot).where(Snapshot.record_id == rid, Snapshot.request_offset.is_(None))
                              .values(request_offset=off, request_length=length))
                    del requests[rid]
            for rid, name in list(links.items()):
                if rid in self.by_record and self.by_record[rid][0] is not None:
                    s.execute(update(Snapshot).where(Snapshot.record_id == rid, Snapshot.source_id.is_(None))
                              .values(source_id=self.sources[name]))
                    del links[rid]
        if pending and self.progress:
            self.progress(f"{result.name}: {result.indexed:,} record(s) indexed")

    def link_revisits(self) -> int:
        """Point revisits at the rows of the records they refer to, once every file is indexed."""
        n = 0
        with self.db.session() as s:
            rows = s.execute(select(Snapshot.id, Snapshot.refers_to_record_id)
                             .where(Snapshot.record_type == "revisit", Snapshot.refers_to_id.is_(None),
                                    Snapshot.refers_to_record_id.is_not(None))).all()
            for sid, ref in rows:
                target = self.by_record.get(ref)
                if target and target[0] is not None:
                    s.execute(update(Snapshot).where(Snapshot.id == sid).values(refers_to_id=target[0]))
                    n += 1
        return n


def warc_files(warc_dir: Path) -> list[Path]:
    """Every WARC file in the folder, Caveat's own in the order they were written, others by name."""
    files = [p for p in warc_dir.iterdir() if p.is_file() and (p.name.endswith(".warc.gz") or p.name.endswith(".warc"))] \
        if warc_dir.exists() else []
    return sorted(files, key=lambda p: (not p.name.startswith("caveat-"), p.name))


def unindexed_files(db: Database) -> list[Path]:
    """WARC files in the data folder holding whole response or revisit records the index has no row for
    after its last indexed byte (reads only those tails)."""
    with db.Session() as s:
        ends = dict(s.execute(select(Snapshot.warc_file, func.max(Snapshot.offset + Snapshot.length))
                              .group_by(Snapshot.warc_file)).all())
        known = None
    out = []
    for path in warc_files(db.settings.warc_dir):
        end = ends.get(path.name, 0)
        if path.stat().st_size <= end:
            continue
        for found in walk(path, end):
            if found.warc_type not in ("response", "revisit"):
                continue
            if known is None:
                with db.Session() as s:
                    known = set(s.scalars(select(Snapshot.record_id)))
            if found.header("WARC-Record-ID") not in known:
                out.append(path)
                break
    return out
