"""Read archived responses back: ``load_record(settings, snapshot)`` and citation-id lookup.

Digests are recomputed on every read. A record whose bytes no longer match comes back with
``fixity="failed"`` and a detail saying what is wrong; callers decide whether to show it. A revisit
takes its headers from the revisit record and its payload from the record it refers to.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import NotFound
from app.models import Snapshot
from archive.citeid import normalize_citation_id
from archive.decoding import DecodeLimits, decode_content
from archive.headers import first as first_header
from archive.reader import RecordUnreadable, WarcRecord
from app.db import Database
from app.storage.objects import read_stored

MAX_REVISIT_DEPTH = 5


@dataclass
class StoredResponse:
    status: int | None
    headers: list[tuple[str, str]]
    raw_body: bytes
    body: bytes
    mime: str | None
    fixity: str  # ok | failed
    fixity_detail: str | None = None
    record_type: str = "response"
    warnings: list[str] = field(default_factory=list)
    decoded: bool = True  # False: ``body`` is still Content-Encoding-encoded (refused, undecodable, or not asked)

    def header(self, name: str) -> str | None:
        return first_header(self.headers, name)

    @property
    def content_type(self) -> str | None:
        return self.header("Content-Type")


def limits_of(settings: Settings) -> DecodeLimits:
    return DecodeLimits(max_bytes=settings.decode_max_bytes, max_ratio=settings.decode_max_ratio,
                        process_bytes=settings.decode_process_bytes)


def _read(settings: Settings, snapshot: Snapshot) -> WarcRecord:
    return read_stored(settings, snapshot.warc_file, snapshot.offset, snapshot.length,
                       max_bytes=settings.decode_max_bytes)


def load_record(settings: Settings, snapshot: Snapshot, *, session: Session | None = None,
                decode: bool = True) -> StoredResponse:
    """The HTTP response archived for ``snapshot``, with fixity recomputed from the WARC bytes.
    ``decode=False`` leaves ``body`` as the stored bytes (``decoded`` False): what ``id_`` serves."""
    problems: list[str] = []
    try:
        rec = _read(settings, snapshot)
    except RecordUnreadable as exc:
        return StoredResponse(status=snapshot.status, headers=[], raw_body=b"", body=b"", mime=snapshot.mime,
                              fixity="failed", fixity_detail=f"{exc.kind}: {exc.message}",
                              record_type=snapshot.record_type)
    problems += rec.problems
    if rec.header("WARC-Record-ID") != snapshot.record_id:
        problems.append(f"record id in file is {rec.header('WARC-Record-ID')}, index says {snapshot.record_id}")
    raw = rec.payload
    if snapshot.record_type == "revisit":
        raw, more = _revisit_payload(settings, snapshot, session)
        problems += more
    digest = hashlib.sha256(raw or b"").hexdigest()
    if raw is not None and digest != snapshot.sha256:
        problems.append("payload sha256 differs from the index")
    raw = raw or b""
    encoding = rec.http_header("Content-Encoding")
    if decode:   # bounded process-wide; a refusal is remembered by the payload's digest
        body, warning = decode_content(raw, encoding, limits_of(settings), key=digest)
    else:
        body, warning = raw, None
    headers = rec.http_headers
    if not headers and rec.warc_type == "resource" and rec.header("Content-Type"):  # a browser capture's DOM, PNG
        headers = [("Content-Type", rec.header("Content-Type"))]
    return StoredResponse(
        status=rec.http_status, headers=headers, raw_body=raw, body=body, mime=snapshot.mime,
        fixity="failed" if problems else "ok", fixity_detail="; ".join(problems) or None,
        record_type=snapshot.record_type, warnings=[warning] if warning else [],
        decoded=decode and warning is None,
    )


def _revisit_payload(settings: Settings, snapshot: Snapshot, session: Session | None) -> tuple[bytes | None, list[str]]:
    if session is None:
        with _database(settings).Session() as own:
            return _revisit_payload(settings, snapshot, own)
    target = snapshot
    for _ in range(MAX_REVISIT_DEPTH):
        target = _referred(target, session)
        if target is None:
            return None, [f"revisit refers to {snapshot.refers_to_record_id}, which is not in the index"]
        if target.record_type != "revisit":
            break
    try:
        rec = _read(settings, target)
    except RecordUnreadable as exc:
        return None, [f"the record this revisit refers to is unreadable ({exc.kind}: {exc.message})"]
    problems = [f"referred record: {p}" for p in rec.problems]
    return rec.payload, problems


def _referred(snapshot: Snapshot, session: Session) -> Snapshot | None:
    if snapshot.refers_to_id is not None:
        return session.get(Snapshot, snapshot.refers_to_id)
    if snapshot.refers_to_record_id:
        return session.scalars(select(Snapshot).where(Snapshot.record_id == snapshot.refers_to_record_id)).first()
    return None


def _database(settings: Settings):
    """One cached Database per URL, for revisit look-ups when the caller passed no session."""
    with _DB_LOCK:
        db = _DATABASES.get(settings.db_url)
        if db is None:
            db = _DATABASES[settings.db_url] = Database(settings)
        return db


_DATABASES: dict = {}
_DB_LOCK = threading.Lock()


def find_by_citation(session: Session, citation: str) -> Snapshot:
    """The snapshot a typed citation id names (``abcd–efgh`` works); NotFound if there is none."""
    cid = normalize_citation_id(citation)
    if cid is None:
        raise NotFound(f"{citation!r} is not a citation id: expected 8 letters and digits like ABCD-EFGH "
                       "(no 0, 1, I or O)")
    snap = session.scalars(select(Snapshot).where(Snapshot.citation_id == cid)).first()
    if snap is None:
        raise NotFound(f"no snapshot has citation id {cid}; check the id (8 letters and digits, e.g. ABCD-EFGH), "
                       "or find the captures of a page with GET /api/snapshots?url=...")
    return snap


def get_snapshot(session: Session, snapshot_id: int) -> Snapshot:
    snap = session.get(Snapshot, snapshot_id)
    if snap is None:
        raise NotFound(f"no snapshot with id {snapshot_id}")
    return snap
