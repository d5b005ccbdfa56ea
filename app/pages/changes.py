"""The ``/changes`` page (and ``/changes.json``, and the HTML face of ``/changes.atom``): the change
events the crawls found, newest first, filtered like ``GET /api/changes``, 50 a page.

Built from ``app.watch.changes.list_changes``; each event also gets its one-line ``title`` (the Atom
entry's title) and the page it concerns (``url``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import urlencode

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.models import Source
from app.watch.changes import KINDS, list_changes, title

PER_PAGE = 50
FILTERS = ("source", "kind", "cited", "entry_id", "recipe_id", "since")


def changes_page(session: Session, settings, *, source: str | None = None, kind: str | None = None,
                 cited: bool | None = None, entry_id: int | None = None, recipe_id: str | None = None,
                 since: datetime | None = None, offset: int = 0, path: str = "/changes") -> dict:
    rows, total = list_changes(session, settings, source=source, entry_id=entry_id, recipe_id=recipe_id,
                               kind=kind, cited=cited, since=since, limit=PER_PAGE, offset=offset)
    for ev in rows:
        ev["title"] = title(ev)
        ev["url"] = f"/entries/{ev['entry_id']}" if ev["entry_id"] else \
            (f"/recipes/{ev['recipe_id']}" if ev["recipe_id"] else "/sources")
    filters = {"source": source, "kind": kind, "cited": cited, "entry_id": entry_id, "recipe_id": recipe_id,
               "since": since.isoformat() if since else None}
    kept = [(k, _q(v)) for k, v in filters.items() if v is not None]

    def at(off: int) -> str:
        return path + "?" + urlencode(kept + ([("offset", off)] if off else [])) if kept or off else path

    more = offset + len(rows) < total
    feed = [(k, v) for k, v in kept if k in ("source", "kind", "cited")]
    return {"filters": filters, "count": len(rows), "total": total, "limit": PER_PAGE, "offset": offset,
            "next": at(offset + len(rows)) if more else None,
            "prev": at(max(0, offset - PER_PAGE)) if offset else None,
            "feed": "/changes.atom" + ("?" + urlencode(feed) if feed else ""),
            "choices": {"kind": list(KINDS), "source": list(session.scalars(select(Source.name).order_by(Source.name)))},
            "changes": rows}


def _q(v) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def feed_created(session: Session, settings) -> datetime:
    """When the feed began: the first source's creation (nothing can change before a source is watched),
    else the data folder's (the oldest time its files carry). Never a made-up date."""
    first = session.scalar(select(func.min(Source.created_at)))
    if first is not None:
        return first if first.tzinfo else first.replace(tzinfo=timezone.utc)
    folder = settings.data_dir
    times = [p.stat().st_mtime for p in (folder / "secret_key", folder / "caveat.db", folder) if p.exists()]
    stamp = min(times) if times else datetime.now(timezone.utc).timestamp()
    return datetime.fromtimestamp(stamp, timezone.utc).replace(microsecond=0)
