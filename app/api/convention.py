"""The one convention every JSON route follows (docs/api.md, locked by tests/test_api_convention.py).

- Every answer is an object with ``ok``; a list is ``{"ok": true, "count", "total", "limit", "offset",
  "next", "<items>": [...]}`` (``page``); an error is ``{"ok": false, "error", "status"}``.
- Timestamps (fields ending in ``_at``) are ISO 8601 in UTC with their offset (``utc_fields``).
- Public reads (GET/HEAD of the API and the ``.json`` twins) carry CORS headers, a strong ``ETag`` and
  ``Cache-Control``, and answer ``If-None-Match`` with 304 (``PublicReads``, an ASGI middleware);
  ``OPTIONS`` answers 204 with the CORS preflight headers: other origins may read (GET, HEAD), never write.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING
from urllib.parse import urlencode

if TYPE_CHECKING:
    from fastapi import Request

_NAIVE = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")
CACHE_CONTROL = b"public, max-age=0, must-revalidate"
READ_PREFIXES = ("/api/", "/timemap/")
READ_SUFFIX = ".json"


def utc_fields(value):
    """Every ``*_at`` timestamp in ``value`` (recursively) in UTC with its offset: a datetime is written
    out, a string without an offset (SQLite keeps naive UTC) gets ``+00:00``."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and k.endswith("_at"):
                if isinstance(v, datetime):
                    v = (v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)).isoformat()
                elif isinstance(v, str) and _NAIVE.match(v):
                    v = v.replace(" ", "T") + "+00:00"
                out[k] = v
            else:
                out[k] = utc_fields(v)
        return out
    if isinstance(value, list):
        return [utc_fields(v) for v in value]
    return value


def ok(body: dict) -> dict:
    """A single-object answer: ``ok`` first, timestamps in UTC."""
    return utc_fields({"ok": True, **{k: v for k, v in body.items() if k != "ok"}})


def next_url(request: Request, offset: int, limit: int, count: int, total: int) -> str | None:
    """The URL of the next page (same path and filters, ``offset`` moved on), or None on the last page."""
    if count == 0 or offset + count >= total:
        return None
    params = [(k, v) for k, v in request.query_params.multi_items() if k != "offset"]
    params.append(("offset", str(offset + count)))
    return f"{request.url.path}?{urlencode(params)}"


def page(request: Request, name: str, items: list, *, total: int, limit: int, offset: int, **extra) -> dict:
    """A list answer in the one envelope."""
    body = {"ok": True, "count": len(items), "total": total, "limit": limit, "offset": offset,
            "next": next_url(request, offset, limit, len(items), total), **extra, name: items}
    return utc_fields(body)


def _is_public_read(path: str) -> bool:
    return path.startswith(READ_PREFIXES) or path.endswith(READ_SUFFIX)


def etag_of(body: bytes) -> bytes:
    return b'"' + hashlib.blake2b(body, digest_size=16).hexdigest().encode() + b'"'


def _matches(if_none_match: bytes, tag: bytes) -> bool:
    if if_none_match.strip() == b"*":
        return True
    for part in if_none_match.split(b","):
        part = part.strip()
        if part.startswith(b"W/"):
            part = part[2:]
        if part == tag:
            return True
    return False


CORS = [(b"access-control-allow-origin", b"*"), (b"access-control-allow-methods", b"GET, HEAD, OPTIONS"),
        (b"access-control-allow-headers", b"If-None-Match, Accept"),
        (b"access-control-expose-headers", b"ETag, Link, Memento-Datetime"),
        (b"access-control-max-age", b"600")]


class PublicReads:
    """ASGI middleware for the machine endpoints' read answers.

    GET and HEAD of a public read path: CORS headers; a 200 answer gets ``ETag`` (a hash of its body)
    and ``Cache-Control`` and, when the request's ``If-None-Match`` names that tag, is sent as 304 with
    no body. HEAD is answered as the GET would be, without the body. OPTIONS on any machine path: 204
    with ``Allow`` and the CORS preflight headers (other origins may read, never write)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not _is_public_read(scope["path"]):
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        if method == "OPTIONS":
            await send({"type": "http.response.start", "status": 204,
                        "headers": CORS + [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        if method not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        inm = next((v for k, v in scope.get("headers", []) if k == b"if-none-match"), None)
        inner = dict(scope, method="GET") if method == "HEAD" else scope
        start: dict | None = None
        chunks: list[bytes] = []

        async def capture(message):
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                await self._finish(send, start, b"".join(chunks), inm, head=method == "HEAD")

        await self.app(inner, receive, capture)

    @staticmethod
    async def _finish(send, start: dict, body: bytes, inm: bytes | None, *, head: bool) -> None:
        status = start["status"]
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in
                   (b"access-control-allow-origin", b"etag", b"cache-control")]
        headers += CORS
        if status == 200:
            tag = etag_of(body)
            headers += [(b"etag", tag), (b"cache-control", CACHE_CONTROL)]
            if inm is not None and _matches(inm, tag):
                headers = [(k, v) for k, v in headers if k.lower() not in (b"content-length", b"content-type")]
                await send({"type": "http.response.start", "status": 304, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
        else:
            headers.append((b"cache-control", b"no-store"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else body})
