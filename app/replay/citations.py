"""Citations: what ``/c/{id}`` shows (HTML and JSON from the same call), quote citations matched
and highlighted by our own server, and the snapshots JSON API.

``quote_url(settings, citation_id, quote, prefix=None, suffix=None, pos=None)`` is the one way other
code builds a quote citation link; ``selector_url(settings, citation_id, selector)`` builds it from a
parser's stored selector. Stored rows hold host-free references (``/c/ID?q=...``, :func:`quote_ref`);
:func:`absolute` turns one into a URL when it is served, from :func:`public_base`: ``CAVEAT_BASE_URL``
when it is set, else the origin of the request being answered (:class:`RequestOrigin` records it).
"""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, FixityError, NotFound, Withheld
from app.models import Entry, EntryVersion, Snapshot, Source
from app.storage.snapshots import StoredResponse, find_by_citation, load_record
from archive import memento, quoteview, textquote
from archive.citeid import normalize_citation_id
from app.replay.links import (  # noqa: F401  (re-exported: citations.<name> is used across the app)
    RequestOrigin, _sane_host, public_base, request_base, env_settings, absolute, citation_path, quote_ref, _canonical_id, _quote_ref, _pct_run, _pct, selector_ref, quote_url, selector_url, _REQUEST_ORIGIN, _STORED_HOST, _ENV_SETTINGS, MAX_LIST, _UNSAFE, _PCT_RUNS,
)
from app.replay import withdrawal
from app.replay.wayback import captures, raw_url
from app.storage import tlog


def snapshot_json(settings: Settings, snap: Snapshot, stored: StoredResponse | None = None) -> dict:
    """The public face of one snapshot; ``id`` is its citation id. With ``stored`` (a fresh read), fixity is
    that read's verdict; otherwise the one `caveat verify` recorded last."""
    base = public_base(settings)
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
        "raw_url": _raw_url(settings, snap),
    }


def _raw_url(settings: Settings, snap: Snapshot) -> str:
    return raw_url(settings, snap.timestamp, snap.url)


def raw_href(settings: Settings, snap: Snapshot) -> str:
    """Link to the archived bytes on our own pages: same-origin path, or the replay origin's URL."""
    return _raw_url(settings, snap) if settings.replay_origin else f"/web/{snap.timestamp}id_/{snap.url}"


def list_snapshots(session: Session, settings: Settings, url: str | None, *, limit: int = 100) -> dict:
    if not url:
        raise BadRequest("give the archived page's address: /api/snapshots?url=https://example.org/page")
    rows = captures(session, url, limit=min(max(limit, 1), MAX_LIST))
    return {"url": url, "count": len(rows), "snapshots": [snapshot_json(settings, s) for s in rows]}


def lookup_any(session: Session, citation_id: str) -> Snapshot:
    """The snapshot ``citation_id`` names, withdrawn and restricted ones included: only for code that then
    answers with the tombstone itself (``/c/{id}``) or changes the access."""
    return find_by_citation(session, citation_id)


def lookup(session: Session, settings: Settings, citation_id: str) -> Snapshot:
    """The snapshot ``citation_id`` names, if it may be shown. A withdrawn or restricted one raises
    :class:`Withheld` with its tombstone (410 / 403), so every route that resolves a capture, a quote or
    a citation answers as ``/c/{id}`` does, before anything is read from it: no bytes, no text, no
    found/not-found difference for a quote (that would be an oracle on the withheld text)."""
    snap = find_by_citation(session, citation_id)
    refuse_withheld(session, settings, snap)
    return snap


