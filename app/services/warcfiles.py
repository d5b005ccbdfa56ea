"""The WARC folder as capture sees it: one writer at a time, torn-tail repair, rotation, CDXJ.

:class:`WarcStore` holds an exclusive lock on ``<warc_dir>/.capture.lock`` (between processes via
``flock``, between threads via a lock) for as long as it is open, so exactly one writer appends to
the newest file. Opening it repairs that file: everything after the last record the ``snapshots``
table points at (a partial gzip member, or complete records whose rows never committed because the
process was killed) is truncated, and a notice says so.
"""

from __future__ import annotations

import fcntl
import logging
import secrets
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from sqlalchemy import func, select

from app import __version__
from app.config import Settings
from app.db import Database
from app.models import Snapshot
from archive.cdxj import CdxjRow, merge_index, write_index
from archive.recovery import scan_members, truncate_tail
from archive.timestamps import ts14, ts17
from archive.warcwriter import WarcWriter

log = logging.getLogger("caveat.capture")
_THREAD_LOCK = threading.Lock()
PATTERN = "caveat-*.warc.gz"


def index_path(settings: Settings) -> Path:
    return settings.index_dir / "index.cdxj"


def new_warc_name() -> str:
    return f"caveat-{ts17(datetime.now(timezone.utc))}-{secrets.token_hex(3)}.warc.gz"


class WarcStore:
    def __init__(self, db: Database, *, notice: Callable[[str], None] | None = None):
        self.db = db
        self.settings = db.settings
        self.notice = notice
        self.writer: WarcWriter | None = None
        self.repaired = False
        self._lock_file = None

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> "WarcStore":
        s = self.settings
        s.warc_dir.mkdir(parents=True, exist_ok=True)
        s.index_dir.mkdir(parents=True, exist_ok=True)
        _THREAD_LOCK.acquire()
        try:
            self._lock_file = open(s.warc_dir / ".capture.lock", "a+")
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX)
            self._open_current()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.writer is not None:
                self.writer.close()
        finally:
            self._release()

    def _release(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None
        _THREAD_LOCK.release()

    def _say(self, message: str) -> None:
        log.warning(message)
        if self.notice:
            self.notice(message)

    # -- files --------------------------------------------------------------------------------
    def _open_current(self) -> None:
        files = sorted(self.settings.warc_dir.glob(PATTERN))
        if files:
            path = files[-1]
            self.repair(path)
            if path.stat().st_size < self.settings.warc_rotate_bytes:
                self.writer = self._writer(path)
                return
        self.writer = self._writer(self.settings.warc_dir / new_warc_name())

    def _writer(self, path: Path) -> WarcWriter:
        return WarcWriter(path, gzip_level=self.settings.warc_gzip_level, software=f"Caveat/{__version__}",
                          info=[("isPartOf", "caveat")])

    def rotate_if_full(self) -> None:
        w = self.writer
        if w is not None and w.has_records and w.size >= self.settings.warc_rotate_bytes:
            self.writer.close()
            self.writer = self._writer(self.settings.warc_dir / new_warc_name())

    def indexed_end(self, name: str) -> int | None:
        """End of the last byte any ``snapshots`` row points at in file ``name``."""
        with self.db.Session() as s:
            a, b = s.execute(select(func.max(Snapshot.offset + Snapshot.length),
                                    func.max(Snapshot.request_offset + Snapshot.request_length))
                             .where(Snapshot.warc_file == name)).one()
        ends = [x for x in (a, b) if x is not None]
        return max(ends) if ends else None

    def repair(self, path: Path) -> int:
        """Truncate whatever follows the last indexed record of ``path``; returns bytes removed."""
        size = path.stat().st_size
        keep = self.indexed_end(path.name)
        if keep is None:  # nothing indexed: keep the leading warcinfo record if it is whole
            first = scan_members(path, 0).members[:1]
            keep = first[0][1] if first else 0
        if size <= keep:
            return 0
        scan = scan_members(path, keep)
        removed = truncate_tail(path, keep)
        self.repaired = True
        whole = len(scan.members)
        parts = []
        if whole:
            parts.append(f"{whole} complete record(s) whose index rows never committed")
        if scan.torn_bytes:
            parts.append(f"a partial record of {scan.torn_bytes:,} bytes")
        self._say(f"torn tail repaired: {path.name} truncated from {size:,} to {keep:,} bytes "
                  f"({' and '.join(parts)}, left by an interrupted capture)")
        return removed

    # -- index --------------------------------------------------------------------------------
    def update_cdxj(self, snapshots: list[Snapshot]) -> int:
        """Merge the new snapshots into the CDXJ file; rebuild it from the table if it is missing,
        a repair happened, or its line count disagrees with the table (e.g. a killed run)."""
        path = index_path(self.settings)
        if self.repaired or not path.exists():
            return rebuild_cdxj(self.db)
        lines = merge_index(path, (cdxj_row(s) for s in snapshots))
        with self.db.Session() as s:
            total = s.scalar(select(func.count()).select_from(Snapshot))
        if lines != total:
            return rebuild_cdxj(self.db)
        return lines


def rebuild_cdxj(db: Database) -> int:
    """Rewrite ``<index_dir>/index.cdxj`` from the ``snapshots`` table, sorted, atomically."""
    cols = (Snapshot.surt, Snapshot.timestamp, Snapshot.url, Snapshot.mime, Snapshot.status,
            Snapshot.payload_digest, Snapshot.length, Snapshot.offset, Snapshot.warc_file, Snapshot.record_type)
    with db.Session() as s:
        rows = s.execute(select(*cols)).all()
    return write_index(index_path(db.settings), (cdxj_row(r) for r in rows))


def cdxj_row(r) -> CdxjRow:
    """The CDXJ line of a snapshot (an ORM row or a result row with the same column names)."""
    return CdxjRow(urlkey=r.surt, timestamp=ts14(r.timestamp), url=r.url,
                   mime="warc/revisit" if r.record_type == "revisit" else (r.mime or "unk"),
                   status=r.status, digest=r.payload_digest, length=r.length, offset=r.offset,
                   filename=r.warc_file)
