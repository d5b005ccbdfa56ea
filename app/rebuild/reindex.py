"""Rebuild the index from the WARC files alone (`caveat reindex`): every whole record indexed again with
the citation id it had, every metadata record's meaning restored (sources, access changes, measurements),
then entries, flags and quotable answers re-derived by reparsing every source."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Callable

from sqlalchemy import func, select

from app.claims import corrections  # noqa: F401  (registers the review records' handler)
from app.claims.sources import list_sources
from app.crawl.workflow import reparse_one
from app.db import Database
from app.models import ArchiveObject, Correction
from app.measure import evidence  # noqa: F401  (registers the measurement records' handler)
from app.replay import withdrawal  # noqa: F401  (registers the access records' handler)
from app.review.decisions import restore_decisions
from app.storage.indexing import Reindexer, ReindexReport, warc_files
from app.storage.objects import archive_store
from app.storage.tlog import logged_records
from app.storage.warcfiles import PATTERN, WarcStore, rebuild_cdxj


def reindex_all(db: Database, *, progress: Callable[[str], None] | None = None,
                reparse: bool = True) -> ReindexReport:
    """Index every whole record of every WARC file in the data folder that has no row yet (Caveat's own
    files and files other tools wrote that were dropped in), cut a torn tail off the newest of our
    files (kept in a ``.torn`` file), mark each record the tamper-evident log does not hold at that place as
    unverified (not a capture Caveat made), link revisits, rebuild the CDXJ, and, with ``reparse``,
    re-derive entries, flags and quotable answers by reparsing every source's snapshots."""
    say = progress or (lambda message: None)
    report = ReindexReport()
    with WarcStore(db, notice=say, writable=False) as store:
        rx = Reindexer(db, progress=say, logged=logged_records(db.settings))
        files = warc_files(db.settings.warc_dir)
        objects = archive_store(db.settings)
        local = {p.name for p in files}
        remote = [n for n in objects.remote_names() if n not in local]
        say(f"reindexing {len(files)} WARC file(s) in {db.settings.warc_dir}"
            + (f" and {len(remote)} object(s) in {db.settings.archive_url}" if objects.remote else ""))
        order = sorted([(p.name, p) for p in files] + [(n, None) for n in remote],
                       key=lambda item: (not item[0].startswith("caveat-"), item[0]))
        for name, path in order:
            if path is None:
                result = _index_object(db, rx, objects, name)
            else:
                result = rx.index_file(path, 0)
                store._walks[path.name] = result.walk
            report.files.append(result)
            say(f"{name}: {result.indexed:,} indexed, {result.already:,} already indexed"
                + (f", {len(result.problems)} problem(s)" if result.problems else ""))
        ours = sorted(db.settings.warc_dir.glob(PATTERN))
        if ours:
            store.repair(ours[-1])
        rx.link_revisits()
        lines = rebuild_cdxj(db)
        say(f"CDXJ index rewritten: {lines:,} line(s)")
        report.sources = rx.created_sources
    if reparse:
        with db.Session() as s:
            sources = list_sources(s)
        for src in sources:
            r = reparse_one(db, db.settings, src)
            say(f"reparsed {src.name}: {r.status}, {r.summary.new} new, {r.summary.changed} changed, "
                f"{r.summary.unchanged} unchanged from {r.snapshots} snapshot(s)")
        flags = restore_decisions(db, db.settings)
        with db.Session() as s:
            kinds = dict(s.execute(select(Correction.kind, func.count()).group_by(Correction.kind)).all())
        say(f"reviewers' records restored from the WARC files: {kinds.get('fix', 0)} fix(es), {kinds.get('add', 0)} "
            f"added figure(s), {kinds.get('reject', 0)} rejection(s), {kinds.get('decision', 0)} decision(s) "
            f"({flags} flag status(es) set again)")
    return report


def _index_object(db: Database, rx: Reindexer, objects, name: str):
    """Index one object of the bucket: streamed once into a temporary file beside the cache, walked, removed;
    its ``archive_objects`` row comes back from the store's own size and SHA-256 (HEAD)."""
    info = objects.head(name)
    if info is not None and info.sha256_b64:
        with db.Session() as s:
            if s.get(ArchiveObject, name) is None:
                s.add(ArchiveObject(name=name, size=info.size, sha256=base64.b64decode(info.sha256_b64).hex()))
                s.commit()
    tmp_root = db.settings.data_dir / "cache"
    tmp_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tmp_root, prefix="reindex-") as tmp:
        path = Path(tmp) / name
        objects.bucket.download(name, path)
        return rx.index_file(path, 0)


# What lives only in the database (issue 29 item 2): said by every reindex, so nobody learns it by losing it.
NOT_RESTORED = ("not restored (they live only in the database): user accounts and their sessions, API tokens, "
                "webhooks and their delivery log, schedules' next times, and the change-event history "
                "(corrections and decisions are restored; the decisions' account links are not). "
                "Back the database up, or copy it with `caveat db copy --to URL`.")
