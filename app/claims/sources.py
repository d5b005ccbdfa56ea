"""Sources: the leaderboards and posts Caveat follows.

``add_source`` fetches nothing. Without a kind the source is stored with ``kind=None``; the first
crawl guesses the kind from the archived response's content type and content
(``scrapers.guess_kind``), stores it with ``kind_guessed=True`` and says what it guessed. Removing a
source only marks it removed: its snapshots, entries and history stay, and adding the same name
again brings it back.
"""

from __future__ import annotations


from datetime import datetime, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.errors import BadRequest, Conflict, NotFound
from archive.surt import InvalidURL
from archive.fetcher import parse_allowed_hosts, written_address_problem
from archive.urls import check_url
from app.models import Entry, Snapshot, Source, utcnow

KINDS = ("json", "html", "markdown", "text")


def _check_url(url: str) -> str:
    try:
        return check_url(url)
    except InvalidURL as exc:
        msg = str(exc)
        if "e.g." not in msg:  # the URL check's own message may already say how to write it
            msg += ". Give the full address, e.g. https://example.org/leaderboard"
        raise BadRequest(msg + ".") from None


def check_address(url: str, settings) -> None:
    """Refuse, when the source is added, a URL the crawler would refuse for its address (written as
    a loopback, private or link-local address, or a localhost name), in the crawler's words and
    under the same settings (CAVEAT_ALLOW_PRIVATE_ADDRESSES, CAVEAT_ALLOW_PRIVATE_HOSTS)."""
    problem = written_address_problem(url, settings.allow_private_addresses,
                                      parse_allowed_hosts(getattr(settings, "allow_private_hosts", "")))
    if problem:
        raise BadRequest(f"{url}: {problem}.")


def check_kind(kind: str | None) -> str | None:
    if kind is None:
        return None
    k = kind.strip().lower()
    if k not in KINDS:
        raise BadRequest(f"Unknown kind {kind!r}: use one of {', '.join(KINDS)}, "
                         "or leave it out to guess at first crawl.")
    return k


def check_key_columns(columns) -> list[str] | None:
    """``--key`` column names: stripped, unique, in order; None when none is named."""
    out = []
    for col in columns or ():
        c = " ".join(str(col).split())
        if not c or len(c) > 100:
            raise BadRequest(f"A key column is a column's header of 1 to 100 characters, not {col!r} "
                             "(e.g. --key Submission).")
        if c.lower() not in [o.lower() for o in out]:
            out.append(c)
    return out or None


def add_source(session: Session, name: str, url: str, kind: str | None = None, *, browser: bool = False,
               key_columns=None, settings=None) -> Source:
    """Follow ``url`` as ``name``. Given ``settings`` (the CLI and the API pass them), a URL whose address
    the crawler would refuse is refused now (``check_address``)."""
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise BadRequest("A source needs a name of 1 to 200 characters, e.g. `caveat source add localmaxxing URL`.")
    url = _check_url(url)
    if settings is not None:
        check_address(url, settings)
    kind = check_kind(kind)
    key_columns = check_key_columns(key_columns)
    existing = session.scalar(select(Source).where(Source.name == name))
    if existing is not None and existing.removed_at is None:
        raise Conflict(f"A source named {name!r} already exists ({existing.url}). Pick another name, or "
                       f"`caveat source remove {name}` first.")
    if existing is not None:  # re-adding a removed source keeps its history
        existing.url, existing.kind, existing.kind_guessed, existing.removed_at = url, kind, False, None
        existing.browser = bool(browser)
        existing.key_columns = key_columns
        session.flush()
        return existing
    src = Source(name=name, url=url, kind=kind, kind_guessed=False, browser=bool(browser), key_columns=key_columns)
    session.add(src)
    session.flush()
    return src


def get_source(session: Session, name: str) -> Source:
    src = session.scalar(select(Source).where(Source.name == name, Source.removed_at.is_(None)))
    if src is None:
        raise NotFound(f"No source named {name!r}. `caveat source list` shows the sources.")
    return src


def list_sources(session: Session, *, include_removed: bool = False) -> list[Source]:
    q = select(Source).order_by(Source.name)
    if not include_removed:
        q = q.where(Source.removed_at.is_(None))
    return list(session.scalars(q))


def remove_source(session: Session, name: str) -> Source:
    src = get_source(session, name)
    src.removed_at = utcnow()
    session.flush()
    return src


def set_guessed_kind(session: Session, source: Source, kind: str) -> None:
    source.kind = check_kind(kind)
    source.kind_guessed = True
    session.flush()


def source_json(session: Session, src: Source) -> dict:
    entries = session.scalar(select(func.count(Entry.id)).where(Entry.source_id == src.id, Entry.gone.is_(False)))
    snapshots = session.scalar(select(func.count(Snapshot.id)).where(Snapshot.source_id == src.id))
    return {
        "id": src.id,
        "name": src.name,
        "url": src.url,
        "kind": src.kind,
        "kind_guessed": src.kind_guessed,
        "browser": bool(src.browser),
        "key_columns": list(src.key_columns or []),
        "created_at": src.created_at.isoformat() if src.created_at else None,
        "removed": src.removed_at is not None,
        "last_crawl_at": src.last_crawl_at.isoformat() if src.last_crawl_at else None,
        "last_status": src.last_status,
        "last_error": src.last_error,
        "last_warnings": src.last_warnings or [],
        "entries": entries or 0,
        "snapshots": snapshots or 0,
        "schedule": schedule_json(src),
    }


# -- schedules (issue 17; set and run by app.watch.schedule) ------------------------------------------
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def format_every(seconds: int | None) -> str | None:
    if not seconds:
        return None
    out, rest = [], seconds
    for unit in ("w", "d", "h", "m", "s"):
        n, rest = divmod(rest, UNITS[unit])
        if n:
            out.append(f"{n}{unit}")
    return "".join(out)


def _aware(when: datetime | None) -> datetime | None:
    if when is not None and when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc)
    return when


def schedule_json(src: Source) -> dict:
    return {"every": format_every(src.every_seconds), "every_seconds": src.every_seconds,
            "next_crawl_at": _aware(src.next_crawl_at).isoformat() if src.next_crawl_at else None,
            "failures": src.failures or 0, "vanished": src.vanished_at is not None}
