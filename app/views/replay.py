"""Wayback-shaped replay and Memento: ``/web/{ts}/{url}``, ``/web/{ts}id_/{url}``, ``/timegate/{url}``,
``/timemap/link/{url}``, ``/timemap/json/{url}``. Thin: every decision is in ``app.replay.wayback``."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from app.errors import BadRequest, NotFound
from app.deps import get_session
from app.replay import citations
from app.replay import wayback as replay
from app.replay import withdrawal
from app.replay.citations import public_base
from archive import memento
from app.capture.browser import rendered_views

router = APIRouter()
_SPEC = re.compile(r"^(\d{1,17})(id_)?$")
# The wrapper page is ours: no scripts at all, frames only from our origin (the sandboxed memento).
WRAPPER_CSP = ("default-src 'self'; script-src 'none'; frame-src 'self'{replay}; object-src 'none'; base-uri 'none'; "
               "frame-ancestors 'none'")


def wrapper_csp(settings) -> str:
    return WRAPPER_CSP.format(replay=f" {settings.replay_origin.rstrip('/')}" if settings.replay_origin else "")


def _target(request: Request, url: str) -> str:
    return replay.url_from_path(url, request.url.query)


def _redirect(location: str, headers: dict | None = None) -> RedirectResponse:
    resp = RedirectResponse(location, status_code=302)
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


@router.api_route("/web/{spec}/{url:path}", methods=["GET", "HEAD"], include_in_schema=False)
def web(spec: str, url: str, request: Request, session: Session = Depends(get_session)):
    if spec in ("*", "*.json"):
        return _capture_list(request, session, url, as_json=spec == "*.json")
    m = _SPEC.match(spec)
    if not m:
        raise BadRequest(f"{spec!r} is not a replay timestamp: use 1 to 17 digits (yyyyMMddhhmmssfff), "
                         "optionally followed by id_ for the original bytes, e.g. /web/2026id_/https://example.org/")
    ts, modifier = m.group(1), m.group(2) or ""
    target = _target(request, url)
    settings = request.app.state.settings
    res = replay.resolve(session, target, ts)
    base = public_base(settings)
    raw_base = replay.replay_base(settings)
    if res.snapshot is None:
        return _redirect(f"{raw_base if modifier else base}/web/{res.redirect_ts}{modifier}/{target}")
    snap = res.snapshot
    by = withdrawal.withholder(session, snap)   # withdrawn: 410 with its tombstone; restricted: 403 (a revisit: its original's)
    if by is not None:
        data = citations.tombstone(session, settings, snap, by)
        if modifier == "id_":
            return JSONResponse(data, status_code=data["status"])
        return request.app.state.templates.TemplateResponse(
            request, "tombstone.html", {"c": data, "user": None, "json_href": f"/c/{snap.citation_id}.json"},
            status_code=data["status"], headers={"Content-Security-Policy": wrapper_csp(settings)})
    mheaders = replay.memento_headers(settings, snap, modifier)
    if modifier == "id_":
        stored = replay.fetch(settings, session, snap, decode=False)
        status, headers, body = replay.raw_parts(
            stored, url=snap.url, replay_url=lambda target: f"{raw_base}/web/{snap.timestamp}id_/{target}")
        resp = Response(content=body, status_code=status)
        resp.raw_headers = [(k.lower().encode("latin-1"), v.encode("latin-1", "replace")) for k, v in headers]
        resp.raw_headers.append((b"content-length", str(len(body)).encode()))
        for k, v in mheaders.items():
            resp.raw_headers.append((k.lower().encode(), v.encode("latin-1", "replace")))
        csp = replay.CSP_SANDBOX
        if settings.replay_origin:  # framed by the app's origin, from the replay origin
            csp = csp.replace("frame-ancestors 'self'", f"frame-ancestors {base}")
        resp.raw_headers += [(b"content-security-policy", csp.encode()),
                             (b"x-content-type-options", b"nosniff"),
                             (b"cache-control", b"public, max-age=31536000, immutable")]
        return resp
    stored = replay.fetch(settings, session, snap, decode=False)  # fixity on every read: a damaged record gets a 500
    templates = request.app.state.templates
    resp = templates.TemplateResponse(request, "replay_frame.html", {
        "snap": snap, "http_date": mheaders["Memento-Datetime"], "fixity": stored.fixity,
        "frame_src": replay.raw_url(settings, snap.timestamp, snap.url) if settings.replay_origin
        else f"/web/{snap.timestamp}id_/{snap.url}",
        "citation_url": f"{base}/c/{snap.citation_id}",
        "browser": _rendered(session, snap),
    })
    resp.headers.update(mheaders)
    resp.headers["Content-Security-Policy"] = wrapper_csp(settings)
    return resp


def _rendered(session: Session, snap) -> dict | None:
    """The rendered DOM and screenshot of a browser capture of this page (issue 16), or None."""
    return rendered_views(session, snap)


def _capture_list(request: Request, session: Session, url: str, *, as_json: bool):
    target = _target(request, url)
    data = replay.capture_list(session, request.app.state.settings, target)
    if as_json:
        return JSONResponse(data)
    return request.app.state.templates.TemplateResponse(
        request, "captures.html", {"c": data, "json_href": f"/web/*.json/{target}"})


@router.api_route("/timegate/{url:path}", methods=["GET", "HEAD"], include_in_schema=False)
def timegate(url: str, request: Request, session: Session = Depends(get_session)):
    target = _target(request, url)
    settings = request.app.state.settings
    accept = request.headers.get("accept-datetime")
    if accept:
        try:
            wanted = memento.parse_http_date(accept)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        ts = replay.nearest_ts(session, target, wanted)
        if ts is None:
            raise NotFound(f"{target} has not been archived. Capture it first: caveat capture '{target}'")
    else:
        ts = replay.latest(session, target)
    urls = memento.Urls(public_base(settings), target)
    return _redirect(urls.memento(ts), {"Vary": "accept-datetime", "Link": memento.timegate_link_header(urls)})


def _timemap(request: Request, session: Session, url: str, kind: str) -> Response:
    target = _target(request, url)
    stamps = replay.timestamps(session, target)
    if not stamps:
        raise NotFound(f"{target} has not been archived, so it has no TimeMap. Capture it first: "
                       f"caveat capture '{target}'")
    urls = memento.Urls(public_base(request.app.state.settings), target)
    if kind == "link":
        return Response(memento.timemap_link_format(urls, stamps), media_type="application/link-format")
    return Response(memento.timemap_json(urls, stamps), media_type="application/json")


@router.get("/timemap/link/{url:path}", include_in_schema=False)
def timemap_link(url: str, request: Request, session: Session = Depends(get_session)):
    return _timemap(request, session, url, "link")


@router.get("/timemap/json/{url:path}", include_in_schema=False)
def timemap_json(url: str, request: Request, session: Session = Depends(get_session)):
    return _timemap(request, session, url, "json")
