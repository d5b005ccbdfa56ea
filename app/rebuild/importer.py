"""``import_warcs(db, paths)``: bring responses from WARC files written by other tools into our store.

Every record is read and its digests recomputed (``archive.importer``); each good ``response`` (and
each ``revisit`` whose original is known) is copied into our current WARC file as a WARC/1.1 record
with sha256 digests, keeping its WARC-Record-ID, target URI and date, and gets a ``snapshots`` row
and a citation id. The copy is fsynced before the rows are added, so the source file may be deleted
afterwards. Bad records are reported one by one and skipped; the good ones around them are kept.
A record already imported (same WARC-Record-ID) is skipped, so importing a file twice is harmless.
The request record of an imported response (same file, WARC-Concurrent-To) is copied beside it.
A `caveat measure` evidence record (``metadata``, as `caveat export-wacz` packs them) is copied too and
its measurement restored, pointing at the exchanges imported with it, and verified only when its
figures follow from those exchanges (app/measure/recheck.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sqlalchemy import select

from app.db import Database
from app.errors import BadRequest
from app.models import Measurement, Snapshot
from app.measure.evidence import is_measurement_record, restore as restore_measurements
from app.storage.warcfiles import WarcStore
from archive import digests
from archive.citeid import citation_id_for_record
from archive.importer import Scanned, scan_warc, warc_date_to_ts
from archive.reader import WarcRecord
from archive.surt import surt
from archive.timestamps import bump, parse_ts17
from archive.warcwriter import build_record, build_request
from app.storage.tlog import append_written

KEEP_FIELDS = ("WARC-Target-URI", "WARC-IP-Address", "WARC-Profile", "WARC-Refers-To",
               "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date", "WARC-Truncated", "WARC-Identified-Payload-Type")


@dataclass
class FileReport:
    path: str
    imported: list[Snapshot] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # fine, but not a response we keep
    problems: list[str] = field(default_factory=list)  # bad records, one line each
    measurements: int = 0  # `caveat measure` measurements restored from evidence records

    @property
    def ok(self) -> bool:
        return not self.problems


def _mime(rec: WarcRecord) -> str | None:
    ctype = rec.http_header("Content-Type")
    return ctype.split(";")[0].strip().lower() if ctype else None


class _Importer:
    def __init__(self, session, writer, source_name: str):
        self.s = session
        self.w = writer
        self.source_name = source_name
        self.by_record_id: dict[str, Snapshot] = {}
        self.by_digest: dict[str, Snapshot] = {}
        self.used_ts: dict[str, set[str]] = {}
        self.measured: list[tuple[int, int, str, bytes]] = []  # (offset, length, record id, block) as copied
        self.measured_ids: set[str] = set()

    def unique_ts(self, key: str, ts: str) -> str:
        """``ts``, moved 1 ms later until no capture with the same SURT key has it (replay's key)."""
        used = self.used_ts.setdefault(key, set())
        used |= set(self.s.scalars(select(Snapshot.timestamp).where(Snapshot.surt == key, Snapshot.timestamp >= ts)))
        while ts in used:
            ts = bump(ts)
        used.add(ts)
        return ts

    def original(self, rec: WarcRecord) -> Snapshot | None:
        ref = rec.header("WARC-Refers-To")
        if ref:
            row = self.by_record_id.get(ref) or self.s.scalars(
                select(Snapshot).where(Snapshot.record_id == ref)).first()
            if row is not None:
                return row
        pd = rec.header("WARC-Payload-Digest")
        if pd and pd in self.by_digest:
            return self.by_digest[pd]
        if pd:
            try:
                algorithm, raw = digests.parse(pd)
            except ValueError:
                return None
            if algorithm == "sha256":
                return self.s.scalars(select(Snapshot).where(Snapshot.sha256 == raw.hex(),
                                                             Snapshot.record_type == "response")
                                      .order_by(Snapshot.id).limit(1)).first()
        return None

    def add(self, rec: WarcRecord, report: FileReport, item: Scanned) -> None:
        rid = rec.header("WARC-Record-ID") or ""
        url = (rec.header("WARC-Target-URI") or "").strip().strip("<>")  # wget writes <uri>
        ts = warc_date_to_ts(rec.header("WARC-Date"))
        scheme = url.split(":", 1)[0].lower() if ":" in url else ""
        if url and scheme not in ("http", "https"):
            report.problems.append(f"{item.describe()}: target URI {url[:80]!r} is not an http(s) URL; not imported "
                                   "(an archived javascript:, data: or file: address could act when shown as a link)")
            return
        if not url or ts is None or rec.http_status is None:
            report.problems.append(f"{item.describe()}: lacks a target URI, a valid WARC-Date or an HTTP status "
                                   "line; not imported")
            return
        if rid and (rid in self.by_record_id or self.s.scalars(
                select(Snapshot.id).where(Snapshot.record_id == rid)).first() is not None):
            report.skipped.append(f"offset {item.offset}: {url} {rid} was imported before")
            return
        original = None
        if rec.warc_type == "revisit":
            original = self.original(rec)
            if original is None:
                report.problems.append(f"{item.describe()}: revisit of a record that is neither in this import "
                                       "nor in the archive; import the WARC holding the original first")
                return
            sha_hex = original.sha256
        else:
            sha_hex = hashlib.sha256(rec.payload).hexdigest()
        ts = self.unique_ts(surt(url), ts)
        fields = [(k, url if k == "WARC-Target-URI" else rec.header(k)) for k in KEEP_FIELDS if rec.header(k)]
        written = self.w.append(build_record(rec.warc_type, fields, content_type=rec.header("Content-Type"),
                                             head=rec.block, payload_digest=digests.label(bytes.fromhex(sha_hex)),
                                             ts=ts, record_id=rid or None, level=self.w.level))
        row = Snapshot(
            citation_id="", url=url, surt=surt(url), timestamp=ts, captured_at=parse_ts17(ts),
            status=rec.http_status, mime=_mime(rec), record_type=rec.warc_type, warc_file=self.w.path.name,
            offset=written.offset, length=written.length, record_id=written.record_id,
            payload_digest=written.payload_digest, block_digest=written.block_digest, sha256=sha_hex,
            payload_length=len(rec.payload) if original is None else original.payload_length,
            refers_to=original, refers_to_record_id=original.record_id if original is not None else None,
            redirect_to=rec.http_header("Location"), origin="import", fixity="ok",
        )
        self.by_record_id[written.record_id] = row
        if original is None:
            pd = rec.header("WARC-Payload-Digest")
            if pd:
                self.by_digest[pd] = row
        report.imported.append(row)

    def add_request(self, rec: WarcRecord, report: FileReport, item: Scanned) -> None:
        """The request record of a response imported from the same file (WARC-Concurrent-To): copied
        beside it, so a measurement's exchanges can be recomputed from what was sent (issue 24)."""
        row = self.by_record_id.get(rec.header("WARC-Concurrent-To") or "")
        if row is None or row.request_offset is not None:
            report.skipped.append(f"offset {item.offset}: request record")
            return
        written = self.w.append(build_request(row.url, row.timestamp, rec.block, concurrent_to=row.record_id,
                                              record_id=rec.header("WARC-Record-ID") or None, level=self.w.level))
        row.request_offset, row.request_length = written.offset, written.length

    def add_measurement(self, rec: WarcRecord, report: FileReport, item: Scanned) -> None:
        """The request record of an imported response (same file, WARC-Concurrent-To) is copied beside it.
A `caveat measure` evidence record (a WARC export carries them): copied as it is, and its
        measurement restored once the file's responses have rows."""
        rid = rec.header("WARC-Record-ID") or ""
        if not rid or rid in self.measured_ids or self.s.scalar(
                select(Measurement.id).where(Measurement.record_id == rid)) is not None:
            report.skipped.append(f"offset {item.offset}: measurement evidence {rid} was imported before")
            return
        ts = warc_date_to_ts(rec.header("WARC-Date"))
        if ts is None:
            report.problems.append(f"{item.describe()}: measurement evidence without a valid WARC-Date; not imported")
            return
        fields = [(k, rec.header(k)) for k in ("WARC-Target-URI", "WARC-Concurrent-To") if rec.header(k)]
        written = self.w.append(build_record("metadata", fields, content_type=rec.header("Content-Type"),
                                             head=rec.block, ts=ts, record_id=rid, level=self.w.level))
        self.measured_ids.add(rid)
        self.measured.append((written.offset, written.length, written.record_id, rec.block))

    def assign_ids(self, rows: list[Snapshot]) -> None:
        for row in rows:
            attempt = 0
            while True:
                cid = citation_id_for_record(row.record_id, attempt)
                attempt += 1
                if self.s.scalars(select(Snapshot.id).where(Snapshot.citation_id == cid)).first() is None and \
                        all(r.citation_id != cid for r in rows):
                    row.citation_id = cid
                    break


def import_warcs(db: Database, paths: list[str | Path],
                 progress: Callable[[FileReport], None] | None = None) -> list[FileReport]:
    """Import each file in its own transaction, committed while the WARC store's lock is still held
    (so no capture can mistake the copied records for a torn tail before their rows exist). A file
    that fails part way is cut back out of our WARC and rolled back alone, with the reason in its
    report; the files before it stay imported."""
    missing = [str(p) for p in paths if not Path(p).is_file()]
    if missing:
        raise BadRequest(f"no such file: {', '.join(missing)}. Give paths to .warc or .warc.gz files.")
    reports = []
    with WarcStore(db) as store:
        for p in paths:
            store.rotate_if_full()
            writer = store.writer
            start = writer.size
            report = FileReport(str(p))
            try:
                with db.Session.begin() as session:
                    imp = _Importer(session, writer, Path(p).name)
                    for item in scan_warc(p, max_record_bytes=db.settings.decode_max_bytes):
                        if not item.ok:
                            report.problems.append(item.describe())
                            continue
                        rec = item.record
                        if rec.warc_type == "metadata" and is_measurement_record(rec.header("Content-Type"), rec.block):
                            imp.add_measurement(rec, report, item)
                            continue
                        if rec.warc_type == "request":
                            imp.add_request(rec, report, item)
                            continue
                        if rec.warc_type not in ("response", "revisit"):
                            report.skipped.append(f"offset {item.offset}: {rec.warc_type} record")
                            continue
                        imp.add(rec, report, item)
                    writer.sync()
                    imp.assign_ids(report.imported)
                    session.add_all(report.imported)
                    session.flush()
                    if imp.measured:  # after the exchanges they name have rows
                        report.measurements = restore_measurements(db, writer.path, imp.measured, session=session)
            except Exception as exc:
                writer.truncate(start)
                writer.sync()
                writer.take_appended()      # cut back out: nothing of this file is logged
                report.problems.append(f"import of this file stopped and was undone ({type(exc).__name__}: {exc}); "
                                       "nothing from it was kept")
                report.imported = []
                report.measurements = 0
            except BaseException:
                writer.truncate(start)
                writer.sync()
                raise

            append_written(db.settings, writer.path.name, writer.take_appended(), sign=True)  # committed: log it
            store.update_cdxj(report.imported)
            reports.append(report)
            if progress:
                progress(report)
    return reports
