"""Citations: what ``/c/{id}`` shows (HTML and JSON from the same call), quote citations matched
and highlighted by our own server, and the snapshots JSON API.

``quote_url(settings, citation_id, quote, prefix=None, suffix=None)`` is the one way other code
builds a quote citation link.
"""

from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import quote as urlquote, urlencode

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, FixityError, NotFound
from app.models import Entry, EntryVersion, Snapshot, Source
from app.services.snapshots import StoredResponse, find_by_citation, load_record
from archive import memento, textquote
from archive.citeid import normalize_citation_id

MAX_LIST = 500


def citation_path(citation_id: str) -> str:
    return f"/c/{citation_id}"


def quote_url(settings: Settings, citation_id: str, quote: str, prefix: str | None = None,
              suffix: str | None = None) -> str:
    """Absolute URL citing ``quote`` inside snapshot ``citation_id`` (``/c/ABCD-EFGH?q=...``)."""
    cid = normalize_citation_id(citation_id) or citation_id
    params = [("q", quote)]
    if prefix:
        params.append(("prefix", prefix))
    if suffix:
        params.append(("suffix", suffix))
    return f"{settings.base_url}{citation_path(cid)}?{urlencode(params, quote_via=urlquote)}"


def snapshot_json(settings: Settings, snap: Snapshot, stored: StoredResponse | None = None) -> dict:
    """The public face of one snapshot; ``id`` is its citation id. With ``stored`` (a fresh read), fixity is
    that read's verdict; otherwise the one `caveat verify` recorded last."""
    base = settings.base_url
    if stored is not None:
        fixity, detail, checked = stored.fixity, stored.fixity_detail, datetime.now(timezone.utc)
    else:
        fixity, detail, checked = snap.fixity, snap.fixity_detail, snap.fixity_checked_at
    return {
        "id": snap.citation_id, "url": snap.url, "timestamp": snap.timestamp, "status": snap.status,
        "mime": snap.mime, "sha256": snap.sha256, "fixity": fixity,
        "fixity_checked_at": checked.isoformat() if checked else None,
        "fixity_detail": detail, "memento_datetime": memento.http_date(snap.timestamp),
        "record_type": snap.record_type, "record_id": snap.record_id, "payload_digest": snap.payload_digest,
        "payload_length": snap.payload_length, "warc_file": snap.warc_file, "offset": snap.offset,
        "length": snap.length, "origin": snap.origin,
        "citation_url": f"{base}{citation_path(snap.citation_id)}",
        "replay_url": f"{base}/web/{snap.timestamp}/{snap.url}",
        "raw_url": f"{base}/web/{snap.timestamp}id_/{snap.url}",
    }


def list_snapshots(session: Session, settings: Settings, url: str | None, *, limit: int = 100) -> dict:
    if not url:
        raise BadRequest("give the archived page's address: /api/snapshots?url=https://example.org/page")
    from app.services.replay import captures

    rows = captures(session, url, limit=min(max(limit, 1), MAX_LIST))
    return {"url": url, "count": len(rows), "snapshots": [snapshot_json(settings, s) for s in rows]}


def lookup(session: Session, citation_id: str) -> Snapshot:
    return find_by_citation(session, citation_id)


def check_fixity(session: Session, settings: Settings, snap: Snapshot) -> StoredResponse:
    """Read the record and recompute its digests (every call). Reads never write: the verdict is
    returned, not stored (only `caveat verify` records verdicts), so a citation answers while another
    process holds the database's write lock."""
    return load_record(settings, snap, session=session)


def _entries_of(session: Session, snap: Snapshot) -> list[dict]:
    via_version = select(EntryVersion.entry_id).where(EntryVersion.snapshot_id == snap.id)
    q = (select(Entry, Source.name).outerjoin(Source, Source.id == Entry.source_id)
         .where(or_(Entry.last_snapshot_id == snap.id, Entry.first_snapshot_id == snap.id, Entry.id.in_(via_version)))
         .order_by(Entry.id).limit(MAX_LIST))
    return [{"id": e.id, "source": name, "model": e.model, "hardware": e.hardware, "engine": e.engine,
             "headline_tps": e.headline_tps, "url": f"/entries/{e.id}", "api_url": f"/api/entries/{e.id}"}
            for e, name in session.execute(q)]


def citation(session: Session, settings: Settings, citation_id: str) -> dict:
    """Everything ``/c/{id}`` shows: the snapshot, fixity as just checked, entries, other captures."""
    snap = lookup(session, citation_id)
    stored = check_fixity(session, settings, snap)
    from app.services.replay import captures

    others = [snapshot_json(settings, s) for s in captures(session, snap.url, limit=50) if s.id != snap.id]
    data = snapshot_json(settings, snap, stored)
    data.update({
        "ok": stored.fixity == "ok",
        "fixity_message": _fixity_message(snap, stored),
        "size": len(stored.raw_body) if stored.fixity == "ok" else snap.payload_length,
        "timemap_url": f"{settings.base_url}/timemap/link/{snap.url}",
        "entries": _entries_of(session, snap),
        "other_captures": others,
    })
    return data


