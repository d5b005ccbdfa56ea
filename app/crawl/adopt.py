"""``caveat source add NAME URL --from-archive``: give a new source the snapshots already in the archive
for its URL (brought in by ``caveat import-warc``, or captured before the source existed), then read
and audit them as a reparse does, so imported captures get entries, flags and citations.

A snapshot is adopted when its URL is the source's (same SURT, so ``http://A.test:80/x`` matches
``http://a.test/x``), it is a response or revisit and no source owns it yet. Each adoption is written
to the WARC as the same ``metadata`` record a crawl writes beside its response (``caveat-source: NAME``,
``WARC-Concurrent-To`` the snapshot's record id), fsynced and logged before the rows change, so
``caveat reindex`` gives the snapshots back to the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from sqlalchemy import or_, select

from app.config import Settings
from app.crawl.workflow import SourceReport, reparse_one, select_sources
from app.db import Database
from app.models import Snapshot, Source
from app.storage.indexing import source_metadata
from app.storage.tlog import append_written
from app.storage.warcfiles import WarcStore
from archive.surt import surt
from archive.timestamps import ts17
from archive.warcwriter import build_record


@dataclass
class Adopted:
    citation_ids: list[str] = field(default_factory=list)
    owned_elsewhere: list[str] = field(default_factory=list)  # the URL's snapshots another source owns
    report: SourceReport | None = None


def adopt_archived(db: Database, settings: Settings, source_id: int) -> Adopted:
    """Attach the archive's unowned snapshots of the source's URL to it, then reparse and audit it."""
    out = Adopted()
    with WarcStore(db) as store:
        with db.Session() as s:
            src = s.get(Source, source_id)
            rows = list(s.scalars(select(Snapshot).where(
                Snapshot.surt == surt(src.url), Snapshot.record_type.in_(("response", "revisit")),
                or_(Snapshot.source_id.is_(None), Snapshot.source_id != src.id))
                .order_by(Snapshot.timestamp, Snapshot.id)))
            name = src.name
            out.owned_elsewhere = [r.citation_id for r in rows if r.source_id is not None]
            mine = [r for r in rows if r.source_id is None]
            if mine:
                store.rotate_if_full()
                writer = store.writer
                start = writer.size
                head = source_metadata(src.name, src.url, src.kind, src.key_columns)
                head += b"caveat-source-browser: 1\r\n" if src.browser else b""
                at = ts17(datetime.now(timezone.utc))
                try:
                    for r in mine:
                        writer.append(build_record("metadata", [("WARC-Target-URI", r.url),
                                                                ("WARC-Concurrent-To", r.record_id)],
                                                   content_type="application/warc-fields", ts=at, head=head,
                                                   level=writer.level))
                    writer.sync()
                    for r in mine:
                        r.source_id = src.id
                    s.commit()
                except BaseException:
                    writer.truncate(start)
                    writer.sync()
                    writer.take_appended()
                    raise
                append_written(settings, writer.path.name, writer.take_appended(), sign=True)
                out.citation_ids = [r.citation_id for r in mine]
            name = src.name
    if out.citation_ids:
        out.report = reparse_one(db, settings, select_sources(db, [name])[0])
    return out