def refuse_withheld(session: Session, settings: Settings, snap: Snapshot) -> None:
    """Raise :class:`Withheld` (the tombstone) when ``snap`` is withdrawn or restricted, or is a revisit of
    a record that is (its bytes are that record's)."""
    by = withdrawal.withholder(session, snap)
    if by is not None:
        raise Withheld(tombstone(session, settings, snap, by))


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
    snap = lookup(session, settings, citation_id)
    stored = check_fixity(session, settings, snap)
    others = [snapshot_json(settings, s) for s in captures(session, snap.url, limit=50) if s.id != snap.id]
    data = snapshot_json(settings, snap, stored)
    data.update({
        "ok": stored.fixity == "ok",
        "fixity_message": _fixity_message(snap, stored),
        "size": len(stored.raw_body) if stored.fixity == "ok" else snap.payload_length,
        "timemap_url": f"{public_base(settings)}/timemap/link/{snap.url}",
        "entries": _entries_of(session, snap),
        "other_captures": others,
        "cite": cite_box(settings, snap),
        "raw_href": raw_href(settings, snap),
        "log": _log(settings, snap),
        "verified": snap.verified is not False,
        "provenance": (f"this {snap.record_type} record is in {snap.warc_file}, but in no entry of "
                       "Caveat's tamper-evident log, so it is not a capture Caveat made (`caveat reindex` found "
                       "it; `caveat verify --log` lists it)") if snap.verified is False else
                      ("imported with `caveat import-warc` (logged when imported, captured by another tool)"
                       if snap.origin == "import" else "captured by Caveat"),
    })
    return data


def _fixity_message(snap: Snapshot, stored: StoredResponse) -> str:
    if stored.fixity == "ok":
        return f"Fixity verified just now: the stored bytes still match sha256 {snap.sha256}."
    return (f"FIXITY FAILED: the stored bytes of this record no longer match the digests recorded when it was "
            f"archived ({stored.fixity_detail}). Do not rely on this copy; restore {snap.warc_file} from a backup.")


def document_source(stored: StoredResponse) -> tuple[str, str]:
    """(decoded body, kind) of a stored response: decoded by its charset (the text the parsers'
    selector offsets refer to); kind ``html`` or ``plain``."""
    ctype = stored.content_type or stored.mime
    source = textquote.decode(stored.body, textquote.charset_of(ctype))
    kind = textquote.text_kind(ctype, stored.body)
    return source, "html" if kind == "html" else "plain"


def parse_pos(pos: str | int | None) -> int | None:
    if pos is None or pos == "":
        return None
    try:
        value = int(pos)
    except (TypeError, ValueError):
        value = -1
    if value < 0 or value > 2**62:
        raise BadRequest(f"pos={pos!r} is not a character offset: give the quote's start in the decoded page "
                         "source as a whole number, e.g. pos=1234 (or leave it out)")
    return value


def _searched(q: str, prefix: str | None, suffix: str | None, pos: int | None) -> str:
    parts = [f"the quote {_short(q)!r}"]
    if prefix:
        parts.append(f"prefix {_short(prefix, 40)!r}")
    if suffix:
        parts.append(f"suffix {_short(suffix, 40)!r}")
    if pos is not None:
        parts.append(f"starting at source offset {pos}")
    return ", ".join(parts)


def find_in_snapshot(session: Session, settings: Settings, snap: Snapshot, q: str, prefix: str | None = None,
                     suffix: str | None = None, pos: int | None = None
                     ) -> tuple[list[quoteview.Occurrence], int, quoteview.Document]:
    """(occurrences the selector keeps, occurrences of the quote alone, the document). NotFound saying
    what was searched when the selector keeps none."""
    if not q or not q.strip():
        raise BadRequest("give the text to cite: ?q=<exact text> (optionally prefix=, suffix= and pos=)")
    refuse_withheld(session, settings, snap)   # before the search: no oracle on withheld text
    stored = check_fixity(session, settings, snap)
    if stored.fixity != "ok":
        raise FixityError(f"Snapshot {snap.citation_id} failed its fixity check, so no quote in it can be "
                          f"certified: {stored.fixity_detail}. Restore {snap.warc_file} from a backup.",
                          citation_id=snap.citation_id, fixity="failed")
    source, kind = document_source(stored)
    doc, kept, total = quoteview.locate(source, kind, q, prefix, suffix, pos)
    if not kept:
        alone = ("the quote alone occurs nowhere in it" if not total else
                 f"the quote alone occurs {total} time{'s' if total != 1 else ''}, but none with that selector")
        raise NotFound(f"The quote {_short(q)!r} is not in snapshot {snap.citation_id} as selected: searched for "
                       f"{_searched(q, prefix, suffix, pos)} in the visible text and the source of {snap.url} "
                       f"archived {memento.http_date(snap.timestamp)}; {alone}. Check the text against "
                       f"{public_base(settings)}/web/{snap.timestamp}id_/{snap.url}; whitespace differences are "
                       "ignored, other differences are not.",
                       citation_id=snap.citation_id, searched={"q": q, "prefix": prefix, "suffix": suffix, "pos": pos},
                       occurrences=total)
    return kept, total, doc


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _pin(doc, occ: quoteview.Occurrence) -> tuple[str, str, int | None]:
    """(prefix, suffix, pos) naming exactly this occurrence."""
    prefix, suffix = doc.context(occ)
    return prefix, suffix, occ.source_start


