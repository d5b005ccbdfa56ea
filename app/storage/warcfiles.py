"""The WARC folder as capture sees it: one writer at a time, torn-tail repair, rotation, CDXJ.

:class:`WarcStore` holds an exclusive lock on ``<warc_dir>/.capture.lock`` (between processes via
``flock``, between threads via a lock) for as long as it is open, so exactly one writer appends to
the newest file, and for the whole of every write (from the first byte appended until its rows
commit). Opening it catches the index up with the files: every whole record after the last indexed
byte of each file (fsynced, but its rows never committed, or a database older than the files) is
indexed, never removed. Only a torn record at the end of the newest file (bytes after the last whole,
well-formed record, when nothing readable follows) is cut, after being copied to a ``.torn`` file.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import re
import secrets
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from sqlalchemy import func, select

from app import __version__
from app.config import Settings
from app.db import Database
from app.models import ArchiveObject, Snapshot
from app.storage.indexing import Reindexer
from archive.cdxj import CdxjRow, merge_index, write_index
from archive.indexer import Walk, walk
from archive.recovery import keep_aside, truncate_tail
from archive.timestamps import ts14, ts17
from archive.warcwriter import WarcWriter
from datetime import timedelta

log = logging.getLogger("caveat.capture")
_THREAD_LOCK = threading.Lock()
PATTERN = "caveat-*.warc.gz"
# File series (issue 17): each `caveat worker` writes its own series, ``caveat-<series>-<time>-<random>.warc.gz``,
# under its own lock; the main series (``caveat-<time>-<random>.warc.gz``) is everyone else's.
SERIES_NAME = re.compile(r"^[a-z][a-z0-9_.]{0,62}[a-z0-9]$|^[a-z]$")
_FILE = re.compile(r"^caveat-(?:(?P<series>[a-z][a-z0-9_.]*)-)?\d{17}-[0-9a-f]+\.warc\.gz$")
_SERIES_LOCKS: dict[str, threading.Lock] = {}


def index_path(settings: Settings) -> Path:
    return settings.index_dir / "index.cdxj"


def check_series(series: str | None) -> str | None:
    if series is None or series == "":
        return None
    if not SERIES_NAME.match(series):
        raise ValueError(f"WARC series name {series!r}: use lower-case letters, digits, '_' and '.', "
                         "starting with a letter (e.g. w_host1_2)")
    return series


def series_of(name: str) -> str | None | bool:
    """The series a file belongs to (None: the main series), or False for a name that is not Caveat's."""
    m = _FILE.match(name)
    return False if m is None else m.group("series")


def new_warc_name(series: str | None = None) -> str:
    mid = f"{series}-" if series else ""
    return f"caveat-{mid}{ts17(datetime.now(timezone.utc))}-{secrets.token_hex(3)}.warc.gz"


TIDY_EVERY = 30.0  # seconds between two looks at the other series from one process
_TIDIED: dict[str, float] = {}
MERGED_UNCHECKED: dict[str, int] = {}  # CDXJ merges by a series writer whose count check is left to check_cdxj


def worker_alive(settings: Settings, series: str) -> bool:
    """Whether the `caveat worker` owning ``series`` (``w_<host>_<n>``) still holds its slot on this machine."""
    m = re.match(r"^w_(.+)_(\d+)$", series)
    if not m:
        return False
    slot = settings.warc_dir / f".worker-{m.group(1)}-{m.group(2)}.slot"
    if not slot.exists():
        return False
    with open(slot, "a+") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f.fileno(), fcntl.LOCK_UN)
        return False


def lock_name(series: str | None) -> str:
    return f".capture-{series}.lock" if series else ".capture.lock"


_CDXJ = threading.local()


