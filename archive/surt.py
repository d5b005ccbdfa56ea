"""SURT keys ("Sort-friendly URI Reordering Transform") as pywb and `cdxj-indexer` write them.

``http://www.Example.com:80/A/b?z=1&a=2#top`` -> ``com,example)/a/b?a=2&z=1``: scheme, ``www``
prefix, default port, fragment and empty query dropped; host reversed; everything lowercased;
query arguments sorted; dot segments resolved; percent-escapes normalised. Session-id stripping done
by the reference canonicaliser is not reproduced (leaderboard URLs do not carry session ids).
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote_to_bytes, urlsplit

_WWW = re.compile(r"^www\d*\.")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _escape(raw: bytes) -> str:
    """Percent-encode only what must be: controls, space, non-ASCII, '#' and '%'."""
    out = []
    for b in raw:
        if b <= 0x20 or b >= 0x7F or b in (0x23, 0x25):
            out.append(f"%{b:02X}")
        else:
            out.append(chr(b))
    return "".join(out)


def _normalise(text: str) -> str:
    raw = text.encode("utf-8", "surrogateescape")
    for _ in range(10):  # unescape repeatedly, like the reference canonicaliser
        decoded = unquote_to_bytes(raw)
        if decoded == raw:
            break
        raw = decoded
    return _escape(raw)


def _host_key(host: str) -> str:
    host = host.strip().strip(".").lower()
    host = _WWW.sub("", host)
    if ":" in host:  # IPv6 literal: kept as is
        return host
    return ",".join(reversed(host.split(".")))


class InvalidURL(ValueError):
    """A URL that does not parse (``http://[::1``, control characters, ...); says which and why."""


def surt(url: str) -> str:
    """The SURT urlkey of an http(s) URL; ``InvalidURL`` when it does not parse. A ``urn:`` (a browser
    capture's ``urn:dom:<url>``, ``urn:fullPage:<url>``, ``urn:pageinfo:<url>``) is its own key."""
    text = url.strip()
    if text[:4].lower() == "urn:" and not any(ord(c) < 32 or ord(c) == 127 for c in text):
        return text
    if "://" not in text:
        text = "http://" + text
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InvalidURL(f"{url[:200]!r} is not a URL: it holds control characters (tab, CR, LF, ...)")
    try:
        parts = urlsplit(text)
        parts.hostname  # noqa: B018 - raises on a malformed IPv6 literal
    except ValueError as exc:
        raise InvalidURL(f"{url[:200]!r} is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    key = _host_key(host)
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        key += f":{port}"
    path = _normalise(parts.path or "/")
    trailing = path.endswith("/")
    path = posixpath.normpath(path) if path not in ("", "/") else "/"
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    if trailing and path != "/":
        path += "/"
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    key += ")" + path.lower()
    query = parts.query
    if query:
        key += "?" + "&".join(sorted(_normalise(a).lower() for a in query.split("&")))
    return key
