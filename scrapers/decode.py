"""Bytes -> text, once, by the standard precedence: a byte-order mark, the HTTP ``Content-Type`` charset,
the document's own ``<meta charset>`` / ``<?xml encoding?>``, then sniffing (strict UTF-8, else
Windows-1252 with a warning): the order of ``w3lib.encoding.html_to_unicode`` (the field's reference;
tests/test_decode_segment.py compares the two when w3lib is installed), without the dependency. Every quote and every offset in a ParseResult
refers to the text returned here (``ParseResult.text``).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

_CHARSET = re.compile(r"charset\s*=\s*[\"']?([\w.:-]+)", re.I)
_META = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([\w.:-]+)|<\?xml[^>]+encoding\s*=\s*[\"']([\w.:-]+)", re.I)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


@dataclass
class Decoded:
    text: str
    encoding: str
    how: str                      # bom | header | meta | sniffed | given (already text)
    warnings: list[str] = field(default_factory=list)


def _norm(enc: str | None) -> str | None:
    if not enc:
        return None
    try:
        return codecs.lookup(enc).name
    except LookupError:
        return None


def _sniff(body: bytes) -> tuple[str, list[str]]:
    try:
        body.decode("utf-8")
        return "utf-8", []
    except UnicodeDecodeError as exc:
        return "cp1252", [f"the document is not valid UTF-8 (byte {exc.start}) and names no charset; "
                          "read it as Windows-1252"]


def decode_body(body: bytes | str | None, content_type: str | None = None) -> Decoded:
    """Decode ``body`` once. Never raises; undecodable bytes become U+FFFD with a warning."""
    if body is None:
        return Decoded("", "utf-8", "given")
    if isinstance(body, str):
        return Decoded(body, "utf-8", "given")
    for bom, enc in _BOMS:
        if body.startswith(bom):
            return Decoded(body[len(bom):].decode(enc, "replace"), enc, "bom")
    header = _norm((_CHARSET.search(content_type or "") or [None, None])[1])
    if header:
        try:
            return Decoded(body.decode(header), header, "header")
        except UnicodeDecodeError:
            return Decoded(body.decode(header, "replace"), header, "header",
                           [f"the document is not valid {header} as its Content-Type says; "
                            "undecodable bytes were replaced"])
    m = _META.search(body[:4096])
    meta = _norm((m.group(1) or m.group(2)).decode("ascii", "replace")) if m else None
    if meta:
        if meta in ("utf-16-le", "utf-16-be", "utf-16"):   # a meta tag cannot say UTF-16 in ASCII bytes
            meta = "utf-8"
        return Decoded(body.decode(meta, "replace"), meta, "meta")
    enc, warnings = _sniff(body)
    return Decoded(body.decode(enc, "replace"), enc, "sniffed", warnings)
