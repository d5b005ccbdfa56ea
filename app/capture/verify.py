"""``caveat verify``: check the database, re-read every indexed record, recompute its digests, and
find whole WARC records the index lacks; report what is wrong and which citations it affects.

Each snapshot gets ``fixity`` (ok|failed), ``fixity_checked_at`` and ``fixity_detail`` updated
(the service flushes; the command commits). Problems are grouped as ``missing`` (the WARC file is
gone), ``truncated`` (the file ends inside the record), ``corrupt`` (gzip or WARC structure broken)
``mismatch`` (bytes read fine but a digest or the index disagrees), ``unindexed`` (a whole record in a
WARC file that no row points at: its citation id, derived from its record id, answers 404) and the
database's own check (SQLite ``PRAGMA integrity_check``).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.config import Settings
from app.models import ArchiveObject, Snapshot
from archive import digests
from archive.reader import RecordUnreadable, WarcRecord
from app.storage.indexing import warc_files
from app.storage.objects import ArchiveStore, archive_store, read_stored
from archive.citeid import citation_id_for_record
from archive.indexer import walk


@dataclass
class Problem:
    snapshot_id: int
    citation_id: str
    warc_file: str
    offset: int
    kind: str  # missing | truncated | corrupt | mismatch | unindexed | database
    detail: str

    def line(self) -> str:
        return f"{self.kind:9} {self.citation_id}  {self.warc_file}@{self.offset}  {self.detail}"


@dataclass
class VerifyReport:
    checked: int = 0
    ok: int = 0
    problems: list[Problem] = field(default_factory=list)
    missing_files: set[str] = field(default_factory=set)
    database: list[str] = field(default_factory=list)  # what the database's own check found
    unindexed: int = 0  # whole records in the WARC files with no index row
    changed_objects: set[str] = field(default_factory=set)  # objects whose size or SHA-256 is not what was uploaded

    @property
    def passed(self) -> bool:
        return not self.problems and not self.database and not self.changed_objects

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.problems:
            out[p.kind] = out.get(p.kind, 0) + 1
        return out


def _check_against_index(rec: WarcRecord, snap: Snapshot, referred_sha: dict[str, str]) -> list[str]:
    problems = list(rec.problems)
    if rec.header("WARC-Record-ID") != snap.record_id:
        problems.append(f"WARC-Record-ID is {rec.header('WARC-Record-ID')}, the index says {snap.record_id}")
    if snap.block_digest and rec.header("WARC-Block-Digest") != snap.block_digest:
        problems.append("WARC-Block-Digest header differs from the index")
    payload_value = rec.header("WARC-Payload-Digest")
    if payload_value:
        try:
            _, raw = digests.parse(payload_value)
            if raw.hex() != snap.sha256:
                problems.append("WARC-Payload-Digest differs from the sha256 in the index")
        except ValueError as exc:
            problems.append(str(exc))
    if snap.record_type == "revisit":
        target = snap.refers_to_record_id
        if target not in referred_sha:
            problems.append(f"revisit refers to {target}, which is not in the index")
        elif referred_sha[target] != snap.sha256:
            problems.append("revisit and the record it refers to have different payload sha256")
    return problems


def database_check(session: Session) -> list[str]:
    """The database's own integrity check: SQLite's ``PRAGMA integrity_check`` (its messages, or [] when
    it says ok). PostgreSQL checks its pages itself; there the index is checked against the WARC files."""
    if session.get_bind().dialect.name != "sqlite":
        return []
    try:
        rows = [r[0] for r in session.execute(text("PRAGMA integrity_check")).all()]
    except DBAPIError as exc:
        return [f"the database cannot be read: {exc.orig}"]
    return [] if rows == ["ok"] else rows


def _unindexed(settings: Settings, known: set[str]) -> list[Problem]:
    """Whole response/revisit records in the WARC folder that no index row points at."""
    out = []
    for path in warc_files(settings.warc_dir):
        for found in walk(path, 0, max_record_bytes=settings.decode_max_bytes):
            rid = found.header("WARC-Record-ID")
            if found.warc_type in ("response", "revisit") and rid and rid not in known:
                out.append(Problem(0, citation_id_for_record(rid), path.name, found.offset, "unindexed",
                                   f"{found.header('WARC-Target-URI')} is in the WARC file but not in the index "
                                   "(its citation answers 404); `caveat verify --repair` indexes it"))
    return out


def _file_state(settings: Settings, store: ArchiveStore, name: str, row: ArchiveObject | None,
                report: VerifyReport) -> str | None:
    """Why the records of WARC file ``name`` cannot be read at all (None: they can). With a bucket, a file
    no longer in the spool is its object: gone, or (noted in ``changed_objects``) not the bytes uploaded."""
    if (settings.warc_dir / name).exists():
        return None
    if not store.remote:
        return f"WARC file {name} is missing from {settings.warc_dir}"
    info = store.head(name)
    if info is None:
        return f"object {name} is missing from {settings.archive_url}" + (
            f" (uploaded {row.uploaded_at:%Y-%m-%d %H:%M}Z, {row.size:,} bytes)" if row is not None else "")
    if row is not None:
        if info.sha256_b64:   # the store's own digest, else (it keeps none, or the object was rewritten
            same = info.size == row.size and info.sha256_b64 == base64.b64encode(bytes.fromhex(row.sha256)).decode()
        else:                 # without one) the object read once through
            same = info.size == row.size and store.object_sha256(name) == row.sha256
        if not same:
            report.changed_objects.add(name)
    return None


def verify_all(session: Session, settings: Settings, *,
               progress: Callable[[Problem], None] | None = None) -> VerifyReport:
    """Check the database, then every snapshot (in file order) against its WARC bytes, then every whole
    WARC record against the index. Updates the snapshots' fixity columns and flushes."""
    report = VerifyReport()
    report.database = database_check(session)
    try:
        _verify_records(session, settings, report, progress)
    except DBAPIError as exc:
        report.database.append(f"reading the index failed: {exc.orig}")
        return report
    return report