def _match_json(settings: Settings, snap: Snapshot, doc, q: str, n: int, occ: quoteview.Occurrence) -> dict:
    prefix, suffix, pos = _pin(doc, occ)
    return {"n": n, "matched": doc.matched(occ), "matched_in": occ.where, "start": occ.start, "end": occ.end,
            "source_start": occ.source_start, "source_end": occ.source_end, "cell": doc.cell(n),
            "prefix": prefix, "suffix": suffix,
            "quote_url": quote_url(settings, snap.citation_id, q, prefix or None, suffix or None, pos)}


def quote_view(session: Session, settings: Settings, citation_id: str, q: str, prefix: str | None = None,
               suffix: str | None = None, pos: str | int | None = None, *, whole: bool = False) -> dict:
    """The highlighted view (the page in its own structure, HTML) and its JSON twin. When the quote
    occurs more than once and nothing selects one, the first ``quoteview.MAX_SHOWN`` occurrences are
    shown and the rest counted (``more``; ``partial`` when counting stopped at the time budget)."""
    snap = lookup(session, settings, citation_id)
    where = parse_pos(pos)
    kept, total, doc = find_in_snapshot(session, settings, snap, q, prefix, suffix, where)
    selected = bool(prefix or suffix or where is not None)
    ambiguous = len(kept) > 1 and not selected
    shown = kept[:quoteview.MAX_SHOWN] if ambiguous else kept[:1]
    first = shown[0]
    more = len(kept) - len(shown)
    # one occurrence: the part of the page around it; more than can be shown: the page up to the last shown
    html = doc.render(shown, excerpt=not ambiguous and not whole, head=bool(more) and not whole)
    before, after = doc.around(first)
    data = snapshot_json(settings, snap)
    data.update({
        "ok": True, "quote": {"exact": q, "prefix": prefix, "suffix": suffix, "pos": where},
        "matched": doc.matched(first), "matched_in": first.where, "start": first.start, "end": first.end,
        "source_start": first.source_start, "source_end": first.source_end, "cell": doc.cell(1),
        "occurrences": total, "selected": len(kept), "ambiguous": ambiguous,
        "shown": len(shown), "more": more, "partial": bool(getattr(doc, "partial", False)),
        "cut": bool(getattr(doc, "cut", False)),
        "excerpt": bool(getattr(doc, "excerpted", False)),
        "matches": [_match_json(settings, snap, doc, q, n, o) for n, o in enumerate(shown, 1)],
        "quote_url": quote_url(settings, snap.citation_id, q, prefix, suffix, where),
        "before": before, "after": after, "html": html,
    })
    data["raw_href"] = raw_href(settings, snap)
    data["cite"] = cite_box(settings, snap, q, data["matches"][0]["quote_url"])
    return data


