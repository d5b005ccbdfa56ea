"""Response headers that keep Caveat's own pages safe to open while archived pages are hostile.

Every response gets ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``. App
pages also get a strict Content-Security-Policy (scripts and everything else from Caveat's origin
only, no inline script, no plugins, forms only to Caveat) that forbids being framed
(``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``). Responses that set their own policy keep
it: the raw archived bytes (``/web/{ts}id_/...``, sandboxed, framed only by Caveat's own replay
wrapper, so ``X-Frame-Options: SAMEORIGIN``) and the replay wrapper. The interactive API docs
(``/api/docs``) are left without a policy: they are a third-party page that runs inline script.
"""

from __future__ import annotations
from urllib.parse import parse_qsl
import json

APP_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
           "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
           "frame-src 'self'; frame-ancestors 'none'")
NO_POLICY = ("/api/docs", "/api/redoc", "/api/docs/oauth2-redirect")


class SecurityHeaders:
    """Pure ASGI middleware (no per-request task or body buffering)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                extra = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin")]
                if b"content-security-policy" not in names and not path.startswith(NO_POLICY):
                    extra.append((b"content-security-policy", APP_CSP.encode()))
                if b"x-frame-options" not in names:
                    framed = path.startswith("/web/") and "id_/" in path.split("/", 3)[2] + "/"
                    extra.append((b"x-frame-options", b"SAMEORIGIN" if framed else b"DENY"))
                message["headers"] = headers + [(k, v) for k, v in extra if k not in names]
            await send(message)

        return await self.app(scope, receive, send_with_headers)


INT_LIMIT = 2**63 - 1
_FREE_PATHS = ("/web/", "/timegate/", "/timemap/", "/c/", "/static/")


class BoundedIntegers:
    """A query value or id path segment that is an integer beyond what a database column holds is a
    400 in the one error shape, before any route sees it (the same answer on SQLite and PostgreSQL)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and self._out_of_range(scope):

            body = json.dumps({"ok": False, "status": 400, "error": "A number in the request is out of range (ids, "
                               f"offsets, limits and pages are at most {INT_LIMIT:,})."}).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    @staticmethod
    def _out_of_range(scope) -> bool:
        query = scope.get("query_string", b"").decode("latin-1")
        for _, value in parse_qsl(query, keep_blank_values=True):
            v = value.strip().lstrip("+-")
            if v.isdigit() and len(v) > 18 and int(v) > INT_LIMIT:
                return True
        path = scope.get("path", "")
        if not path.startswith(_FREE_PATHS):
            for seg in path.split("/"):
                if seg.isdigit() and len(seg) > 18 and int(seg) > INT_LIMIT:
                    return True
        return False