def _verify_records(session: Session, settings: Settings, report: VerifyReport, progress) -> None:
    now = datetime.now(timezone.utc)
    snaps = session.scalars(select(Snapshot).order_by(Snapshot.warc_file, Snapshot.offset)).all()
    referred_sha = {s.record_id: s.sha256 for s in snaps}
    store = archive_store(settings)
    objects = {o.name: o for o in session.scalars(select(ArchiveObject))} if store.remote else {}
    state: dict[str, str | None] = {}
    for snap in snaps:
        report.checked += 1
        kind, detail = None, None
        if snap.warc_file not in state:
            state[snap.warc_file] = _file_state(settings, store, snap.warc_file, objects.get(snap.warc_file), report)
        if state[snap.warc_file] is not None:
            report.missing_files.add(snap.warc_file)
            kind, detail = "missing", state[snap.warc_file]
        else:
            try:
                rec = read_stored(settings, snap.warc_file, snap.offset, snap.length,
                                  max_bytes=settings.decode_max_bytes, fresh=True)
                found = _check_against_index(rec, snap, referred_sha)
                if found:
                    kind, detail = "mismatch", "; ".join(found)
                if snap.request_offset is not None and not found:
                    req = read_stored(settings, snap.warc_file, snap.request_offset, snap.request_length or 0,
                                      fresh=True)
                    if req.problems:
                        kind, detail = "mismatch", "request record: " + "; ".join(req.problems)
            except RecordUnreadable as exc:
                kind, detail = exc.kind, exc.message
        snap.fixity_checked_at = now
        if kind is None:
            report.ok += 1
            snap.fixity, snap.fixity_detail = "ok", None
        else:
            snap.fixity, snap.fixity_detail = "failed", f"{kind}: {detail}"
            problem = Problem(snap.id, snap.citation_id, snap.warc_file, snap.offset, kind, detail)
            report.problems.append(problem)
            if progress is not None:
                progress(problem)
    session.flush()
    for problem in _unindexed(settings, set(referred_sha)):
        report.unindexed += 1
        report.problems.append(problem)
        if progress is not None:
            progress(problem)
