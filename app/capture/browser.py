"""Browser captures: ``capture_browser_urls(db, urls)`` loads each page in Chromium and stores it whole.

The page is loaded first (``archive.browser``: every request through the guarded fetcher), holding no
lock. Then, under the store's writer lock, everything the page made is written as one batch, the way
``app.capture.http`` writes: a ``response`` and ``request`` record for every fetched request (a
``revisit`` when the payload is already stored), then three ``resource`` records named as Browsertrix
and ArchiveWeb.page name theirs (``urn:<kind>:<page URL>``), all with the page's ``WARC-Page-ID``:

- ``urn:dom:<url>``: the rendered DOM after load (``text/html; charset=utf-8``), the snapshot that
  parsing and citations use;
- ``urn:fullPage:<url>``: a full-page PNG screenshot;
- ``urn:pageinfo:<url>``: the page-info JSON (every request, its status and type, what was refused).

fsync, then one commit of every row. A page that fails (the main document refused, a crashed
renderer, no DOM) writes nothing; a page stopped by its time or request limit keeps what it loaded.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Callable

from app.db import Database
from app.models import Snapshot
from app.capture.http import _Planner, limits_for, spool_dir
from app.storage.snapshots import limits_of
from app.storage.tlog import append_written, sign_latest
from app.storage.warcfiles import WarcStore
from archive import digests
from archive.browser import BrowserOptions, PageCapture, capture_pages
from archive.citeid import citation_id_for_record
from archive.prepare import PREPARE_MAX, FetchedHop
from archive.surt import InvalidURL, surt
from archive.timestamps import ts17
from archive.urls import check_url
from archive.warcwriter import build_record, build_request, build_response
from sqlalchemy import select
from app.models import Source

log = logging.getLogger("caveat.capture")
DOM_TYPE = "text/html; charset=utf-8"


@dataclass
class BrowserResult:
    url: str
    final_url: str | None = None
    status: int | None = None  # of the main document
    size: int | None = None  # bytes of the rendered DOM
    snapshot: Snapshot | None = None  # the urn:dom: record: what is parsed and cited
    document: Snapshot | None = None  # the main document's response as fetched
    screenshot: Snapshot | None = None
    pageinfo: Snapshot | None = None
    responses: list[Snapshot] = field(default_factory=list)  # every response/revisit of the page
    requests: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (url, reason)
    warnings: list[str] = field(default_factory=list)
    loaded: str | None = None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def citation_id(self) -> str | None:
        return self.snapshot.citation_id if self.snapshot is not None else None


def options_for(settings) -> BrowserOptions:
    return BrowserOptions(executable=settings.browser_executable, page_time_limit=settings.browser_page_time_limit,
                          idle_time=settings.browser_idle_time, settle=settings.browser_settle,
                          scroll=settings.browser_scroll, scroll_steps=settings.browser_scroll_steps,
                          max_requests=settings.browser_max_requests,
                          max_page_bytes=settings.browser_max_page_bytes, decode=limits_of(settings))


def dom_url(url: str) -> str:
    return f"urn:dom:{url}"


def capture_browser_urls(db: Database, urls: list[str], *, source_id: int | None = None,
                         progress: Callable[[BrowserResult], None] | None = None,
                         notice: Callable[[str], None] | None = None, source_info: bytes | None = None,
                         scroll: bool | None = None, marker: str | None = None,
                         sources_by_url: dict[str, int] | None = None) -> list[BrowserResult]:
    """Capture each URL with the browser; one result per URL, in order. ``progress(result)`` is called as
    each page's rows commit (or it fails). ``scroll`` overrides ``CAVEAT_BROWSER_SCROLL``.
    ``sources_by_url``: responses whose URL another source names are linked to that source instead of
    ``source_id`` (so the JSON behind a page can be parsed as that source's own entries)."""
    settings = db.settings
    results: list[BrowserResult | None] = [None] * len(urls)
    todo = []
    for i, u in enumerate(urls):
        try:
            check_url(u)
            todo.append(i)
        except InvalidURL as exc:
            results[i] = BrowserResult(url=u, error=str(exc))
            _tell(progress, results[i])
    if not todo:
        return [r for r in results if r is not None]
    opts = options_for(settings)
    if scroll is not None:
        opts.scroll = scroll
    limits = limits_for(settings)
    order = iter(todo)

    def each(cap: PageCapture) -> None:
        i = next(order)
        try:
            results[i] = _store(db, cap, source_id, notice, source_info, sources_by_url or {})
        except Exception as exc:  # noqa: BLE001 - one page's failure must not stop the others
            log.exception("storing the browser capture of %s failed", cap.url)
            results[i] = BrowserResult(url=cap.url, error=f"storing failed: {type(exc).__name__}: {exc}; "
                                       "nothing was stored for this page")
        finally:
            cap.close()
        _tell(progress, results[i])

    capture_pages([urls[i] for i in todo], opts, limits, marker=marker, each=each)
    sign_latest(settings)
    return [r for r in results if r is not None]


def _tell(progress, result: BrowserResult) -> None:
    if progress is not None:
        progress(result)


def _hop_records(cap: PageCapture, level: int, spool) -> list[FetchedHop]:
    """Response and request records for every request the page fetched (built, not yet written)."""
    out: list[FetchedHop] = []
    try:
        for x in cap.fetched:
            hop = x.hop
            ts = ts17(hop.started_at)
            body = hop.payload() if hop.body_length <= PREPARE_MAX else hop.body
            resp = build_response(hop.url, ts, hop.stored_head(), body, hop.body_length, hop.sha256, ip=hop.ip,
                                  level=level, spool_dir=spool, block_sha256=hop.block_sha256)
            req = build_request(hop.url, ts, hop.request_head, concurrent_to=resp.record_id, ip=hop.ip, level=level)
            out.append(FetchedHop(url=hop.url, ts=ts, started_at=hop.started_at, status=hop.status, mime=hop.mime,
                                  location=hop.location, ip=hop.ip, body_length=hop.body_length, sha256=hop.sha256,
                                  surt=surt(hop.url), citation_id=citation_id_for_record(resp.record_id),
                                  response=resp, request=req))
    except BaseException:
        for h in out:
            h.discard()
        raise
    return out


def _resource(kind: str, cap: PageCapture, content_type: str, data: bytes, ts: str, level: int):
    sha = hashlib.sha256(data).digest()
    rec = build_record("resource", [("WARC-Target-URI", f"urn:{kind}:{cap.url}"), ("WARC-Page-ID", cap.page_id)],
                       content_type=content_type, ts=ts, head=data, payload_digest=digests.label(sha), level=level,
                       block_sha256=sha)
    return rec, sha


def _store(db: Database, cap: PageCapture, source_id: int | None, notice, source_info: bytes | None,
           sources_by_url: dict[str, int] | None = None) -> BrowserResult:
    result = BrowserResult(url=cap.url, final_url=cap.final_url, requests=len(cap.exchanges),
                           refused=[(x.url, x.refused) for x in cap.refused], warnings=list(cap.warnings),
                           loaded=cap.loaded, seconds=cap.seconds)
    doc = cap.document
    result.status = doc.status if doc is not None else None
    if cap.error is None and (doc is None or cap.dom is None):
        cap.error = "the page loaded no document; nothing was stored"
    if cap.error is not None:
        result.error = cap.error
        return result
    settings = db.settings
    with WarcStore(db, notice=notice) as store:
        level = settings.warc_gzip_level
        spool = spool_dir(settings)
        spool.mkdir(parents=True, exist_ok=True)
        hops = _hop_records(cap, level, spool)
        store.rotate_if_full()
        writer = store.writer
        start = writer.size
        try:
            with db.Session() as s:
                planner = _Planner(s, hops, level)
                named = sources_by_url or {}
                rows = [planner.write_hop(writer, hop, named.get(hop.url, source_id)) for hop in hops]
                doc_row = next((r for r, h in zip(rows, hops) if h.url == doc.url and h.status == doc.status), rows[0])
                page_ts = ts17(cap.started_at)
                extra = []
                for kind, ctype, data in (("dom", DOM_TYPE, cap.dom), ("fullPage", "image/png", cap.screenshot),
                                          ("pageinfo", "application/json", cap.pageinfo())):
                    if data is None:
                        continue
                    key = f"urn:{kind}:{cap.url}"
                    ts = planner.unique_ts(key, page_ts)
                    built, sha = _resource(kind, cap, ctype, data, ts, level)
                    w = writer.append(built)
                    extra.append((kind, dict(
                        url=key, surt=key, timestamp=ts, captured_at=cap.started_at.replace(
                            microsecond=cap.started_at.microsecond // 1000 * 1000),
                        status=None, mime=ctype.split(";")[0], record_type="resource", warc_file=writer.path.name,
                        offset=w.offset, length=w.length, record_id=w.record_id, request_offset=None,
                        request_length=None, payload_digest=w.payload_digest, block_digest=w.block_digest,
                        sha256=sha.hex(), payload_length=len(data), refers_to_id=None, refers_to_record_id=None,
                        redirect_to=None, origin="capture", source_id=source_id, fixity="unchecked",
                        citation_id=citation_id_for_record(w.record_id), access="public")))
                # the source, beside the document and beside the DOM, so the WARC files alone (reindex) can
                # tell which source both belong to
                for row in ([doc_row] + [r for k, r in extra if k == "dom"]) if source_info else []:
                    writer.append(build_record("metadata", [("WARC-Target-URI", row["url"]),
                                                            ("WARC-Concurrent-To", row["record_id"])],
                                               content_type="application/warc-fields", ts=row["timestamp"],
                                               head=source_info, level=level))
                writer.sync()
                all_rows = rows + [r for _, r in extra]
                planner.assign_citation_ids(all_rows)
                saved = planner.add_rows(all_rows)
                s.commit()
                by_kind = dict(zip([k for k, _ in extra], saved[len(rows):]))
                result.responses = saved[:len(rows)]
                result.document = saved[rows.index(doc_row)]
                result.snapshot = by_kind.get("dom")
                result.screenshot = by_kind.get("fullPage")
                result.pageinfo = by_kind.get("pageinfo")
        except BaseException:
            writer.truncate(start)
            writer.sync()
            for h in hops:
                h.discard()
            raise
        append_written(settings, writer.path.name, writer.take_appended())
        store.update_cdxj(list(saved))
    result.size = len(cap.dom)
    return result


def page_records(session, dom: Snapshot) -> dict[str, Snapshot | None]:
    """The screenshot and page-info records stored with a ``urn:dom:`` snapshot (same page, same capture)."""
    page = dom.url.split(":", 2)[2] if dom.url.startswith("urn:dom:") else dom.url
    out: dict[str, Snapshot | None] = {"dom": dom}
    for kind in ("fullPage", "pageinfo"):
        out[kind] = session.scalars(select(Snapshot).where(
            Snapshot.url == f"urn:{kind}:{page}", Snapshot.warc_file == dom.warc_file,
            Snapshot.offset > dom.offset).order_by(Snapshot.offset).limit(1)).first()
    return out


def rendered_views(session, snap: Snapshot) -> dict[str, Snapshot] | None:
    """For a page's document response captured with the browser (or its ``urn:dom:`` record): the DOM
    and screenshot records of that same capture, for the framed view's links; None for other snapshots."""
    if snap.url.startswith("urn:"):
        return None
    dom = session.scalars(select(Snapshot).where(
        Snapshot.url == dom_url(snap.url), Snapshot.warc_file == snap.warc_file, Snapshot.offset > snap.offset)
        .order_by(Snapshot.offset).limit(1)).first()
    if dom is None or dom.source_id != snap.source_id:
        return None
    between = session.scalars(select(Snapshot.id).where(  # no other capture of the page in between
        Snapshot.url == snap.url, Snapshot.warc_file == snap.warc_file, Snapshot.offset > snap.offset,
        Snapshot.offset < dom.offset).limit(1)).first()
    if between is not None:
        return None
    recs = page_records(session, dom)
    return {k: v for k, v in recs.items() if v is not None}


def named_sources(session, source) -> dict[str, int]:
    """The URLs other active, plain sources name (``{url: source id}``): a browser capture of ``source``
    that fetches one of them archives it for that source too."""

    rows = session.execute(select(Source.url, Source.id).where(
        Source.removed_at.is_(None), Source.id != source.id, Source.browser.is_(False)))
    return {url: sid for url, sid in rows}