def _fixity_message(snap: Snapshot, stored: StoredResponse) -> str:
    if stored.fixity == "ok":
        return f"Fixity verified just now: the stored bytes still match sha256 {snap.sha256}."
    return (f"FIXITY FAILED: the stored bytes of this record no longer match the digests recorded when it was "
            f"archived ({stored.fixity_detail}). Do not rely on this copy; restore {snap.warc_file} from a backup.")


def _texts(stored: StoredResponse) -> tuple[str, str]:
    """(page text, raw decoded source) of a stored response."""
    ctype = stored.content_type or stored.mime
    charset = textquote.charset_of(ctype)
    source = textquote.decode(stored.body, charset)
    return textquote.page_text(stored.body, ctype, charset=charset), source


def find_in_snapshot(session: Session, settings: Settings, snap: Snapshot, q: str, prefix: str | None = None,
                     suffix: str | None = None) -> tuple[textquote.QuoteMatch, StoredResponse]:
    if not q or not q.strip():
        raise BadRequest("give the text to cite: ?q=<exact text> (optionally prefix= and suffix=)")
    stored = check_fixity(session, settings, snap)
    if stored.fixity != "ok":
        raise FixityError(f"Snapshot {snap.citation_id} failed its fixity check, so no quote in it can be "
                          f"certified: {stored.fixity_detail}. Restore {snap.warc_file} from a backup.",
                          citation_id=snap.citation_id, fixity="failed")
    text, source = _texts(stored)
    match = textquote.find_quote(text, q, prefix, suffix, source=source)
    if match is None:
        extra = " with that prefix/suffix" if (prefix or suffix) else ""
        raise NotFound(f"The quote {_short(q)!r} is not in snapshot {snap.citation_id}{extra} "
                       f"({snap.url} archived {memento.http_date(snap.timestamp)}). Check the text against "
                       f"{settings.base_url}/web/{snap.timestamp}id_/{snap.url}; whitespace differences are ignored, "
                       "other differences are not.", citation_id=snap.citation_id)
    return match, stored


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[:n] + "..."


def quote_view(session: Session, settings: Settings, citation_id: str, q: str, prefix: str | None = None,
               suffix: str | None = None) -> dict:
    """The highlighted text view (HTML) and its JSON twin."""
    snap = lookup(session, citation_id)
    match, _ = find_in_snapshot(session, settings, snap, q, prefix, suffix)
    before, hit, after = match.highlight()
    data = snapshot_json(settings, snap)
    data.update({
        "ok": True, "quote": {"exact": q, "prefix": prefix, "suffix": suffix},
        "matched": hit, "matched_in": match.where, "start": match.start, "end": match.end,
        "quote_url": quote_url(settings, snap.citation_id, q, prefix, suffix),
        "before": before, "after": after,
    })
    return data


def make_quote_citation(session: Session, settings: Settings, citation_id: str, q: str,
                        prefix: str | None = None, suffix: str | None = None) -> dict:
    """Check that ``q`` is in the snapshot and return its citation URL. When the quote occurs more than
    once and no prefix/suffix was given, the surrounding text is added so the link names one place."""
    snap = lookup(session, citation_id)
    match, _ = find_in_snapshot(session, settings, snap, q, prefix, suffix)
    if not prefix and not suffix and _occurs_twice(match, q):
        prefix, suffix = textquote.context_of(match.text, match.start, match.end)
        prefix, suffix = prefix or None, suffix or None
    return {
        "ok": True, "id": snap.citation_id, "url": quote_url(settings, snap.citation_id, q, prefix, suffix),
        "citation_url": f"{settings.base_url}{citation_path(snap.citation_id)}",
        "quote": {"exact": q, "prefix": prefix, "suffix": suffix}, "matched_in": match.where,
        "snapshot": snapshot_json(settings, snap),
    }


def _occurs_twice(match: textquote.QuoteMatch, q: str) -> bool:
    later = textquote.find_span(match.text[match.end:], q)
    earlier = textquote.find_span(match.text[:match.start], q)
    return bool(later or earlier)


def snapshot_by_id(session: Session, settings: Settings, citation_id: str) -> dict:
    snap = lookup(session, citation_id)
    stored = check_fixity(session, settings, snap)  # recomputed on every read, as /c/{id} does
    return snapshot_json(settings, snap, stored)


def get_canonical(citation_id: str) -> str | None:
    return normalize_citation_id(citation_id)


def snapshot_for_url(session: Session, url: str) -> Snapshot:
    from app.services.replay import captures

    rows = captures(session, url, limit=1)
    if not rows:
        raise NotFound(f"{url} has not been archived. Capture it first: caveat capture '{url}'")
    return rows[0]
