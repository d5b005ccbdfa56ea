"""Wayback-shaped replay over the ``snapshots`` table: timestamp resolution, raw (``id_``) responses,
Memento headers, TimeGate and TimeMaps.

Rules (docs/replay.md): a 17-digit timestamp that names a capture of the URL is served as is; any
other timestamp (1-16 digits, or 17 that name no capture) is answered by a redirect to the nearest
capture's exact 17-digit URL, never by a 200 with a different capture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import BadRequest, FixityError, NotFound
from app.models import Snapshot
from app.replay.links import public_base
from app.replay.withdrawal import visible
from app.storage.snapshots import StoredResponse, load_record
from archive import memento
from archive.surt import surt
import json

PUBLIC = "public"   # Snapshot.access of a capture that may be shown (app.replay.withdrawal)

# Archived response headers are inert on our origin: only these pass through as they were archived
# (they describe the bytes, and act on nothing); every other header is renamed ``X-Archive-Orig-<name>``,
# so a header no list foresaw (Speculation-Rules, WWW-Authenticate, Report-To, NEL, Link, Refresh, ...)
# can never make a browser act on Caveat's origin.
PASSED = {"content-type", "content-encoding", "content-language", "last-modified", "etag"}
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# Archived documents run with no scripts, in an opaque origin, and may not fetch anything but our own
# pages: the sandbox has no allow-scripts and no allow-same-origin.
CSP_SANDBOX = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " \
              "font-src 'self' data:; media-src 'self' data:; form-action 'none'; frame-ancestors 'self'"


@dataclass
class Resolution:
    snapshot: Snapshot | None  # the capture the timestamp names exactly, if it does
    redirect_ts: str | None = None  # otherwise the 17-digit timestamp of the nearest capture


def url_from_path(raw: str, query: str = "") -> str:
    """The archived URL as it appears after ``/web/{ts}/``: query string re-attached, a scheme
    collapsed by proxies (``http:/x``) repaired, a missing scheme read as http."""
    url = raw
    for scheme in ("http:/", "https:/"):
        if url.startswith(scheme) and not url.startswith(scheme + "/"):
            url = scheme + "/" + url[len(scheme):]
    if "://" not in url:
        url = "http://" + url
    if query:
        url += "?" + query
    return url


def captures(session: Session, url: str, *, limit: int | None = None, newest_first: bool = True) -> list[Snapshot]:
    key = surt(url)
    order = Snapshot.timestamp.desc() if newest_first else Snapshot.timestamp.asc()
    q = select(Snapshot).where(Snapshot.surt == key, Snapshot.access == PUBLIC).order_by(order, Snapshot.id.desc())
    if limit:
        q = q.limit(limit)
    return list(session.scalars(q))


def timestamps(session: Session, url: str) -> list[str]:
    key = surt(url)
    return list(session.scalars(select(Snapshot.timestamp).where(Snapshot.surt == key, Snapshot.access == PUBLIC)
                                .order_by(Snapshot.timestamp)))


def _edge(session: Session, key: str, *, first: bool) -> str | None:
    col = Snapshot.timestamp
    return session.scalars(select(col).where(Snapshot.surt == key, Snapshot.access == PUBLIC)
                           .order_by(col.asc() if first else col.desc()).limit(1)).first()


def nearest_ts(session: Session, url: str, target: str) -> str | None:
    """The 17-digit timestamp of the capture of ``url`` closest to ``target`` (padded), or None."""
    key = surt(url)
    target = memento.pad_ts(target)
    col = Snapshot.timestamp
    shown = Snapshot.access == PUBLIC   # withdrawn and restricted captures are never a TimeGate's answer
    before = session.scalars(select(col).where(Snapshot.surt == key, shown, col <= target)
                             .order_by(col.desc()).limit(1)).first()
    after = session.scalars(select(col).where(Snapshot.surt == key, shown, col >= target)
                            .order_by(col.asc()).limit(1)).first()
    return memento.nearest(target, before, after)


def resolve(session: Session, url: str, ts: str) -> Resolution:
    """Apply the replay rules to ``/web/{ts}.../{url}``."""
    if not memento.is_wayback_ts(ts):
        raise BadRequest(f"timestamp {ts!r} is not 1 to 17 digits; use the form /web/20261201004913123/{url}")
    key = surt(url)
    if len(ts) == 17:
        rows = list(session.scalars(select(Snapshot).where(Snapshot.surt == key, Snapshot.timestamp == ts)
                                    .order_by(Snapshot.id)))
        if rows:
            exact = next((r for r in rows if r.url == url), rows[0])
            return Resolution(exact)
    found = nearest_ts(session, url, ts)
    if found is None:
        raise NotFound(f"{url} has not been archived. Capture it first: caveat capture '{url}'")
    return Resolution(None, found)


def latest(session: Session, url: str) -> str:
    ts = _edge(session, surt(url), first=False)
    if ts is None:
        raise NotFound(f"{url} has not been archived. Capture it first: caveat capture '{url}'")
    return ts


def memento_headers(settings: Settings, snap: Snapshot, modifier: str = "") -> dict[str, str]:
    """``Memento-Datetime`` and ``Link`` (original, timegate, timemap, this memento), as pywb sends them."""
    urls = memento.Urls(public_base(settings), snap.url)
    return {
        "Memento-Datetime": memento.http_date(snap.timestamp),
        "Link": memento.memento_link_header(urls, snap.timestamp, modifier=modifier),
    }


def fetch(settings: Settings, session: Session, snap: Snapshot, *, decode: bool = True) -> StoredResponse:
    """The stored response with fixity checked; FixityError (500) when the bytes do not verify.
    ``decode=False``: the body stays as stored (``id_`` serves the original bytes and never decodes)."""
    stored = load_record(settings, snap, session=session, decode=decode)
    if stored.fixity != "ok":
        raise FixityError(
            f"The archived record {snap.citation_id} ({snap.url} at {snap.timestamp}) failed its fixity check "
            f"and is not served: {stored.fixity_detail}. The bytes in {snap.warc_file} at offset {snap.offset} "
            "no longer match the digests recorded when they were archived; restore that WARC file from a backup "
            "(see docs/replay.md).",
            citation_id=snap.citation_id, fixity_detail=stored.fixity_detail)
    return stored


def _dechunk(data: bytes) -> bytes | None:
    out, pos = [], 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return None
        try:
            size = int(data[pos:end].split(b";")[0].strip() or b"x", 16)
        except ValueError:
            return None
        if size == 0:
            return b"".join(out)
        out.append(data[end + 2:end + 2 + size])
        pos = end + 2 + size + 2


def raw_parts(stored: StoredResponse, *, url: str = "", replay_url=None) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, header list and body for an ``id_`` response: the archived bytes, made inert on our origin.

    Only the headers in ``PASSED`` keep their names; every other one becomes ``X-Archive-Orig-<name>``
    (a name that is not an HTTP token is cleaned first). Statuses that would act are replaced, with the
    archived one in ``X-Archive-Orig-Status``: 401/407 (a credentials prompt for our origin) and 1xx or
    out-of-range codes (which the server cannot send) become a 200; a redirect becomes a 302 to the
    replay of its target on Caveat (``replay_url(target)``) when the target is an http(s) URL, else a
    200 page naming it. Never an off-site redirect."""
    body = stored.raw_body
    headers: list[tuple[str, str]] = []
    chunked = False
    location = None
    for k, v in stored.headers:
        low = k.lower()
        v = _CONTROL.sub(" ", str(v))  # a control character in a value would make the server drop the connection
        if low == "transfer-encoding" and "chunked" in v.lower():
            chunked = True
        if low == "location":
            location = v.strip()
        if low in PASSED:
            headers.append((k, v))
        else:
            name = k if _TOKEN.match(k or "") else re.sub(r"[^!#$%&'*+.^_`|~0-9A-Za-z-]", "_", k or "") or "unnamed"
            headers.append((f"X-Archive-Orig-{name}", v))
    if chunked:  # some tools store the chunked transfer coding in the payload
        body = _dechunk(body) or body
    archived = stored.status
    status = archived if archived and 200 <= archived <= 599 else 200
    note = None
    if status in (401, 407):
        status = 200
        note = (f"The archived response was HTTP {archived}, a request for credentials; it is shown as a page "
                "here so it cannot ask for credentials on this site.")
    elif archived is not None and not 200 <= archived <= 599:
        note = f"The archived response had status {archived}, which cannot be replayed; its bytes are shown."
    elif 300 <= status < 400 and location is not None:
        target = urljoin(url, location)
        if urlsplit(target).scheme in ("http", "https") and replay_url is not None:
            headers.append(("Location", replay_url(target)))
        else:
            status = 200
            note = f"The archived response was a redirect (HTTP {archived}) to {location!r}, which is not replayed."
    if note is not None:
        headers = [h for h in headers if h[0].lower() not in ("content-type", "content-encoding")]
        headers += [("Content-Type", "text/plain; charset=utf-8"), ("X-Archive-Orig-Status", str(archived))]
        body = (note + "\n").encode("utf-8")
    elif status != archived:
        headers.append(("X-Archive-Orig-Status", str(archived)))
    return status, headers, body