def make_quote_citation(session: Session, settings: Settings, citation_id: str, q: str,
                        prefix: str | None = None, suffix: str | None = None, pos: int | None = None) -> dict:
    """Check that ``q`` is in the snapshot and return its citation URL, pinned to one occurrence: the
    URL always carries ``prefix``, ``suffix`` (the 32 characters around it, unless given) and ``pos``
    (where it starts in the decoded source) so it can never be read as another occurrence."""
    snap = lookup(session, settings, citation_id)
    kept, total, doc = find_in_snapshot(session, settings, snap, q, prefix, suffix, parse_pos(pos))
    occ = kept[0]
    near_prefix, near_suffix, where = _pin(doc, occ)
    prefix = prefix or near_prefix or None
    suffix = suffix or near_suffix or None
    return {
        "ok": True, "id": snap.citation_id, "url": quote_url(settings, snap.citation_id, q, prefix, suffix, where),
        "citation_url": f"{public_base(settings)}{citation_path(snap.citation_id)}",
        "quote": {"exact": q, "prefix": prefix, "suffix": suffix, "pos": where}, "matched_in": occ.where,
        "occurrences": total, "snapshot": snapshot_json(settings, snap),
    }


def snapshot_by_id(session: Session, settings: Settings, citation_id: str) -> dict:
    snap = lookup(session, settings, citation_id)
    stored = check_fixity(session, settings, snap)  # recomputed on every read, as /c/{id} does
    return snapshot_json(settings, snap, stored)


def get_canonical(citation_id: str) -> str | None:
    return normalize_citation_id(citation_id)


def snapshot_for_url(session: Session, url: str) -> Snapshot:
    rows = captures(session, url, limit=1)
    if not rows:
        raise NotFound(f"{url} has not been archived. Capture it first: caveat capture '{url}'")
    return rows[0]


_BIB = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "%": r"\%", "&": r"\&", "$": r"\$", "#": r"\#",
        "_": r"\_", "^": r"\^{}", "~": r"\~{}"}


def _bib(text: str) -> str:
    return "".join(_BIB.get(ch, ch) for ch in " ".join(str(text).split()))


def _bib_url(url: str) -> str:
    return url.replace("\\", "%5C").replace("{", "%7B").replace("}", "%7D").replace(" ", "%20")


def cite_box(settings: Settings, snap: Snapshot, quote: str | None = None, link: str | None = None) -> dict:
    """The "cite this" box: the short link, the archived URL and time, and the quote, in plain text and
    BibTeX. ``link`` is the quote's citation URL (the short link of the snapshot without a quote)."""
    short = f"{public_base(settings)}{citation_path(snap.citation_id)}"
    link = link or short
    when = memento.http_date(snap.timestamp)
    ts = snap.timestamp
    iso = f"{ts[0:4]}-{ts[4:6]}-{ts[6:8]}"
    lines = []
    if quote:
        lines.append(f"\u201c{' '.join(quote.split())}\u201d")
    lines.append(f"{snap.url}, archived {when} by Caveat (citation {snap.citation_id}, sha256:{snap.sha256}).")
    lines.append(link if link == short else f"{link} (short link: {short})")
    key = "caveat-" + snap.citation_id.replace("-", "").lower() + ("-q" if quote else "")
    fields = [("title", f"{{Archived copy of {_bib(snap.url)}}}"),
              ("howpublished", f"\\url{{{_bib_url(link)}}}"),
              ("url", _bib_url(short)),
              ("note", "Archived " + _bib(when) + " by Caveat from \\url{" + _bib_url(snap.url) + "}, citation "
               + snap.citation_id + ", sha256:" + str(snap.sha256)
               + (", quoting ``" + _bib(quote) + "''" if quote else "")),
              ("year", ts[0:4]), ("urldate", iso)]
    bibtex = "@misc{" + key + ",\n" + ",\n".join(f"  {k} = {{{v}}}" for k, v in fields) + "\n}"
    return {"short_link": short, "link": link, "archived_url": snap.url, "archived_at": when,
            "timestamp": snap.timestamp, "quote": quote, "plain": "\n".join(lines), "bibtex": bibtex}