@contextlib.contextmanager
def cdxj_lock(settings: Settings):
    """The CDXJ file is shared by every series: one merge or rebuild at a time (re-entrant per thread)."""
    depth = getattr(_CDXJ, "depth", 0)
    if depth:
        _CDXJ.depth = depth + 1
        try:
            yield
        finally:
            _CDXJ.depth -= 1
        return
    settings.index_dir.mkdir(parents=True, exist_ok=True)
    with open(settings.index_dir / ".cdxj.lock", "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        _CDXJ.depth = 1
        try:
            yield
        finally:
            _CDXJ.depth = 0
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


class WarcStore:
    def __init__(self, db: Database, *, notice: Callable[[str], None] | None = None,
                 progress: Callable[[str], None] | None = None, writable: bool = True, series: str | None = None):
        self.db = db
        self.series = check_series(series if series is not None else db.settings.warc_series)
        self.writable = writable
        self.settings = db.settings
        self.notice = notice
        self.writer: WarcWriter | None = None
        self.repaired = False
        self.progress = progress
        self._lock_file = None
        self._reindexer = None
        self._walks: dict = {}

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> "WarcStore":
        s = self.settings
        s.warc_dir.mkdir(parents=True, exist_ok=True)
        s.index_dir.mkdir(parents=True, exist_ok=True)
        self._thread_lock = _THREAD_LOCK if self.series is None else _SERIES_LOCKS.setdefault(self.series, threading.Lock())
        self._thread_lock.acquire()
        try:
            self._lock_file = open(s.warc_dir / lock_name(self.series), "a+")
            fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_EX)
            if self.writable:
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
        self._thread_lock.release()

    def _say(self, message: str) -> None:
        log.warning(message)
        if self.notice:
            self.notice(message)

    # -- files --------------------------------------------------------------------------------
    def _series_files(self, series: str | None) -> list[Path]:
        return sorted(p for p in self.settings.warc_dir.glob(PATTERN) if (series_of(p.name) or None) == series)

    def _open_current(self) -> None:
        files = self._series_files(self.series)
        self.catch_up(files)
        self._tidy_idle_series()
        if files:
            path = files[-1]
            if self.repair(path) and path.stat().st_size < self.settings.warc_rotate_bytes and not self._uploaded(path):
                self.writer = self._writer(path)
                return
        self.writer = self._writer(self.settings.warc_dir / new_warc_name(self.series))

    def _uploaded(self, path: Path) -> bool:
        """Whether ``path`` is already an object in the bucket (an uploader stopped before removing it): sealed."""
        if not self.settings.archive_url:
            return False
        with self.db.Session() as s:
            return s.get(ArchiveObject, path.name) is not None

    def _tidy_idle_series(self) -> None:
        """The other series nobody is writing now (their lock is free: e.g. a worker that was killed): index
        their unindexed whole records and cut a torn tail, under their lock. A series in use is left alone."""
        now = time.monotonic()
        if now - _TIDIED.get(str(self.settings.warc_dir), -1e9) < TIDY_EVERY:
            return
        _TIDIED[str(self.settings.warc_dir)] = now
        names = {series_of(p.name) or None for p in self.settings.warc_dir.glob(PATTERN)}
        for other in sorted((n for n in names if n != self.series), key=lambda n: n or ""):
            if other is None and _THREAD_LOCK.locked():
                continue
            if other is not None and worker_alive(self.settings, other):
                continue
            with open(self.settings.warc_dir / lock_name(other), "a+") as f:
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                try:
                    files = self._series_files(other)
                    self.catch_up(files)
                    if files:
                        self.repair(files[-1])
                finally:
                    fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def _writer(self, path: Path) -> WarcWriter:
        return WarcWriter(path, gzip_level=self.settings.warc_gzip_level, software=f"Caveat/{__version__}",
                          info=[("isPartOf", "caveat")])

    def rotate_if_full(self) -> None:
        w = self.writer
        if w is not None and w.has_records and w.size >= self.settings.warc_rotate_bytes:
            self.writer.close()
            self.writer = self._writer(self.settings.warc_dir / new_warc_name(self.series))

    def indexed_ends(self, files: list[Path]) -> dict[str, int]:
        """Per WARC file, the end of the last byte a ``snapshots`` row points at: the last record by
        offset and the request record written after it (one index lookup per file, not a table scan)."""
        out: dict[str, int] = {}
        with self.db.Session() as s:
            for path in files:
                row = s.execute(select(Snapshot.offset + Snapshot.length,
                                       Snapshot.request_offset + Snapshot.request_length)
                                .where(Snapshot.warc_file == path.name)
                                .order_by(Snapshot.offset.desc()).limit(1)).first()
                if row is not None:
                    out[path.name] = max(x for x in row if x is not None)
        return out

    def reindexer(self):
        if self._reindexer is None:
            self._reindexer = Reindexer(self.db, progress=self.progress)
        return self._reindexer

    def catch_up(self, files: list[Path]) -> int:
        """Index every whole record after the last indexed byte of each of our files (records that were
        fsynced but whose rows never committed, or a database that is older or newer than the files).
        Never removes anything; returns how many records were indexed."""
        ends = self.indexed_ends(files)
        total = 0
        for path in files:
            start = ends.get(path.name, 0)
            try:
                if path.stat().st_size <= start:
                    continue
            except FileNotFoundError:   # sealed and uploaded meanwhile (docs/storage.md)
                continue
            # Usually only the metadata record of the last crawl follows: read the tail first, and load
            # the index for a catch-up only when whole responses without rows are there.
            tail = Walk(path, start)
            if not any(f.warc_type in ("response", "revisit") for f in walk(path, start, report=tail,
                                                                            max_record_bytes=self.settings.decode_max_bytes)):
                self._walks[path.name] = tail
                continue
            result = self.reindexer().index_file(path, start)
            self._walks[path.name] = result.walk
            if result.indexed:
                total += result.indexed
                self.repaired = True
                self._say(f"indexed {result.indexed:,} record(s) found in {path.name} without index rows "
                          f"(they are kept; run `caveat reindex` to re-derive entries from them)")
            for p in result.problems:
                if not p.startswith(("torn tail", "damaged tail")):
                    self._say(f"{path.name}: {p}")
        if total:
            self.reindexer().link_revisits()
        return total

    def repair(self, path: Path) -> bool:
        """Make ``path`` safe to append to. Only a torn record is removed: the bytes after the last whole,
        well-formed record, when nothing readable follows them; they are first copied to a ``.torn``
        file beside it. Returns False when the file must not be appended to (damage with whole records
        after it: nothing is cut, a new file is started)."""
        rep = self._walks.get(path.name)
        if rep is None or rep.tail is None:
            return True
        size = path.stat().st_size
        if rep.tail == "damaged":
            self._say(f"{path.name} is damaged at {rep.tail_detail}, and whole records follow; nothing was cut. "
                      f"New records go to a new file; `caveat verify` lists what is affected.")
            return False
        torn = keep_aside(path, rep.good_end)
        truncate_tail(path, rep.good_end)
        self.repaired = True
        self._say(f"torn tail repaired: {path.name} cut from {size:,} to {rep.good_end:,} bytes: a partial record "
                  f"of {size - rep.good_end:,} bytes left by an interrupted write, kept in {torn.name}")
        return True

    # -- index --------------------------------------------------------------------------------
    def update_cdxj(self, snapshots: list[Snapshot]) -> int:
        """Merge the new snapshots into the CDXJ file; rebuild it from the table if it is missing,
        a repair happened, or its line count disagrees with the table (e.g. a killed run)."""
        path = index_path(self.settings)
        with cdxj_lock(self.settings):
            if self.repaired or not path.exists():
                return rebuild_cdxj(self.db)
            lines = merge_index(path, (cdxj_row(s) for s in snapshots))
            if self.series is not None:
                # Other series commit rows at any moment, so a count taken now would often disagree and
                # rebuild the file at every crawl: the worker's housekeeping checks it (check_cdxj).
                key = str(self.settings.index_dir)
                MERGED_UNCHECKED[key] = MERGED_UNCHECKED.get(key, 0) + 1
                return lines
            with self.db.Session() as s:
                total = s.scalar(select(func.count()).select_from(Snapshot))
            if lines != total:
                return rebuild_cdxj(self.db)
            return lines


