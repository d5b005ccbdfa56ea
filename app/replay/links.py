"""Links to citations: the public base URL (``CAVEAT_BASE_URL``, else the origin of the request being
answered, recorded by :class:`RequestOrigin`), host-free references (``/c/ID?q=...``) and their absolute
URLs. The lowest part of the replay domain: replay, citations and the audit build their links here."""

from __future__ import annotations

import contextvars
import re
from functools import lru_cache

from app.config import Settings
from archive.citeid import normalize_citation_id

_REQUEST_ORIGIN: contextvars.ContextVar[str | None] = contextvars.ContextVar("caveat_request_origin", default=None)


class RequestOrigin:
    """ASGI middleware: remembers the public base of the request being answered: ``CAVEAT_BASE_URL``
    when set, else the request's own origin (scheme://host[:port]); code that has no settings at hand
    (``absolute`` on stored flags) builds URLs from it."""

    def __init__(self, app, settings: Settings | None = None):
        self.app = app
        self.settings = settings

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), None)
        if not host and scope.get("server"):
            h, port = scope["server"][0], scope["server"][1]
            host = f"{h}:{port}" if port else h
        origin = f"{scope.get('scheme', 'http')}://{host}" if host and _sane_host(host) else None
        app = scope.get("app")
        settings = getattr(getattr(app, "state", None), "settings", None) or self.settings
        fixed = settings.base_url.rstrip("/") if settings is not None and "base_url" in settings.model_fields_set \
            else None
        token = _REQUEST_ORIGIN.set(fixed or origin)
        try:
            return await self.app(scope, receive, send)
        finally:
            _REQUEST_ORIGIN.reset(token)


def _sane_host(host: str) -> bool:
    return all(c.isalnum() or c in ".-:[]_" for c in host) and len(host) < 256


def public_base(settings: Settings) -> str:
    """The origin URLs are built from: ``CAVEAT_BASE_URL`` when set, else the request's own origin,
    else (outside a request: the CLI) the default base URL."""
    if "base_url" in settings.model_fields_set:
        return settings.base_url.rstrip("/")
    return (_REQUEST_ORIGIN.get() or settings.base_url).rstrip("/")


def known_base(settings: Settings | None) -> str | None:
    """The public base URL links may be minted with: given (``CAVEAT_BASE_URL``) or recorded in the data
    folder, else the origin of the request being answered; None outside a request with neither (the CLI
    then prints ids and host-free references, never a guessed ``http://127.0.0.1:8000``)."""
    if settings is not None and "base_url" in settings.model_fields_set:
        return settings.base_url.rstrip("/")
    base = _REQUEST_ORIGIN.get()
    return base.rstrip("/") if base else None


def request_base() -> str | None:
    """The public base of the request being answered, if any (see :class:`RequestOrigin`)."""
    return _REQUEST_ORIGIN.get()


_STORED_HOST = re.compile(r"^https?://[^/?#]+(?=/(?:c|web)/)")
_ENV_SETTINGS: list[Settings] = []


def env_settings() -> Settings:
    """Settings from the environment, built once: for code that serves URLs without settings at hand."""
    if not _ENV_SETTINGS:
        _ENV_SETTINGS.append(Settings())
    return _ENV_SETTINGS[0]


def absolute(settings: Settings | None, ref: str | None) -> str | None:
    """A stored host-free reference (``/c/...``) as a URL. A citation URL stored with a host before
    issue 13 (``http://127.0.0.1:8000/c/...``) is re-based too: a stored host is never trusted. Inside a
    request the request's public base wins over settings that were not given a base URL."""
    if not ref:
        return ref
    if not ref.startswith("/"):
        m = _STORED_HOST.match(ref)
        if m is None:
            return ref
        ref = ref[m.end():]
    base = known_base(settings if settings is not None else env_settings())
    return base + ref if base else ref     # no base known: the host-free reference, never a guessed host


MAX_LIST = 500


def citation_path(citation_id: str) -> str:
    return f"/c/{citation_id}"


def quote_ref(citation_id: str, quote: str | None = None, prefix: str | None = None, suffix: str | None = None,
              pos: int | None = None) -> str:
    """Host-free reference to a quote (``/c/ABCD-EFGH?q=...&prefix=...&suffix=...&pos=...``), or to the
    snapshot without ``quote``: the form stored in rows."""
    if not quote:
        return citation_path(_canonical_id(citation_id))
    return _quote_ref(citation_id, quote, prefix or None, suffix or None, None if pos is None else int(pos))


@lru_cache(maxsize=4096)
def _canonical_id(citation_id: str) -> str:
    return normalize_citation_id(citation_id) or citation_id


@lru_cache(maxsize=65536)
def _quote_ref(citation_id: str, quote: str, prefix: str | None, suffix: str | None, pos: int | None) -> str:
    # the audit cites the same quote from several flags and from the recipe's answer: built once
    out = f"{citation_path(_canonical_id(citation_id))}?q={_pct(quote)}"
    if prefix:
        out += f"&prefix={_pct(prefix)}"
    if suffix:
        out += f"&suffix={_pct(suffix)}"
    if pos is not None:
        out += f"&pos={pos}"
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9_.~-]+")


_PCT_RUNS: dict[str, str] = {}


def _pct_run(m: re.Match) -> str:
    run = m.group()
    out = _PCT_RUNS.get(run)
    if out is None:
        out = "".join(f"%{b:02X}" for b in run.encode("utf-8", "surrogatepass"))
        if len(_PCT_RUNS) < 4096 and len(run) <= 8:   # the short runs (", ", " / ") recur
            _PCT_RUNS[run] = out
    return out


def _pct(text: str) -> str:
    """``urllib.parse.quote(text, safe="")``, the same output: only runs of reserved characters are
    encoded, in one regex pass (the standard function walks every byte in Python)."""
    return _UNSAFE.sub(_pct_run, text)


def selector_ref(citation_id: str, quote: str | None, selector: dict | None) -> str:
    """Host-free reference pinning one occurrence with a parser's selector (``exact``, ``prefix``,
    ``suffix``, ``start``); without a selector, the quote alone."""
    if selector and selector.get("exact") and (not quote or selector["exact"] == quote):
        start = selector.get("start")
        return quote_ref(citation_id, selector["exact"], selector.get("prefix") or None,
                         selector.get("suffix") or None, start if isinstance(start, int) else None)
    return quote_ref(citation_id, quote)


def quote_url(settings: Settings, citation_id: str, quote: str, prefix: str | None = None,
              suffix: str | None = None, pos: int | None = None) -> str:
    """Absolute URL citing ``quote`` inside snapshot ``citation_id`` (``/c/ABCD-EFGH?q=...``)."""
    return public_base(settings) + quote_ref(citation_id, quote, prefix, suffix, pos)


def selector_url(settings: Settings, citation_id: str, quote: str | None, selector: dict | None) -> str:
    """Absolute URL of :func:`selector_ref`."""
    return public_base(settings) + selector_ref(citation_id, quote, selector)