def tombstone(session: Session, settings: Settings, snap: Snapshot, by: Snapshot | None = None) -> dict:
    """What a withdrawn (410) or restricted (403) citation still says. A withdrawal keeps the metadata
    and the reason on show; a restriction says only that the capture is kept and not shown. ``by``: the
    record that withholds ``snap`` when that is not ``snap`` itself (a revisit takes its original's state)."""
    by = by or snap
    if by is not snap:
        return _inherited(session, settings, snap, by)
    status = withdrawal.STATUS_OF.get(snap.access, 410)
    when = snap.access_changed_at.isoformat() if snap.access_changed_at else None
    base = public_base(settings)
    if snap.access == "restricted":
        return {"ok": False, "status": status, "id": snap.citation_id, "access": snap.access, "access_changed_at": when,
                "error": f"Citation {snap.citation_id} is restricted: the capture is kept in the archive but not "
                         "shown. Its bytes stay in the WARC files and `caveat verify` still checks them.",
                "citation_url": f"{base}{citation_path(snap.citation_id)}", "history": withdrawal.history(session, snap)}
    return {
        "ok": False, "status": status, "id": snap.citation_id, "access": snap.access, "access_changed_at": when,
        "error": f"Citation {snap.citation_id} was withdrawn on {when or 'an unknown date'}: {snap.access_reason}. "
                 "The capture is no longer shown; what it was is listed here, and its bytes stay in the WARC files "
                 "(`caveat verify` still checks them).",
        "reason": snap.access_reason, "withdrawn_by": snap.access_by,
        "url": snap.url, "timestamp": snap.timestamp, "memento_datetime": memento.http_date(snap.timestamp),
        "status_archived": snap.status, "mime": snap.mime, "sha256": snap.sha256, "record_id": snap.record_id,
        "record_type": snap.record_type, "warc_file": snap.warc_file, "offset": snap.offset,
        "citation_url": f"{base}{citation_path(snap.citation_id)}", "history": withdrawal.history(session, snap),
    }


def _inherited(session: Session, settings: Settings, snap: Snapshot, by: Snapshot) -> dict:
    """The tombstone of a revisit whose original is withheld: the original's state, the revisit's own id."""
    status = withdrawal.STATUS_OF.get(by.access, 410)
    base = public_base(settings)
    out = {"ok": False, "status": status, "id": snap.citation_id, "access": by.access,
           "access_changed_at": by.access_changed_at.isoformat() if by.access_changed_at else None,
           "citation_url": f"{base}{citation_path(snap.citation_id)}", "history": withdrawal.history(session, snap)}
    if by.access == "restricted":
        out["error"] = (f"Citation {snap.citation_id} is restricted: it is a revisit of a restricted capture, "
                        "whose bytes are kept in the archive but not shown.")
        return out
    out.update({
        "error": f"Citation {snap.citation_id} is withdrawn: it is a revisit of {by.citation_id}, which was withdrawn "
                 f"({by.access_reason}). Its bytes stay in the WARC files.",
        "reason": by.access_reason, "withdrawn_by": by.access_by, "revisit_of": by.citation_id,
        "url": snap.url, "timestamp": snap.timestamp, "memento_datetime": memento.http_date(snap.timestamp),
        "status_archived": snap.status, "mime": snap.mime, "sha256": snap.sha256, "record_id": snap.record_id,
        "record_type": snap.record_type, "warc_file": snap.warc_file, "offset": snap.offset})
    return out


def _log(settings: Settings, snap: Snapshot) -> dict | None:
    """The record's inclusion proof in the tamper-evident log (None when it is not logged)."""
    proof = tlog.inclusion(settings, snap.record_id)
    if proof is not None:
        base = public_base(settings)
        proof["tree_head_url"] = f"{base}/log/sth/{proof['tree_size']}.json"
        proof["latest_tree_head_url"] = f"{base}/log/sth.json"
    return proof