CDXJ_SETTLE = 120  # seconds: a row committed longer ago than this and still not merged was left by a killed writer
CDXJ_CHECK_EVERY = 10.0
_CHECKED: dict[str, float] = {}


def check_cdxj(db: Database, *, now: datetime | None = None) -> bool:
    """After a series writer's merges: rebuild the CDXJ file if rows older than ``CDXJ_SETTLE`` seconds are
    missing from it (a writer killed between its commit and its merge). Younger rows may be committed and
    not yet merged by a writer at work, so they are not counted. Returns whether it was rebuilt."""
    key = str(db.settings.index_dir)
    if not MERGED_UNCHECKED.get(key):
        return False
    mono = time.monotonic()
    if mono - _CHECKED.get(key, -1e9) < CDXJ_CHECK_EVERY:
        return False
    _CHECKED[key] = mono
    MERGED_UNCHECKED.pop(key, None)

    cutoff = ts14(ts17((now or datetime.now(timezone.utc)) - timedelta(seconds=CDXJ_SETTLE)))
    path = index_path(db.settings)
    with cdxj_lock(db.settings):
        with db.Session() as s:
            settled = s.scalar(select(func.count()).select_from(Snapshot).where(Snapshot.timestamp < cutoff + "000"))
        lines = 0
        if path.exists():
            with open(path, encoding="utf-8") as f:
                for line in f:
                    parts = line.split(" ", 2)
                    if len(parts) > 1 and not line.startswith("!") and parts[1] < cutoff:
                        lines += 1
        if lines == settled:
            return False
        rebuild_cdxj(db)
        return True


def rebuild_cdxj(db: Database) -> int:
    """Rewrite ``<index_dir>/index.cdxj`` from the ``snapshots`` table, sorted, atomically."""
    cols = (Snapshot.surt, Snapshot.timestamp, Snapshot.url, Snapshot.mime, Snapshot.status,
            Snapshot.payload_digest, Snapshot.length, Snapshot.offset, Snapshot.warc_file, Snapshot.record_type)
    with cdxj_lock(db.settings):
        with db.Session() as s:
            rows = s.execute(select(*cols)).all()
        return write_index(index_path(db.settings), (cdxj_row(r) for r in rows))


def cdxj_row(r) -> CdxjRow:
    """The CDXJ line of a snapshot (an ORM row or a result row with the same column names)."""
    return CdxjRow(urlkey=r.surt, timestamp=ts14(r.timestamp), url=r.url,
                   mime="warc/revisit" if r.record_type == "revisit" else (r.mime or "unk"),
                   status=r.status, digest=r.payload_digest, length=r.length, offset=r.offset,
                   filename=r.warc_file)
