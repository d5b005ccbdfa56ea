"""Uploading sealed WARC files from the local spool to the bucket, beside capture (docs/storage.md).

A file is sealed when it is no longer the newest of its series (rotated: never written again), or when no
writer holds its series and it is taken under the series lock: ours at shutdown or at the end of
`caveat crawl`, or a killed worker's (its series is recovered first, with the torn-tail rules of
:class:`~app.storage.warcfiles.WarcStore`). Each file is uploaded under a lock on the file itself, so two
uploaders on one machine never send one file twice; the object store's ``If-None-Match`` keeps two machines
(or a retry after a crash) from overwriting. Uses warcfiles and objects.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from botocore.exceptions import BotoCoreError, ClientError
from sqlalchemy.exc import IntegrityError

from app.db import Database
from app.storage.objects import ObjectConflict, archive_store
from app.storage.warcfiles import (_SERIES_LOCKS, _THREAD_LOCK, PATTERN, WarcStore, lock_name, rebuild_cdxj,
                                   series_of, worker_alive)

log = logging.getLogger("caveat.upload")


@dataclass
class UploadReport:
    uploaded: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)   # the object was there with the same bytes (a retry)
    failed: list[str] = field(default_factory=list)    # "name: why"; the local file is kept
    waiting: int = 0                                     # open files left in the spool (their writer holds them)


def spool_series(warc_dir: Path) -> dict[str | None, list[Path]]:
    """Caveat's WARC files in the spool, per series, oldest first."""
    out: dict[str | None, list[Path]] = {}
    for p in sorted(warc_dir.glob(PATTERN)) if warc_dir.exists() else []:
        s = series_of(p.name)
        if s is not False:
            out.setdefault(s or None, []).append(p)
    return out


@contextlib.contextmanager
def try_series_lock(warc_dir: Path, series: str | None):
    """Yields whether the series' writer lock was free and is now held (it never waits)."""
    tl = _THREAD_LOCK if series is None else _SERIES_LOCKS.setdefault(series, threading.Lock())
    if not tl.acquire(blocking=False):
        yield False
        return
    try:
        with open(warc_dir / lock_name(series), "a+") as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    finally:
        tl.release()


def upload_file(db: Database, path: Path, report: UploadReport, say: Callable[[str], None]) -> bool:
    """Upload one sealed file under a lock on it; False when it failed (the local file is kept)."""
    store = archive_store(db.settings)
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return True   # another uploader finished it
    with f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True   # another uploader on this machine is sending it
        try:
            if os.fstat(f.fileno()).st_ino != path.stat().st_ino:
                return True
        except FileNotFoundError:
            return True
        try:
            outcome = store.upload(db, path)
        except (ObjectConflict, ClientError, BotoCoreError, OSError) as exc:
            report.failed.append(f"{path.name}: {exc}")
            say(f"upload of {path.name} failed, the local file is kept: {exc}")
            return False
        except IntegrityError:
            outcome = "already"
    (report.uploaded if outcome == "uploaded" else report.already).append(path.name)
    say(f"{path.name}: {'uploaded to' if outcome == 'uploaded' else 'already in'} {db.settings.archive_url}; "
        "local copy removed")
    return True


def _recover(db: Database, series: str | None) -> list[Path]:
    """Under the series lock: index the whole records left without rows and cut a torn tail, as a writer
    opening the series would; returns the series' files, all sealed now."""
    ws = WarcStore(db, writable=False, series=series or "")   # not entered: the caller holds the lock
    files = ws._series_files(series)
    ws.catch_up(files)
    if files:
        ws.repair(files[-1])
    if ws.repaired:
        rebuild_cdxj(db)
    return ws._series_files(series)


def upload_spool(db: Database, *, seal: set[str | None] | frozenset = frozenset(),
                 hold: set[str | None] | frozenset = frozenset(),
                 say: Callable[[str], None] | None = None) -> UploadReport:
    """Upload every sealed file of the spool, each series in the order written and stopping at its first
    failure (a later file is never sent before an earlier one). The newest file of a series is sealed here
    for the series in ``seal`` and for a worker series whose worker is gone, when its lock is free; never
    for a series in ``hold`` (the caller's own, while it writes)."""
    say = say or log.info
    report = UploadReport()
    settings = db.settings
    if not archive_store(settings).remote:
        return report
    for series, files in spool_series(settings.warc_dir).items():
        take_all = series in seal or (series not in hold and series is not None and series.startswith("w_")
                                      and not worker_alive(settings, series))
        if take_all:
            with try_series_lock(settings.warc_dir, series) as held:
                if held:
                    for path in _recover(db, series):
                        if not upload_file(db, path, report, say):
                            break
                    continue
        for path in files[:-1]:
            if not upload_file(db, path, report, say):
                break
        report.waiting += 1
    return report


class Uploader:
    """A background thread uploading sealed files every ``CAVEAT_S3_UPLOAD_EVERY`` seconds; :meth:`close`
    seals and uploads ``series`` (the writer's own) once its writing is over."""

    def __init__(self, db: Database, *, series: str | None, say: Callable[[str], None] | None = None):
        self.db, self.series, self.say = db, series, say or log.info
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="caveat-upload", daemon=True)

    def start(self) -> "Uploader":
        self.thread.start()
        return self

    def _round(self, seal=frozenset()) -> UploadReport | None:
        try:
            return upload_spool(self.db, seal=seal, hold=frozenset({self.series}), say=self.say)
        except Exception:  # noqa: BLE001 - logged; the next round tries again, nothing local is removed
            log.exception("upload round failed")
            return None

    def _run(self) -> None:
        while True:
            self._round()
            if self.stop.wait(self.db.settings.s3_upload_every):
                return

    def close(self) -> UploadReport | None:
        self.stop.set()
        self.thread.join()
        return self._round(seal=frozenset({self.series}))