def is_html(mime: str | None) -> bool:
    m = (mime or "").split(";")[0].strip().lower()
    return m in ("text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml") or not m


# -- a separate origin for archived bytes (CAVEAT_REPLAY_ORIGIN) ----------------------------------

_RAW_PATH = re.compile(r"^/web/\d{1,17}id_/")


def replay_base(settings: Settings) -> str:
    """Where archived bytes are served from: ``CAVEAT_REPLAY_ORIGIN`` when set, else the app's origin."""
    if settings.replay_origin:
        return settings.replay_origin.rstrip("/")
    return public_base(settings)


def raw_url(settings: Settings, timestamp: str, url: str) -> str:
    return f"{replay_base(settings)}/web/{timestamp}id_/{url}"


def _host_of(origin: str) -> str:
    return urlsplit(origin).netloc.lower()


class ReplayOriginGuard:
    """ASGI middleware. With ``CAVEAT_REPLAY_ORIGIN`` set, a request whose Host is that origin's may
    only fetch archived bytes (``/web/{ts}id_/...``; anything else is a 404), and the app's own origin
    refuses archived bytes (403 naming where they are). Without it, nothing changes."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        app = scope.get("app")
        settings = getattr(getattr(app, "state", None), "settings", None)
        origin = getattr(settings, "replay_origin", None)
        if not origin:
            return await self.app(scope, receive, send)
        host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "").lower()
        path = scope.get("path", "")
        raw = bool(_RAW_PATH.match(path))
        if host == _host_of(origin) and not raw:
            return await _refuse(send, 404, f"{origin} serves only archived bytes (/web/<timestamp>id_/<url>); "
                                            "Caveat's pages are on its own origin.")
        if host != _host_of(origin) and raw:
            where = origin.rstrip("/") + path + (("?" + scope["query_string"].decode("latin-1"))
                                                  if scope.get("query_string") else "")
            return await _refuse(send, 403, "Archived bytes are not served from this origin (CAVEAT_REPLAY_ORIGIN "
                                            f"is set, so that archived pages never run on Caveat's origin): open {where}")
        return await self.app(scope, receive, send)


async def _refuse(send, status: int, message: str) -> None:
    body = json.dumps({"ok": False, "status": status, "error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


# -- the list of captures of one URL: /web/*/{url} -------------------------------------------------

def capture_list(session: Session, settings: Settings, url: str) -> dict:
    """Every capture of ``url`` (SURT match), newest first, grouped by UTC day: what ``/web/*/{url}``
    shows and its JSON twin returns. Withdrawn and restricted captures are left out."""
    rows = [s for s in captures(session, url) if visible(s)]
    if not rows:
        raise NotFound(f"{url} has not been archived (or every capture of it was withdrawn). "
                       f"Capture it first: caveat capture '{url}'")
    base = public_base(settings)
    days: list[dict] = []
    for s in rows:
        day = f"{s.timestamp[0:4]}-{s.timestamp[4:6]}-{s.timestamp[6:8]}"
        if not days or days[-1]["date"] != day:
            days.append({"date": day, "captures": []})
        days[-1]["captures"].append({
            "id": s.citation_id, "timestamp": s.timestamp, "memento_datetime": memento.http_date(s.timestamp),
            "time": f"{s.timestamp[8:10]}:{s.timestamp[10:12]}:{s.timestamp[12:14]}.{s.timestamp[14:17]}",
            "url": s.url, "status": s.status, "mime": s.mime, "sha256": s.sha256, "record_type": s.record_type,
            "citation_url": f"{base}/c/{s.citation_id}", "replay_url": f"{base}/web/{s.timestamp}/{s.url}",
            "raw_url": raw_url(settings, s.timestamp, s.url),
        })
    urls = memento.Urls(base, url)
    return {"url": url, "count": len(rows), "first": rows[-1].timestamp, "last": rows[0].timestamp,
            "days": days, "timemap_url": urls.timemap_link, "timemap_json_url": urls.timemap_json,
            "timegate_url": urls.timegate, "json_url": f"{base}/web/*.json/{url}"}
