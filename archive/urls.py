"""``check_url(url)``: the one test a URL passes before Caveat fetches it or stores it as a source.

It must be http or https, name a host that parses (an IPv6 literal in brackets, or a name IDNA can
encode: full-width digits and other look-alikes are refused, not silently folded), hold no whitespace
or control characters, and be at most 8,192 characters. Failing URLs raise ``InvalidURL`` (a
``ValueError``) saying why in one line.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from archive.surt import InvalidURL

MAX_URL = 8192
_BAD_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")


def check_url(url: str) -> str:
    text = (url or "").strip()
    shown = text[:120] + ("..." if len(text) > 120 else "")
    if len(text) > MAX_URL:
        raise InvalidURL(f"the URL is {len(text):,} characters long; at most {MAX_URL:,} are accepted")
    if _BAD_CHARS.search(text):
        raise InvalidURL(f"{shown!r} holds whitespace or control characters; percent-encode them (%20, %09)")
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise InvalidURL(f"{shown!r} is not a valid URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise InvalidURL(f"only http and https URLs can be captured: {shown!r} is not an http(s) URL")
    if not host:
        raise InvalidURL(f"{shown!r} names no host; give the full address, e.g. https://example.org/page")
    if re.fullmatch(r"[0-9a-fA-Fx.]+", host) and re.search(r"\d", host) and not re.search(r"[g-wyzG-WYZ]", host):
        try:
            canonical = str(ipaddress.IPv4Address(host))
        except ValueError:
            canonical = None
        if canonical != host and (re.fullmatch(r"[0-9x.]+", host.lower()) or "0x" in host.lower()):
            raise InvalidURL(f"{shown!r}: the numeric host {host!r} is ambiguous (octal, hex or a bare integer); "
                             "write the address as four decimal numbers, e.g. 127.0.0.1")
    if ":" not in host:  # a name (IPv6 literals were checked by urlsplit)
        try:
            encoded = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidURL(f"{shown!r}: the host name {host!r} cannot be encoded ({exc})") from None
        if not re.fullmatch(r"[A-Za-z0-9.-]+", encoded) or any(not label or len(label) > 63
                                                               for label in encoded.rstrip(".").split(".")):
            raise InvalidURL(f"{shown!r}: {host!r} is not a valid host name")
        if re.search(r"[^\x00-\x7f]", host) and any(ch.isdigit() and not ch.isascii() for ch in host):
            raise InvalidURL(f"{shown!r}: the host name {host!r} uses non-ASCII digits")
    return text
