"""Rebuild the index from the WARC files alone (`caveat reindex`): every whole record indexed again with
the citation id it had, every metadata record's meaning restored (sources, access changes, measurements),
then entries, flags and quotable answers re-derived by reparsing every source."""

from __future__ import annotations

from typing import Callable

from app.claims.sources import list_sources
from app.crawl.workflow import reparse_one
from app.db import Database
from app.measure import evidence  # noqa: F401  (registers the measurement records' handler)
from app.replay import withdrawal  # noqa: F401  (registers the access records' handler)
from app.storage.indexing import Reindexer, ReindexReport, warc_files
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
        say(f"reindexing {len(files)} WARC file(s) in {db.settings.warc_dir}")
        for path in files:
            result = rx.index_file(path, 0)
            report.files.append(result)
            store._walks[path.name] = result.walk
            say(f"{path.name}: {result.indexed:,} indexed, {result.already:,} already indexed"
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
    return report
